#pragma once
// The one place that knows devices: op × device → kernel, device → allocator.
//
// Each ops/<family>.cpp registers its CPU kernels with HKT_REGISTER_KERNEL;
// cuda/<family>.cu registers the CUDA ones under the same op names, declared
// once beside the kernel signatures (ops/<family>.h, namespace kernels). An
// op looks its kernel up by name and by the device of its inputs:
//
//   auto add = dispatch::kernel<BinaryKernel>(kernels::add, a.device());
//
// A lookup checks the kernel's signature, so a mismatch is an Error, not UB.
#include <cstddef>
#include <chrono>
#include <string>
#include <typeindex>
#include <typeinfo>
#include <vector>

#include "engine/device.h"
#include "engine/profiler.h"

namespace hkt::dispatch {

using AnyKernel = void (*)();

void register_kernel(const std::string& op, DeviceType device, AnyKernel fn, std::type_index signature);
AnyKernel find_kernel(const std::string& op, Device device, std::type_index signature);
bool has_kernel(const std::string& op, DeviceType device);

// Every registered (op, device type) pair, sorted by op, CPU before CUDA
// (tests/test_kernel_coverage.cpp holds them against the tests).
struct RegisteredKernel {
  std::string op;
  DeviceType device;
};
std::vector<RegisteredKernel> registered_kernels();

// A looked-up kernel: call it like the function, or convert it to Fn*. While
// the profiler is on (engine/profiler.h) the call's wall time goes to op.
template <class Fn>
class KernelCall;

template <class R, class... Args>
class KernelCall<R(Args...)> {
 public:
  KernelCall(R (*fn)(Args...), const std::string& op) : fn_(fn) {
    if (profiler::enabled()) op_ = op;
  }
  using Pointer = R (*)(Args...);
  // The kernel's own parameter types (not a template): braced arguments work.
  R operator()(Args... args) const {
    if (op_.empty()) return fn_(std::forward<Args>(args)...);
    const auto start = std::chrono::steady_clock::now();
    struct Record {  // on every way out, exceptions included
      const std::string& op;
      std::chrono::steady_clock::time_point start;
      ~Record() {
        profiler::add(op, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
      }
    } record{op_, start};
    return fn_(std::forward<Args>(args)...);
  }
  operator Pointer() const { return fn_; }

 private:
  R (*fn_)(Args...);
  std::string op_;  // empty unless profiling
};

template <class Fn>
KernelCall<Fn> kernel(const std::string& op, Device device) {
  return KernelCall<Fn>(reinterpret_cast<Fn*>(find_kernel(op, device, typeid(Fn))), op);
}

// Memory of one device type: allocate, free, copy bytes to and from the host.
struct Allocator {
  void* (*allocate)(size_t nbytes, int device_index);
  void (*deallocate)(void* data, int device_index);
  void (*copy_to_host)(void* host, const void* data, size_t nbytes, int device_index);
  void (*copy_from_host)(void* data, const void* host, size_t nbytes, int device_index);
  void (*copy_on_device)(void* to, const void* from, size_t nbytes, int device_index);
  int (*device_count)();
};

void register_allocator(DeviceType device, Allocator allocator);
const Allocator& allocator(Device device);
// How many devices of this type can be used now: 0 when the backend is not
// built in or (for CUDA) no device is present.
int device_count(DeviceType device);

// Replaces the kernel of (op, device) while it lives and puts the old one
// back (or none): the way a test swaps a kernel (tools/inspect/test_faults.h).
class KernelOverride {
 public:
  template <class Fn>
  KernelOverride(const std::string& op, DeviceType device, Fn* fn)
      : KernelOverride(op, device, reinterpret_cast<AnyKernel>(fn), typeid(Fn)) {}
  ~KernelOverride();
  KernelOverride(const KernelOverride&) = delete;
  KernelOverride& operator=(const KernelOverride&) = delete;

 private:
  KernelOverride(const std::string& op, DeviceType device, AnyKernel fn, std::type_index signature);
  std::string op_;
  DeviceType device_;
  AnyKernel previous_ = nullptr;
  std::type_index previous_signature_ = typeid(void);
};

struct KernelRegistrar {
  template <class Fn>
  KernelRegistrar(const char* op, DeviceType device, Fn* fn) {
    register_kernel(op, device, reinterpret_cast<AnyKernel>(fn), typeid(Fn));
  }
};

}  // namespace hkt::dispatch

#define HKT_CONCAT_INNER(a, b) a##b
#define HKT_CONCAT(a, b) HKT_CONCAT_INNER(a, b)
// Registers a kernel at load time; fn's type is the signature callers must ask for.
#define HKT_REGISTER_KERNEL(op, device, fn) \
  static const ::hkt::dispatch::KernelRegistrar HKT_CONCAT(hkt_kernel_registrar_, __COUNTER__)(op, device, fn)
