// The AVX2 + FMA path of the CPU attention kernels (ops/attention_cpu_kernels.h),
// 8 floats a vector. CMakeLists.txt compiles this file with -mavx2 -mfma;
// ops/attention_cpu.cpp runs it only on CPUs that report both.
#include "ops/attention_cpu_kernels.h"

namespace hkt::attention_cpu {

#if defined(__AVX2__) && defined(__FMA__)
namespace {
constexpr Path kAvx2 = make_path<Avx2>();
}  // namespace
const Path* avx2_path() { return &kAvx2; }
#else
const Path* avx2_path() { return nullptr; }
#endif

}  // namespace hkt::attention_cpu
