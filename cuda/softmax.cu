// CUDA kernels of softmax / log_softmax (ops/softmax.h). x is seen as
// [outer, extent, inner]; a row is one (outer, inner) pair with `extent`
// elements `inner` apart, and one block reduces one row.
#include "cuda/kernel_util.cuh"
#include "engine/dispatch.h"
#include "ops/softmax.h"

namespace hkt::cuda {
namespace {

__device__ inline int64_t row_start(int64_t row, int64_t extent, int64_t inner) {
  return (row / inner) * extent * inner + row % inner;
}

// y = exp(x − m) / Σ exp(x − m);  log y = x − (m + log Σ exp(x − m)).
// An all −inf row gives y = 0 (log y = −inf), as on the CPU. m is the same in
// every thread, so the branch on it keeps the block together.
template <bool Log>
__global__ void softmax_kernel(const float* x, float* out, int64_t rows, int64_t extent, int64_t inner) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* in = x + row_start(row, extent, inner);
    float* y = out + row_start(row, extent, inner);
    float m = -INFINITY;
    for (int64_t k = threadIdx.x; k < extent; k += blockDim.x) m = nan_max(m, in[k * inner]);
    m = block_max(m);
    if (m == -INFINITY) {
      for (int64_t k = threadIdx.x; k < extent; k += blockDim.x) y[k * inner] = Log ? -INFINITY : 0.0f;
      continue;
    }
    float total = 0.0f;
    for (int64_t k = threadIdx.x; k < extent; k += blockDim.x) total += expf(in[k * inner] - m);
    total = block_sum(total);
    if (Log) {
      const float log_sum_exp = m + logf(total);
      for (int64_t k = threadIdx.x; k < extent; k += blockDim.x) y[k * inner] = in[k * inner] - log_sum_exp;
    } else {
      const float scale = 1.0f / total;
      for (int64_t k = threadIdx.x; k < extent; k += blockDim.x) y[k * inner] = expf(in[k * inner] - m) * scale;
    }
  }
}

// softmax:      dx = y ⊙ (g − Σ g⊙y)
// log_softmax:  dx = g − exp(y) Σ g, and 0 on a fully masked (all −inf) row.
template <bool Log>
__global__ void softmax_backward_kernel(const float* y, const float* grad_out, float* grad_in, int64_t rows,
                                        int64_t extent, int64_t inner) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t start = row_start(row, extent, inner);
    const float* yr = y + start;
    const float* g = grad_out + start;
    float* dx = grad_in + start;
    if (Log) {
      float grad_total = 0.0f, unmasked = 0.0f;
      for (int64_t k = threadIdx.x; k < extent; k += blockDim.x) {
        grad_total += g[k * inner];
        unmasked += yr[k * inner] == -INFINITY ? 0.0f : 1.0f;
      }
      grad_total = block_sum(grad_total);
      const bool masked = block_sum(unmasked) == 0.0f;
      for (int64_t k = threadIdx.x; k < extent; k += blockDim.x)
        dx[k * inner] = masked ? 0.0f : g[k * inner] - expf(yr[k * inner]) * grad_total;
    } else {
      float dot = 0.0f;
      for (int64_t k = threadIdx.x; k < extent; k += blockDim.x) dot += g[k * inner] * yr[k * inner];
      dot = block_sum(dot);
      for (int64_t k = threadIdx.x; k < extent; k += blockDim.x) dx[k * inner] = yr[k * inner] * (g[k * inner] - dot);
    }
  }
}

template <bool Log>
void softmax_cuda(const Tensor& x, AxisSplit split, Tensor& out) {
  const char* op = Log ? "log_softmax" : "softmax";
  require_float32(op, x);
  const int64_t rows = split.outer * split.inner;
  if (rows == 0 || split.extent == 0) return;
  softmax_kernel<Log><<<row_blocks(rows), kThreads, 0, stream_of(x)>>>(ptr(x), ptr(out), rows, split.extent,
                                                                         split.inner);
  check_launch(op);
}

template <bool Log>
void softmax_backward_cuda(const Tensor& y, const Tensor& grad_out, AxisSplit split, Tensor& grad_in) {
  const char* op = Log ? "log_softmax_backward" : "softmax_backward";
  require_float32(op, y);
  require_float32(op, grad_out);
  const int64_t rows = split.outer * split.inner;
  if (rows == 0 || split.extent == 0) return;
  softmax_backward_kernel<Log><<<row_blocks(rows), kThreads, 0, stream_of(y)>>>(ptr(y), ptr(grad_out), ptr(grad_in),
                                                                                  rows, split.extent, split.inner);
  check_launch(op);
}

}  // namespace

HKT_REGISTER_KERNEL(kernels::softmax, DeviceType::CUDA, softmax_cuda<false>);
HKT_REGISTER_KERNEL(kernels::softmax_backward, DeviceType::CUDA, softmax_backward_cuda<false>);
HKT_REGISTER_KERNEL(kernels::log_softmax, DeviceType::CUDA, softmax_cuda<true>);
HKT_REGISTER_KERNEL(kernels::log_softmax_backward, DeviceType::CUDA, softmax_backward_cuda<true>);

}  // namespace hkt::cuda
