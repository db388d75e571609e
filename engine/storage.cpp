#include "engine/storage.h"

#include "engine/dispatch.h"

namespace hkt {

Storage::Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  data_ = dispatch::allocator(device).allocate(nbytes, device.index);
}

Storage::~Storage() { dispatch::allocator(device_).deallocate(data_, device_.index); }

}  // namespace hkt
