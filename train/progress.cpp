#include "train/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <algorithm>
#include <cstdlib>

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

int terminal_columns() {
  winsize size{};
  if (ioctl(fileno(stdout), TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  if (const char* columns = std::getenv("COLUMNS")) {
    const int value = std::atoi(columns);
    if (value > 0) return value;
  }
  return 80;
}

std::string fit_bar_line(int64_t epoch, int64_t step, int64_t total, double rate, double loss, double lr,
                         const std::string& eta, int columns) {
  char tail[160];
  std::snprintf(tail, sizeof tail, "] %lld/%lld  %.2f it/s  loss %.4f  lr %.2e  ETA %s", (long long)step,
                (long long)total, rate, loss, lr, eta.c_str());
  const std::string head = "epoch " + std::to_string(epoch) + " [";
  // One column stays free: a line that fills the last column wraps on some terminals.
  const int room = columns - 1 - static_cast<int>(head.size() + std::string(tail).size());
  std::string line;
  if (room >= 5) {
    const int width = std::min(room, 30);
    const int filled = static_cast<int>(width * step / (total > 0 ? total : 1));
    line = head + std::string(static_cast<size_t>(filled), '#') + std::string(static_cast<size_t>(width - filled), '.') +
           tail;
  } else {
    line = head.substr(0, head.size() - 2) + " " + std::string(tail + 2);  // no room for the bar itself
  }
  if (static_cast<int>(line.size()) > columns - 1) line.resize(static_cast<size_t>(std::max(columns - 1, 0)));
  return line;
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
    // The width is read at each redraw: a resized window gets a bar that fits.
    std::printf("\r\033[K%s", fit_bar_line(epoch, step, total_, rate, loss, lr, format_duration(eta),
                                            terminal_columns()).c_str());
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
