#pragma once
// A block of memory on one device, shared by every tensor that views it.
// Allocation goes through the allocator registered for the device
// (engine/dispatch), so CPU and CUDA storage are the same class.
#include <cstddef>

#include "engine/device.h"

namespace hkt {

class Storage {
 public:
  Storage(size_t nbytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Device device_;
};

}  // namespace hkt
