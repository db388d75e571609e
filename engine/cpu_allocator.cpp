#include "engine/cpu_allocator.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "engine/error.h"

namespace hkt {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kCacheByDefault = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kCacheByDefault = false;
#else
constexpr bool kCacheByDefault = true;
#endif
#else
constexpr bool kCacheByDefault = true;
#endif

// Cached bytes beyond this go back to the system (HKT_CPU_CACHE_LIMIT_MIB).
size_t cache_limit() {
  static const size_t limit = [] {
    const char* text = std::getenv("HKT_CPU_CACHE_LIMIT_MIB");
    const long long mib = text ? std::atoll(text) : 4096;
    return static_cast<size_t>(mib > 0 ? mib : 0) << 20;
  }();
  return limit;
}

size_t size_class(size_t nbytes) {
  if (nbytes <= 4096) return nbytes == 0 ? 64 : (nbytes + 63) / 64 * 64;
  size_t power = 4096;
  while (power * 2 < nbytes) power *= 2;  // power < nbytes ≤ 2·power
  const size_t eighth = power / 8;
  return (nbytes + eighth - 1) / eighth * eighth;
}

struct State {
  std::mutex mutex;
  bool caching = kCacheByDefault;
  bool environment_read = false;
  std::unordered_map<size_t, std::vector<void*>> free_lists;  // by size class
  std::unordered_map<void*, size_t> sizes;                     // live and cached blocks
  CpuAllocatorStats stats;

  void read_environment() {
    if (environment_read) return;
    environment_read = true;
    if (const char* text = std::getenv("HKT_CPU_CACHE")) caching = std::strcmp(text, "0") != 0;
  }
  void empty() {
    for (auto& [bytes, blocks] : free_lists)
      for (void* block : blocks) {
        sizes.erase(block);
        std::free(block);
        ++stats.system_frees;
        stats.bytes_cached -= static_cast<int64_t>(bytes);
      }
    free_lists.clear();
  }
};

// Never destroyed: storage freed by other static destructors may come back late.
State& state() {
  static State* s = new State;
  return *s;
}

}  // namespace

namespace cpu_allocator {

void* allocate(size_t nbytes) {
  const size_t bytes = size_class(nbytes);
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.read_environment();
  s.stats.bytes_in_use += static_cast<int64_t>(bytes);
  auto it = s.free_lists.find(bytes);
  if (it != s.free_lists.end() && !it->second.empty()) {
    void* block = it->second.back();
    it->second.pop_back();
    ++s.stats.cache_hits;
    s.stats.bytes_cached -= static_cast<int64_t>(bytes);
    return block;
  }
  void* block = std::aligned_alloc(64, bytes);  // 64-byte aligned: vector loads never split a cache line
  if (block == nullptr) {
    s.empty();
    block = std::aligned_alloc(64, bytes);
  }
  if (block == nullptr) {
    s.stats.bytes_in_use -= static_cast<int64_t>(bytes);
    fail("cpu allocator: out of memory allocating ", nbytes, " bytes");
  }
  ++s.stats.system_allocations;
  s.sizes[block] = bytes;
  return block;
}

void deallocate(void* data) {
  if (data == nullptr) return;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const size_t bytes = s.sizes.at(data);
  s.stats.bytes_in_use -= static_cast<int64_t>(bytes);
  if (s.caching && static_cast<size_t>(s.stats.bytes_cached) + bytes <= cache_limit()) {
    s.free_lists[bytes].push_back(data);
    s.stats.bytes_cached += static_cast<int64_t>(bytes);
    return;
  }
  s.sizes.erase(data);
  std::free(data);
  ++s.stats.system_frees;
}

}  // namespace cpu_allocator

CpuAllocatorStats cpu_allocator_stats() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.stats;
}

void cpu_empty_cache() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.empty();
}

bool set_cpu_allocator_caching(bool enabled) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.read_environment();
  const bool previous = s.caching;
  s.caching = enabled;
  if (!enabled) s.empty();
  return previous;
}

}  // namespace hkt
