#pragma once
// The CUDA caching allocator's counters and cache control (cuda/device.cu).
// Plain C++: tests and tools include it in builds with HKT_WITH_CUDA.
#include <cstddef>
#include <cstdint>

namespace hkt::cuda {

struct AllocatorStats {
  int64_t device_mallocs = 0;  // cudaMalloc calls that succeeded
  int64_t device_frees = 0;    // cudaFree calls (only when the cache is emptied)
  int64_t cache_hits = 0;      // allocations served from the free lists
  int64_t bytes_in_use = 0;    // held by live tensors (rounded sizes)
  int64_t bytes_cached = 0;    // freed by tensors, kept for reuse
};

AllocatorStats allocator_stats(int device_index);
// Waits for the device's stream, then returns every cached block to CUDA.
// Runs by itself when cudaMalloc fails, before the one retry.
void empty_cache(int device_index);

}  // namespace hkt::cuda
