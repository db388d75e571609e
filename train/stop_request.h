#pragma once
// Stopping a run cleanly on a signal (hkt-train's SIGINT and SIGTERM): the
// handler only records the request; the training loop finishes its step,
// writes the metrics and the checkpoint, and train() throws Interrupted,
// so nothing done before the signal is lost and --resume continues exactly.
#include <csignal>
#include <cstdint>

#include "engine/error.h"

namespace hkt::models {

// Async-signal-safe: callable from a signal handler.
void request_stop(int signal) noexcept;
// The signal of the pending request, 0 when none.
int stop_requested() noexcept;
void clear_stop_request() noexcept;

// What train() throws after a requested stop, once the checkpoint is written.
struct Interrupted : Error {
  Interrupted(int signal, int64_t step, const std::string& message) : Error(message), signal(signal), step(step) {}
  int signal;
  int64_t step;  // the last step done (and checkpointed); -1 when stopped before the first
};

// "SIGINT", "SIGTERM", else "signal N".
const char* signal_name(int signal);

}  // namespace hkt::models
