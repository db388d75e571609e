// CUDA kernel of cast (ops/copy.h): every dtype to every dtype, as on the CPU
// (a conversion is not arithmetic, so float64 is allowed here).
#include "cuda/kernel_util.cuh"
#include "engine/dispatch.h"
#include "ops/common.h"
#include "ops/copy.h"

namespace hkt::cuda {
namespace {

template <class From, class To>
__global__ void cast_kernel(const From* x, To* out, int64_t n) {
  HKT_CUDA_LOOP(i, n) out[i] = static_cast<To>(x[i]);
}

void cast_cuda(const Tensor& x, Tensor& out) {
  const int64_t n = x.numel();
  if (n == 0) return;
  cudaStream_t s = stream_of(x);
  visit_any(x.dtype(), [&](auto from_tag) {
    using From = decltype(from_tag);
    visit_any(out.dtype(), [&](auto to_tag) {
      using To = decltype(to_tag);
      cast_kernel<From, To><<<blocks_for(n), kThreads, 0, s>>>(ptr<From>(x), ptr<To>(out), n);
      check_launch("cast");
    });
  });
}

}  // namespace

HKT_REGISTER_KERNEL(kernels::cast, DeviceType::CUDA, cast_cuda);

}  // namespace hkt::cuda
