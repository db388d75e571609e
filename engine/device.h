#pragma once
// Where a tensor's storage lives. Only engine/dispatch turns a Device into a
// kernel or an allocator; ops never branch on it.
#include <iosfwd>
#include <string>

namespace hkt {

enum class DeviceType { CPU, CUDA };

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;

  static Device cpu() { return {DeviceType::CPU, 0}; }
  static Device cuda(int index = 0) { return {DeviceType::CUDA, index}; }

  bool operator==(const Device& other) const { return type == other.type && index == other.index; }
  bool operator!=(const Device& other) const { return !(*this == other); }
  std::string str() const;  // "cpu", "cuda:0"
};

// "cpu" or "cuda:0" in an error message (engine/error.h).
void append_message(std::ostream& out, const Device& device);

}  // namespace hkt
