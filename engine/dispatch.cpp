#include "engine/dispatch.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <utility>

#include "engine/cpu_allocator.h"
#include "engine/device_choice.h"
#include "engine/error.h"

namespace hkt::dispatch {
namespace {

struct Entry {
  AnyKernel fn;
  std::type_index signature;
};

// Function-local statics: registration runs from static initialisers in other
// translation units, whose order is unspecified.
std::map<std::pair<std::string, DeviceType>, Entry>& kernel_table() {
  static std::map<std::pair<std::string, DeviceType>, Entry> table;
  return table;
}

std::map<DeviceType, Allocator>& allocator_table() {
  static std::map<DeviceType, Allocator> table;
  return table;
}

const char* device_type_name(DeviceType type) { return type == DeviceType::CPU ? "cpu" : "cuda"; }

// engine/cpu_allocator.h: 64-byte aligned blocks, cached for reuse.
void* cpu_allocate(size_t nbytes, int) { return cpu_allocator::allocate(nbytes); }
void cpu_deallocate(void* data, int) { cpu_allocator::deallocate(data); }
void cpu_copy(void* to, const void* from, size_t nbytes, int) {
  if (nbytes > 0) std::memcpy(to, from, nbytes);
}

const bool cpu_allocator_registered = [] {
  register_allocator(DeviceType::CPU, {cpu_allocate, cpu_deallocate, cpu_copy, cpu_copy, cpu_copy, [] { return 1; }});
  return true;
}();

}  // namespace

void register_kernel(const std::string& op, DeviceType device, AnyKernel fn, std::type_index signature) {
  kernel_table().insert_or_assign({op, device}, Entry{fn, signature});
}

bool has_kernel(const std::string& op, DeviceType device) { return kernel_table().count({op, device}) > 0; }

KernelOverride::KernelOverride(const std::string& op, DeviceType device, AnyKernel fn, std::type_index signature)
    : op_(op), device_(device) {
  auto it = kernel_table().find({op, device});
  if (it != kernel_table().end()) {
    previous_ = it->second.fn;
    previous_signature_ = it->second.signature;
  }
  register_kernel(op, device, fn, signature);
}

KernelOverride::~KernelOverride() {
  if (previous_ != nullptr)
    register_kernel(op_, device_, previous_, previous_signature_);
  else
    kernel_table().erase({op_, device_});
}

std::vector<RegisteredKernel> registered_kernels() {
  std::vector<RegisteredKernel> out;
  for (const auto& [key, _] : kernel_table()) out.push_back({key.first, key.second});
  return out;
}

AnyKernel find_kernel(const std::string& op, Device device, std::type_index signature) {
  auto it = kernel_table().find({op, device.type});
  if (it == kernel_table().end()) fail(op, ": no kernel for device ", device);
  if (it->second.signature != signature)
    fail(op, ": kernel for ", device_type_name(device.type), " was registered with a different signature");
  return it->second.fn;
}

void register_allocator(DeviceType device, Allocator allocator) { allocator_table()[device] = allocator; }

const Allocator& allocator(Device device) {
  (void)cpu_allocator_registered;
  auto it = allocator_table().find(device.type);
  if (it == allocator_table().end())
    fail("device ", device, " is not available: this build has no ", device_type_name(device.type),
         " backend (configure with -DHKT_CUDA=ON on a machine with the CUDA toolkit)");
  return it->second;
}

int device_count(DeviceType device) {
  (void)cpu_allocator_registered;
  auto it = allocator_table().find(device);
  return it == allocator_table().end() ? 0 : it->second.device_count();
}

Device parse_device(const std::string& text) {
  if (text == "cpu") return Device::cpu();
  if (text == "cuda") return Device::cuda(0);
  const std::string prefix = "cuda:";
  const std::string digits = text.size() > prefix.size() ? text.substr(prefix.size()) : "";
  check(text.compare(0, prefix.size(), prefix) == 0 && !digits.empty() && digits.size() <= 4 &&
            digits.find_first_not_of("0123456789") == std::string::npos,
        "device: expected cpu, cuda or cuda:N, got '", text, "'");
  return Device::cuda(std::stoi(digits));
}

void require_device(Device device) {
  (void)allocator(device);  // throws for a backend this build does not have
  const int count = device_count(device.type);
  check(count > 0, device, ": no CUDA device is present on this machine (the build has the CUDA backend, but the",
        " driver finds no GPU)");
  check(device.index >= 0 && device.index < count, device, ": no such device (", count, " present)");
}

}  // namespace hkt::dispatch
