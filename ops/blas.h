#pragma once
// Which BLAS the CPU GEMMs (ops/matmul.cpp) run on, and whether it chose
// kernels below what this CPU can do. Debian's OpenBLAS does not recognise
// CPUs whose model number it does not know (common in virtual machines) and
// falls back to its Prescott (SSE3) kernels: every GEMM up to 5× slower,
// silently. OpenBLAS picks its kernels once, when it loads, from
// OPENBLAS_CORETYPE; so the tools re-run themselves with it set
// (reexec_with_blas_core), and the library warns once otherwise.
#include <string>

namespace hkt {

struct BlasInfo {
  std::string library;         // openblas_get_config(), e.g. "OpenBLAS 0.3.21 ... USE_OPENMP Cooperlake MAX_THREADS=64"
  std::string core;            // the kernels in use, e.g. "Cooperlake"
  std::string suggested_core;  // "" when the core fits this CPU; else an OPENBLAS_CORETYPE value that does
};

BlasInfo blas_info();

// The decision, separate for tests: a pre-AVX2 core on a CPU with AVX2 and
// FMA gets "Haswell", or "SkylakeX" where the CPU has AVX-512 (F, BW, VL, DQ, CD).
std::string blas_core_fix(const std::string& core, bool avx2_fma, bool avx512);

// For a tool's main(): when the BLAS core is below the CPU and the user has not
// set OPENBLAS_CORETYPE, sets it and executes this program again with the same
// arguments (once; HKT_BLAS_REEXEC marks the second run). Returns only if it
// did not re-execute.
void reexec_with_blas_core(char** argv);

}  // namespace hkt
