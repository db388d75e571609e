#include "train/stop_request.h"

#include <atomic>

namespace hkt::models {
namespace {

std::atomic<int> requested{0};
static_assert(std::atomic<int>::is_always_lock_free, "request_stop must be async-signal-safe");

}  // namespace

void request_stop(int signal) noexcept { requested.store(signal, std::memory_order_relaxed); }
int stop_requested() noexcept { return requested.load(std::memory_order_relaxed); }
void clear_stop_request() noexcept { requested.store(0, std::memory_order_relaxed); }

const char* signal_name(int signal) {
  switch (signal) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return "a signal";
  }
}

}  // namespace hkt::models
