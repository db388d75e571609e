#pragma once
// The CPU caching allocator behind every CPU Storage (engine/dispatch.cpp):
// freed blocks are kept in free lists by size class and handed out again, so
// a steady-state training step asks the system for no memory (no page faults,
// no zeroed pages). The CPU twin of the CUDA caching allocator (cuda/allocator.h).
//
// Size classes: multiples of 64 bytes up to 4 KiB, then eight classes per
// power of two (at most 12.5 % rounding). Builds with AddressSanitizer do not
// cache by default, so that use-after-free stays visible to it.
#include <cstddef>
#include <cstdint>

namespace hkt {

struct CpuAllocatorStats {
  int64_t system_allocations = 0;  // aligned_alloc calls
  int64_t system_frees = 0;        // free calls (cache off, over its limit, or emptied)
  int64_t cache_hits = 0;          // allocations served from the free lists
  int64_t bytes_in_use = 0;        // held by live storage (rounded sizes)
  int64_t bytes_cached = 0;        // freed by storage, kept for reuse
};

CpuAllocatorStats cpu_allocator_stats();
// Returns every cached block to the system.
void cpu_empty_cache();
// Turns caching on or off (off empties the cache). Returns the previous setting.
// Also HKT_CPU_CACHE=0 in the environment.
bool set_cpu_allocator_caching(bool enabled);

namespace cpu_allocator {
void* allocate(size_t nbytes);
void deallocate(void* data);
}  // namespace cpu_allocator

}  // namespace hkt
