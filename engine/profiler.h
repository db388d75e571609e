#pragma once
// A kernel profiler in the dispatch layer, off by default: when on, every
// kernel call made through dispatch::kernel adds its wall time to its op's
// total. When off, a call pays one relaxed atomic load. Kernels are timed as
// the calling thread sees them (a kernel's OpenMP region included); kernels
// that call other kernels through dispatch count in both.
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace hkt::profiler {

struct OpTime {
  std::string op;  // the kernel's name, e.g. "gemm", "attention_backward"
  int64_t calls = 0;
  double ms = 0;
};

namespace detail {
extern std::atomic<bool> on;
}

inline bool enabled() { return detail::on.load(std::memory_order_relaxed); }
void enable(bool on);
void reset();
void add(const std::string& op, double ms);
// Every op with at least one call, most time first.
std::vector<OpTime> snapshot();

}  // namespace hkt::profiler
