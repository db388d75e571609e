// CUDA kernel of masked_fill (ops/mask.h): out = mask ≠ 0 ? value : x, the
// mask (any dtype) broadcast to x's shape.
#include "cuda/kernel_util.cuh"
#include "engine/dispatch.h"
#include "ops/broadcast.h"
#include "ops/mask.h"

namespace hkt::cuda {
namespace {

template <class M>
__global__ void masked_fill_kernel(const float* x, const M* mask, float value, float* out, int64_t n,
                                   StridedView view) {
  HKT_CUDA_LOOP(i, n) {
    int64_t offset, unused;
    strided_offsets(view, i, offset, unused);
    out[i] = mask[offset] != M(0) ? value : x[i];  // a NaN mask entry counts as nonzero
  }
}

void masked_fill_cuda(const Tensor& x, const Tensor& mask, double value, Tensor& out) {
  require_float32("masked_fill", x);
  const int64_t n = out.numel();
  if (n == 0) return;
  auto strides = broadcast_strides(mask.shape(), out.shape());
  StridedView view = strided_view("masked_fill", out.shape(), strides, strides);
  cudaStream_t s = stream_of(x);
  auto launch = [&](auto mask_tag) {
    using M = decltype(mask_tag);
    masked_fill_kernel<M><<<blocks_for(n), kThreads, 0, s>>>(ptr(x), ptr<M>(mask), static_cast<float>(value),
                                                             ptr(out), n, view);
  };
  switch (mask.dtype()) {
    case DType::Float32: launch(float{}); break;
    case DType::Float64: launch(double{}); break;
    case DType::Int32: launch(int32_t{}); break;
    case DType::Int64: launch(int64_t{}); break;
  }
  check_launch("masked_fill");
}

}  // namespace

HKT_REGISTER_KERNEL(kernels::masked_fill, DeviceType::CUDA, masked_fill_cuda);

}  // namespace hkt::cuda
