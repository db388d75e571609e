#pragma once
// `hkt-bench step`: the training step of the SPEC-size classifiers (T = 512,
// d = 64, 2 layers, 4 heads, d_ff = 128, batch 32, HKT L = 3, s = 2 unless
// told otherwise) on the CPU: forward, cross-entropy, backward, gradient
// clipping and AdamW, on random tokens whose valid lengths step_lengths
// gives (by default spread over T/2 … T, the batch bench/pytorch_step.py and
// bench/jax_step.py time; --lengths full: T for every example). Each model runs in its
// own child process (its peak RSS is its own); with both models, a third
// child alternates their steps for the HKT/MHA ratio (steadier on a shared
// machine than two runs one after the other). Reports ms/step (median, min,
// max over the steps after warm-up), the model's GFLOP/s and share of the
// measured FMA peak, the system allocations of the last step (0: the caching
// allocator serves everything), peak RSS, and with --profile the time per
// kernel (engine/profiler.h), forward and backward kernels apart.
//
// FLOPs counted (the model's, not what a kernel executes): every GEMM of the
// forward 2·M·N·K over all B·T rows, its backward twice that; attention as
// hkt-bench's cases (the forward's score and P·V products, the backward 2.5
// times the forward) over each example's valid queries × valid keys, the
// only pairs the loss depends on.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "io/cli.h"

namespace hkt::bench {

struct StepOptions {
  std::vector<std::string> models{"mha", "hkt"};
  int64_t batch = 32, seq_len = 512, d_model = 64, layers = 2, heads = 4, d_ff = 128, levels = 3;
  int steps = 10, warmup = 2, threads = 0;
  bool profile = false, down_pointwise = false;  // HKT's pointwise downsampling projection (SPEC section 2)
  bool full_length = false;                      // every example T valid tokens (else step_lengths' spread)
};

// The valid tokens of each example: T with full_length, else spread evenly
// from T/2 (example 0) to T (the last), T/2 + ⌊b·(T − T/2)/(B − 1)⌋, the
// formula bench/step_batch.py gives the Python scripts (B = 1: T).
std::vector<int64_t> step_lengths(const StepOptions& options);

// `step`'s flags, and the options they give.
void declare_step_flags(cli::Flags& flags);
StepOptions step_options(const cli::Flags& flags);
// Runs every model in a child process (this program again with --step-child)
// and prints one JSON line each, then a table. Returns the exit code.
// peak_gflops is the machine's FMA peak measured before; measure_peak times
// it again after every model's steps, and the highest reading is the share's
// denominator: a peak timed while other tenants held a core reads low.
int run_step_bench(const StepOptions& options, char** argv, double peak_gflops,
                   const std::function<double()>& measure_peak);
// The child: one model's steps, one JSON line on stdout.
int run_step_child(const StepOptions& options);

}  // namespace hkt::bench
