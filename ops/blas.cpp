#include "ops/blas.h"

#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iostream>

namespace hkt {

namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

bool cpu_has_avx2_fma() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

bool cpu_has_avx512() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512cd");
#else
  return false;
#endif
}

}  // namespace

std::string blas_core_fix(const std::string& core, bool avx2_fma, bool avx512) {
  // OpenBLAS's x86-64 cores whose kernels stop short of AVX2 + FMA.
  static const char* const kOld[] = {"prescott", "core2",     "penryn",    "dunnington", "nehalem",
                                     "atom",     "opteron",   "opteron_sse3", "barcelona", "bobcat",
                                     "sandybridge", "bulldozer", "katmai",  "coppermine", "northwood",
                                     "banias",   "unknown"};
  const std::string name = lower(core);
  const bool old = std::any_of(std::begin(kOld), std::end(kOld), [&](const char* c) { return name == c; });
  if (!old || !avx2_fma) return "";
  return avx512 ? "SkylakeX" : "Haswell";
}

BlasInfo blas_info() {
  BlasInfo info;
  info.library = openblas_get_config();  // "OpenBLAS 0.3.21 ... <core> MAX_THREADS=64"
  info.core = openblas_get_corename();
  info.suggested_core = blas_core_fix(info.core, cpu_has_avx2_fma(), cpu_has_avx512());
  return info;
}

void reexec_with_blas_core(char** argv) {
  const BlasInfo info = blas_info();
  if (info.suggested_core.empty()) return;
  if (std::getenv("OPENBLAS_CORETYPE") || std::getenv("HKT_BLAS_REEXEC")) {
    if (!std::getenv("HKT_BLAS_NOTED"))  // once, not again in child processes
      std::cerr << argv[0] << ": note: OpenBLAS runs its " << info.core << " kernels on a CPU that can run "
                << info.suggested_core << "'s; GEMMs may be several times slower\n";
    setenv("HKT_BLAS_NOTED", "1", 1);
    return;
  }
  setenv("OPENBLAS_CORETYPE", info.suggested_core.c_str(), 1);
  setenv("HKT_BLAS_REEXEC", "1", 1);
  execv("/proc/self/exe", argv);  // returns only on failure: go on with the slow kernels
  unsetenv("OPENBLAS_CORETYPE");
}

}  // namespace hkt
