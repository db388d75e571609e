// CUDA kernels of sum and max along one axis (ops/reduce.h). x is seen as
// [outer, extent, inner] and out as [outer, inner]. Each output is reduced by
// one thread (inner > 1: neighbouring threads read neighbouring memory) or,
// for a reduction over the last axis (inner = 1), by one block.
#include "cuda/kernel_util.cuh"
#include "engine/dispatch.h"
#include "ops/reduce.h"

namespace hkt::cuda {
namespace {

__global__ void sum_strided_kernel(const float* x, float* out, int64_t outer, int64_t extent, int64_t inner) {
  HKT_CUDA_LOOP(index, outer * inner) {
    const int64_t o = index / inner, i = index % inner;
    const float* slice = x + o * extent * inner + i;
    float total = 0.0f;
    for (int64_t k = 0; k < extent; ++k) total += slice[k * inner];
    out[index] = total;
  }
}

__global__ void sum_rows_kernel(const float* x, float* out, int64_t rows, int64_t extent) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    float total = 0.0f;
    for (int64_t k = threadIdx.x; k < extent; k += blockDim.x) total += x[row * extent + k];
    total = block_sum(total);
    if (threadIdx.x == 0) out[row] = total;
  }
}

void sum_cuda(const Tensor& x, AxisSplit split, Tensor& out) {
  require_float32("sum", x);
  const int64_t outputs = split.outer * split.inner;
  if (outputs == 0) return;
  cudaStream_t s = stream_of(x);
  if (split.inner == 1)
    sum_rows_kernel<<<row_blocks(outputs), kThreads, 0, s>>>(ptr(x), ptr(out), outputs, split.extent);
  else
    sum_strided_kernel<<<blocks_for(outputs), kThreads, 0, s>>>(ptr(x), ptr(out), split.outer, split.extent,
                                                                 split.inner);
  check_launch("sum");
}

// The first maximum wins; a NaN wins over numbers (the first NaN), as on the CPU.
__global__ void max_kernel(const float* x, float* out, int64_t* argmax, int64_t outer, int64_t extent,
                           int64_t inner) {
  HKT_CUDA_LOOP(index, outer * inner) {
    const int64_t o = index / inner, i = index % inner;
    const float* slice = x + o * extent * inner + i;
    float best = slice[0];
    int64_t best_k = 0;
    for (int64_t k = 1; k < extent; ++k) {
      const float v = slice[k * inner];
      if (v > best || (v != v && best == best)) {
        best = v;
        best_k = k;
      }
    }
    out[index] = best;
    argmax[index] = best_k;
  }
}

void max_cuda(const Tensor& x, AxisSplit split, Tensor& out, Tensor& argmax) {
  require_float32("max", x);
  const int64_t outputs = split.outer * split.inner;
  if (outputs == 0 || split.extent == 0) return;
  max_kernel<<<blocks_for(outputs), kThreads, 0, stream_of(x)>>>(ptr(x), ptr(out), ptr<int64_t>(argmax),
                                                                 split.outer, split.extent, split.inner);
  check_launch("max");
}

__global__ void max_backward_kernel(const float* grad_out, const int64_t* argmax, float* grad_in, int64_t outer,
                                    int64_t extent, int64_t inner) {
  HKT_CUDA_LOOP(index, outer * inner) {
    const int64_t o = index / inner, i = index % inner;
    grad_in[(o * extent + argmax[index]) * inner + i] = grad_out[index];
  }
}

void max_backward_cuda(const Tensor& grad_out, const Tensor& argmax, AxisSplit split, Tensor& grad_in) {
  require_float32("max_backward", grad_out);
  if (grad_in.numel() == 0) return;
  cudaStream_t s = stream_of(grad_in);
  check(cudaMemsetAsync(grad_in.raw_data(), 0, grad_in.nbytes(), s), "max_backward", "cudaMemsetAsync");
  const int64_t outputs = split.outer * split.inner;
  max_backward_kernel<<<blocks_for(outputs), kThreads, 0, s>>>(ptr(grad_out), ptr<int64_t>(argmax), ptr(grad_in),
                                                               split.outer, split.extent, split.inner);
  check_launch("max_backward");
}

}  // namespace

HKT_REGISTER_KERNEL(kernels::sum, DeviceType::CUDA, sum_cuda);
HKT_REGISTER_KERNEL(kernels::max, DeviceType::CUDA, max_cuda);
HKT_REGISTER_KERNEL(kernels::max_backward, DeviceType::CUDA, max_backward_cuda);

}  // namespace hkt::cuda
