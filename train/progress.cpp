#include "train/progress.h"

#include <unistd.h>

#include <cstdio>

namespace hkt::models {

std::string format_duration(double seconds) {
  if (!(seconds >= 0) || seconds > 1e7) return "--:--";
  long total = static_cast<long>(seconds + 0.5);
  char text[32];
  if (total >= 3600)
    std::snprintf(text, sizeof text, "%ld:%02ld:%02ld", total / 3600, total / 60 % 60, total % 60);
  else
    std::snprintf(text, sizeof text, "%02ld:%02ld", total / 60, total % 60);
  return text;
}

Progress::Progress(int64_t total_steps, int64_t every, int64_t start_step)
    : total_(total_steps),
      every_(every < 1 ? 1 : every),
      first_step_(start_step),
      terminal_(isatty(fileno(stdout)) != 0) {
  start_ = last_draw_ = Clock::now();
}

void Progress::update(int64_t step, int64_t epoch, double loss, double lr) {
  const auto now = Clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double done = static_cast<double>(step - first_step_);
  const double rate = elapsed > 0 ? done / elapsed : 0.0;
  const double eta = rate > 0 ? static_cast<double>(total_ - step) / rate : -1;
  if (terminal_) {
    if (step != total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    const int width = 30;
    int filled = static_cast<int>(width * step / (total_ > 0 ? total_ : 1));
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(width, '.');
    std::printf("\r\033[Kepoch %lld [%s] %lld/%lld  %.2f it/s  loss %.4f  lr %.2e  ETA %s", (long long)epoch,
                bar.c_str(), (long long)step, (long long)total_, rate, loss, lr, format_duration(eta).c_str());
    bar_drawn_ = true;
  } else if (step % every_ == 0 || step == total_) {
    std::printf("step %lld/%lld  epoch %lld  loss %.4f  lr %.2e  %.2f it/s  ETA %s\n", (long long)step,
                (long long)total_, (long long)epoch, loss, lr, rate, format_duration(eta).c_str());
  }
  std::fflush(stdout);
}

void Progress::message(const std::string& line) {
  if (bar_drawn_) std::printf("\r\033[K");
  std::printf("%s\n", line.c_str());
  bar_drawn_ = false;
  std::fflush(stdout);
}

void Progress::finish() {
  if (bar_drawn_) std::printf("\n");
  bar_drawn_ = false;
  std::fflush(stdout);
}

}  // namespace hkt::models
