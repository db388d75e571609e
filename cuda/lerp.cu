// CUDA kernels of lerp (ops/lerp.h): one thread an element, the weight read
// through its broadcast strides.
#include "cuda/kernel_util.cuh"
#include "engine/dispatch.h"
#include "ops/broadcast.h"
#include "ops/lerp.h"

namespace hkt::cuda {
namespace {

StridedView weight_view(const char* op, const Tensor& weight, const Shape& shape) {
  const auto strides = broadcast_strides(weight.shape(), shape);
  return strided_view(op, shape, strides, strides);
}

__global__ void lerp_kernel(const float* start, const float* end, const float* weight, float* out, int64_t n,
                            StridedView view) {
  HKT_CUDA_LOOP(i, n) {
    int64_t offset, unused;
    strided_offsets(view, i, offset, unused);
    out[i] = start[i] + weight[offset] * (end[i] - start[i]);
  }
}

__global__ void lerp_backward_kernel(const float* start, const float* end, const float* weight, const float* grad,
                                     float* grad_start, float* grad_end, float* grad_weight, int64_t n,
                                     StridedView view) {
  HKT_CUDA_LOOP(i, n) {
    int64_t offset, unused;
    strided_offsets(view, i, offset, unused);
    const float w = weight[offset];
    if (grad_start) grad_start[i] = grad[i] * (1.0f - w);
    if (grad_end) grad_end[i] = grad[i] * w;
    if (grad_weight) grad_weight[i] = grad[i] * (end[i] - start[i]);
  }
}

float* ptr_or_null(Tensor& t) { return t.defined() ? ptr<float>(t) : nullptr; }

void lerp_cuda(const Tensor& start, const Tensor& end, const Tensor& weight, Tensor& out) {
  const char* op = kernels::lerp;
  for (const Tensor& t : {start, end, weight, static_cast<const Tensor&>(out)}) require_float32(op, t);
  const int64_t n = out.numel();
  if (n == 0) return;
  lerp_kernel<<<blocks_for(n), kThreads, 0, stream_of(out)>>>(ptr<float>(start), ptr<float>(end), ptr<float>(weight),
                                                              ptr<float>(out), n, weight_view(op, weight, out.shape()));
  check_launch(op);
}

void lerp_backward_cuda(const Tensor& start, const Tensor& end, const Tensor& weight, const Tensor& grad_out,
                        Tensor& grad_start, Tensor& grad_end, Tensor& grad_weight) {
  const char* op = kernels::lerp_backward;
  for (const Tensor& t : {start, end, weight, grad_out}) require_float32(op, t);
  const int64_t n = grad_out.numel();
  if (n == 0) return;
  lerp_backward_kernel<<<blocks_for(n), kThreads, 0, stream_of(grad_out)>>>(
      ptr<float>(start), ptr<float>(end), ptr<float>(weight), ptr<float>(grad_out), ptr_or_null(grad_start),
      ptr_or_null(grad_end), ptr_or_null(grad_weight), n, weight_view(op, weight, grad_out.shape()));
  check_launch(op);
}

}  // namespace

HKT_REGISTER_KERNEL(kernels::lerp, DeviceType::CUDA, lerp_cuda);
HKT_REGISTER_KERNEL(kernels::lerp_backward, DeviceType::CUDA, lerp_backward_cuda);

}  // namespace hkt::cuda
