// The AVX-512 path of the CPU attention kernels (ops/attention_cpu_kernels.h),
// 16 floats a vector. CMakeLists.txt compiles this file with -mavx512f (and
// AVX2/FMA); ops/attention_cpu.cpp runs it only on CPUs that report AVX-512F.
#include "ops/attention_cpu_kernels.h"

namespace hkt::attention_cpu {

#if defined(__AVX512F__)
namespace {
constexpr Path kAvx512 = make_path<Avx512>();
}  // namespace
const Path* avx512_path() { return &kAvx512; }
#else
const Path* avx512_path() { return nullptr; }
#endif

}  // namespace hkt::attention_cpu
