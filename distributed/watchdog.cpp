#include "distributed/watchdog.h"

#include <cstdio>

#include "engine/error.h"

namespace hkt::distributed {

Watchdog::Watchdog(int rank, double timeout_seconds, std::function<void(const std::string&)> on_timeout)
    : rank_(rank), on_timeout_(std::move(on_timeout)), timeout_seconds_(timeout_seconds) {
  check(timeout_seconds > 0, "watchdog: the collective timeout must be positive, got ", timeout_seconds);
  thread_ = std::thread([this] { watch(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void Watchdog::set_timeout(double seconds) {
  check(seconds > 0, "--collective-timeout must be positive, got ", seconds);
  std::lock_guard<std::mutex> lock(mutex_);
  timeout_seconds_ = seconds;
}

double Watchdog::timeout() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return timeout_seconds_;
}

Watchdog::Guard Watchdog::arm(const char* collective) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    armed_ = true;
    collective_ = collective;
    deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(timeout_seconds_));
  }
  changed_.notify_all();
  return Guard(*this);
}

void Watchdog::disarm() {
  std::lock_guard<std::mutex> lock(mutex_);
  armed_ = false;
}

void Watchdog::watch() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    if (!armed_) {
      changed_.wait(lock);
      continue;
    }
    const Clock::time_point deadline = deadline_;
    changed_.wait_until(lock, deadline);  // woken early by disarm+arm or stop; the loop rechecks
    if (stopping_ || !armed_ || Clock::now() < deadline_) continue;
    char message[200];
    std::snprintf(message, sizeof message, "rank %d: %s did not complete within %g s; another rank probably died",
                  rank_, collective_, timeout_seconds_);
    armed_ = false;
    lock.unlock();
    on_timeout_(message);
    lock.lock();
  }
}

}  // namespace hkt::distributed
