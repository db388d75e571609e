// CUDA device memory behind engine/dispatch's Allocator seam: a caching
// allocator and the copies between host and device.
//
// Freed blocks are kept in free lists keyed by their rounded size and handed
// out again to the next request of that size, so a training step after the
// first (same shapes, same sizes) calls neither cudaMalloc nor cudaFree. Reuse
// is stream-ordered: every kernel and copy of a device runs on its one stream
// (cuda/runtime.h), so work queued after a reuse runs after the work queued
// before the free. Copies to the host synchronise that stream before
// returning; copies from the host synchronise too, because the host buffer
// may be gone as soon as the call returns.
#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "cuda/allocator.h"
#include "cuda/runtime.h"
#include "engine/dispatch.h"
#include "engine/error.h"

namespace hkt::cuda {
namespace {

int count_devices() {
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      (void)cudaGetLastError();  // clear the sticky "no device" error
      return 0;
    }
    return n;
  }();
  return count;
}

void require_device(int device_index) {
  const int count = count_devices();
  if (count == 0)
    fail("cuda:", device_index,
         ": no CUDA device is present on this machine (the build has the CUDA backend, but the driver finds no GPU)");
  if (device_index < 0 || device_index >= count) fail("cuda:", device_index, ": no such device (", count, " present)");
}

void check_cuda(cudaError_t status, const char* what, size_t nbytes, int device_index) {
  if (status != cudaSuccess)
    fail("cuda:", device_index, ": ", what, " of ", nbytes, " bytes failed: ", cudaGetErrorString(status));
}

// Small blocks round to 512 bytes, large ones to 1 MiB: few distinct sizes,
// at most ~0.1% (large) or 512 bytes (small) of waste.
size_t round_size(size_t nbytes) {
  constexpr size_t kSmall = 512, kLarge = size_t(1) << 20;
  if (nbytes == 0) return kSmall;
  const size_t unit = nbytes < kLarge ? kSmall : kLarge;
  return (nbytes + unit - 1) / unit * unit;
}

struct DevicePool {
  std::map<size_t, std::vector<void*>> free_blocks;  // rounded size → cached blocks
  std::unordered_map<void*, size_t> live;            // block → rounded size
  AllocatorStats stats;
};

std::mutex pools_mutex;
// Leaked on purpose: tensors destroyed during static destruction still free into it.
std::vector<DevicePool*>& pools() {
  static auto* all = new std::vector<DevicePool*>();
  return *all;
}

DevicePool& pool(int device_index) {  // callers hold pools_mutex
  auto& all = pools();
  if (static_cast<int>(all.size()) <= device_index) all.resize(device_index + 1, nullptr);
  if (all[device_index] == nullptr) all[device_index] = new DevicePool();
  return *all[device_index];
}

void release_cached(DevicePool& p) {  // callers hold pools_mutex and made the device current
  for (auto& [size, blocks] : p.free_blocks) {
    for (void* block : blocks) {
      cudaFree(block);
      ++p.stats.device_frees;
      p.stats.bytes_cached -= static_cast<int64_t>(size);
    }
  }
  p.free_blocks.clear();
}

void* allocate(size_t nbytes, int device_index) {
  require_device(device_index);
  cudaStream_t s = stream(device_index);  // makes the device current
  const size_t size = round_size(nbytes);
  std::lock_guard<std::mutex> lock(pools_mutex);
  DevicePool& p = pool(device_index);
  auto cached = p.free_blocks.find(size);
  if (cached != p.free_blocks.end() && !cached->second.empty()) {
    void* block = cached->second.back();
    cached->second.pop_back();
    p.stats.bytes_cached -= static_cast<int64_t>(size);
    p.stats.bytes_in_use += static_cast<int64_t>(size);
    ++p.stats.cache_hits;
    p.live[block] = size;
    return block;
  }
  void* block = nullptr;
  cudaError_t status = cudaMalloc(&block, size);
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    cudaStreamSynchronize(s);  // cached blocks may still be in use by queued work
    release_cached(p);
    status = cudaMalloc(&block, size);
  }
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    fail("cuda:", device_index, ": out of memory allocating ", nbytes, " bytes (", p.stats.bytes_in_use,
         " bytes held by tensors after emptying the cache): ", cudaGetErrorString(status));
  }
  ++p.stats.device_mallocs;
  p.stats.bytes_in_use += static_cast<int64_t>(size);
  p.live[block] = size;
  return block;
}

// Never throws (it runs from Storage's destructor); the block goes back to
// its free list, not to CUDA.
void deallocate(void* data, int device_index) {
  if (data == nullptr) return;
  std::lock_guard<std::mutex> lock(pools_mutex);
  DevicePool& p = pool(device_index);
  auto it = p.live.find(data);
  if (it == p.live.end()) return;  // not ours: ignore rather than corrupt the lists
  const size_t size = it->second;
  p.live.erase(it);
  p.stats.bytes_in_use -= static_cast<int64_t>(size);
  p.stats.bytes_cached += static_cast<int64_t>(size);
  p.free_blocks[size].push_back(data);
}

void copy_to_host(void* host, const void* data, size_t nbytes, int device_index) {
  require_device(device_index);
  if (nbytes == 0) return;
  cudaStream_t s = stream(device_index);
  check_cuda(cudaMemcpyAsync(host, data, nbytes, cudaMemcpyDeviceToHost, s), "copy to host", nbytes, device_index);
  check_cuda(cudaStreamSynchronize(s), "copy to host (synchronize)", nbytes, device_index);
}

void copy_from_host(void* data, const void* host, size_t nbytes, int device_index) {
  require_device(device_index);
  if (nbytes == 0) return;
  cudaStream_t s = stream(device_index);
  check_cuda(cudaMemcpyAsync(data, host, nbytes, cudaMemcpyHostToDevice, s), "copy from host", nbytes,
             device_index);
  check_cuda(cudaStreamSynchronize(s), "copy from host (synchronize)", nbytes, device_index);
}

void copy_on_device(void* to, const void* from, size_t nbytes, int device_index) {
  require_device(device_index);
  if (nbytes == 0) return;
  check_cuda(cudaMemcpyAsync(to, from, nbytes, cudaMemcpyDeviceToDevice, stream(device_index)), "copy on device",
             nbytes, device_index);
}

const bool registered = [] {
  dispatch::register_allocator(DeviceType::CUDA,
                               {allocate, deallocate, copy_to_host, copy_from_host, copy_on_device, count_devices});
  return true;
}();

}  // namespace

AllocatorStats allocator_stats(int device_index) {
  std::lock_guard<std::mutex> lock(pools_mutex);
  return pool(device_index).stats;
}

void empty_cache(int device_index) {
  require_device(device_index);
  cudaStream_t s = stream(device_index);
  check(cudaStreamSynchronize(s), "empty_cache", "cudaStreamSynchronize");
  std::lock_guard<std::mutex> lock(pools_mutex);
  release_cached(pool(device_index));
}

}  // namespace hkt::cuda
