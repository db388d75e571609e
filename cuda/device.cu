// CUDA device memory behind engine/dispatch's Allocator seam: tensors move to
// and from a GPU with tensor.to(Device::cuda(i)). Plain cudaMalloc/cudaFree for
// now; the caching allocator and the op kernels come with the CUDA backend.
#include <cuda_runtime.h>

#include "engine/dispatch.h"
#include "engine/error.h"

namespace hkt::cuda {
namespace {

void check_cuda(cudaError_t status, const char* what, size_t nbytes, int device_index) {
  if (status != cudaSuccess)
    fail("cuda:", device_index, ": ", what, " of ", nbytes, " bytes failed: ", cudaGetErrorString(status));
}

int count_devices() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return count;
}

void use_device(int device_index) {
  int count = count_devices();
  if (count == 0) fail("cuda:", device_index, ": no CUDA device is present on this machine");
  if (device_index < 0 || device_index >= count)
    fail("cuda:", device_index, ": no such device (", count, " present)");
  check_cuda(cudaSetDevice(device_index), "cudaSetDevice", 0, device_index);
}

void* allocate(size_t nbytes, int device_index) {
  use_device(device_index);
  void* data = nullptr;
  check_cuda(cudaMalloc(&data, nbytes == 0 ? 1 : nbytes), "cudaMalloc", nbytes, device_index);
  return data;
}

void deallocate(void* data, int device_index) {
  if (cudaSetDevice(device_index) == cudaSuccess) cudaFree(data);  // never throw from a destructor
}

void copy_to_host(void* host, const void* data, size_t nbytes, int device_index) {
  use_device(device_index);
  check_cuda(cudaMemcpy(host, data, nbytes, cudaMemcpyDeviceToHost), "copy to host", nbytes, device_index);
}

void copy_from_host(void* data, const void* host, size_t nbytes, int device_index) {
  use_device(device_index);
  check_cuda(cudaMemcpy(data, host, nbytes, cudaMemcpyHostToDevice), "copy from host", nbytes, device_index);
}

void copy_on_device(void* to, const void* from, size_t nbytes, int device_index) {
  use_device(device_index);
  check_cuda(cudaMemcpy(to, from, nbytes, cudaMemcpyDeviceToDevice), "copy on device", nbytes, device_index);
}

const bool registered = [] {
  dispatch::register_allocator(DeviceType::CUDA,
                               {allocate, deallocate, copy_to_host, copy_from_host, copy_on_device, count_devices});
  return true;
}();

}  // namespace
}  // namespace hkt::cuda
