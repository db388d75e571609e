#pragma once
// `hkt-bench gemm`: the float32 GEMMs of the SPEC-size training step, each
// linear layer's three products — the forward x·Wᵀ, the input gradient dY·W
// and the weight gradient dYᵀ·x, with M = B·T rows (16384) and widths
// d = 64, d_ff = 128 — timed as the step meets them and as a GEMM benchmark
// usually times them:
//   in cache:     the same operands every call (best of --repeats);
//   from memory:  every call on another copy of the operands, the copies
//                 twice the last-level cache together (--memory-mib), so that the streamed
//                 operand comes from DRAM as the step's activations do.
// GFLOP/s (2·M·N·K per product) and the share of the measured FMA peak, one
// JSON line per product, then a table. The products run through the
// library's `gemm` op: the project's micro-kernel, or OpenBLAS with
// HKT_CPU_GEMM=blas. The gap between the two columns is what prefetching
// and blocking for memory are about (docs/PERFORMANCE.md).
#include <cstdint>

#include "io/cli.h"

namespace hkt::bench {

struct GemmOptions {
  int64_t rows = 16384;  // M: the step's B·T
  int repeats = 20, threads = 0;
  int64_t memory_mib = 0;  // the from-memory copies' span; 0: twice the last-level cache
};

void declare_gemm_flags(cli::Flags& flags);
GemmOptions gemm_options(const cli::Flags& flags);
// peak_gflops: the machine's FMA peak, measured by the caller. Returns the exit code.
int run_gemm_bench(const GemmOptions& options, double peak_gflops);

}  // namespace hkt::bench
