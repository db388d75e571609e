#pragma once
// A thread that ends the process when a collective blocks too long. MPI
// collectives have no timeout: when a rank dies, the others would wait
// forever inside MPI_Allreduce. Each blocking collective arms the watchdog
// for its duration; past the deadline it calls `on_timeout` with the message
// "rank R: <collective> did not complete within N s; another rank probably died".
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace hkt::distributed {

class Watchdog {
 public:
  // `on_timeout` runs on the watchdog's thread and is expected to end the
  // job (MPI_Abort); if it returns, the watchdog stays disarmed until the next
  // collective arms it (tests observe the message this way).
  Watchdog(int rank, double timeout_seconds, std::function<void(const std::string& message)> on_timeout);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void set_timeout(double seconds);
  double timeout() const;

  // Armed while it lives.
  class Guard {
   public:
    ~Guard() { watchdog_.disarm(); }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

   private:
    friend class Watchdog;
    explicit Guard(Watchdog& watchdog) : watchdog_(watchdog) {}
    Watchdog& watchdog_;
  };
  [[nodiscard]] Guard arm(const char* collective);

 private:
  using Clock = std::chrono::steady_clock;
  void disarm();
  void watch();

  const int rank_;
  std::function<void(const std::string&)> on_timeout_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  double timeout_seconds_;
  bool armed_ = false, stopping_ = false;
  const char* collective_ = "";
  Clock::time_point deadline_;
  std::thread thread_;  // last: started once the fields above exist
};

}  // namespace hkt::distributed
