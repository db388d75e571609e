#pragma once
// Training progress on stdout: a bar redrawn in place on a terminal (step
// rate, loss, ETA) that fits the terminal's width, plain periodic lines when
// stdout is a file or a pipe.
#include <chrono>
#include <cstdint>
#include <string>

namespace hkt::models {

class Progress {
 public:
  // `every`: how often (in steps) a plain line is printed when not on a terminal;
  // `start_step`: the step a resumed run starts after (rates count from there).
  Progress(int64_t total_steps, int64_t every, int64_t start_step);
  void update(int64_t step, int64_t epoch, double loss, double lr);
  void message(const std::string& line);  // a full line (evaluations), above the bar
  void finish();

 private:
  using Clock = std::chrono::steady_clock;
  int64_t total_, every_, first_step_;
  bool terminal_;
  bool bar_drawn_ = false;
  Clock::time_point start_, last_draw_;
};

std::string format_duration(double seconds);  // "1:02:03" or "02:03"

// The terminal's width: TIOCGWINSZ on stdout, else $COLUMNS, else 80.
int terminal_columns();
// One redraw of the bar, at most columns - 1 characters (a full line wraps on
// some terminals and leaves a stale line per redraw); the bar shrinks first.
std::string fit_bar_line(int64_t epoch, int64_t step, int64_t total, double rate, double loss, double lr,
                         const std::string& eta, int columns);

}  // namespace hkt::models
