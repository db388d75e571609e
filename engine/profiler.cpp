#include "engine/profiler.h"

#include <algorithm>
#include <map>
#include <mutex>

namespace hkt::profiler {

namespace detail {
std::atomic<bool> on{false};
}

namespace {
std::mutex mutex;
std::map<std::string, OpTime>& table() {
  static std::map<std::string, OpTime> times;
  return times;
}
}  // namespace

void enable(bool on) { detail::on.store(on, std::memory_order_relaxed); }

void reset() {
  std::lock_guard<std::mutex> lock(mutex);
  table().clear();
}

void add(const std::string& op, double ms) {
  std::lock_guard<std::mutex> lock(mutex);
  OpTime& entry = table()[op];
  entry.op = op;
  ++entry.calls;
  entry.ms += ms;
}

std::vector<OpTime> snapshot() {
  std::vector<OpTime> times;
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (const auto& [op, time] : table()) times.push_back(time);
  }
  std::sort(times.begin(), times.end(), [](const OpTime& a, const OpTime& b) { return a.ms > b.ms; });
  return times;
}

}  // namespace hkt::profiler
