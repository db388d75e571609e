// CUDA kernels of layer_norm (ops/norm.h): one block per row for the forward
// and for dx; the parameter gradients are summed over fixed blocks of rows and
// then over the blocks in order (deterministic, as on the CPU).
#include "cuda/kernel_util.cuh"
#include "engine/dispatch.h"
#include "ops/norm.h"

namespace hkt::cuda {
namespace {

constexpr int64_t kRowsPerBlock = 32;

// mean = Σ x / D, var = Σ (x − mean)² / D (two passes), rstd = 1 / sqrt(var + eps),
// y = (x − mean) · rstd ⊙ weight + bias.
__global__ void layer_norm_kernel(const float* x, const float* weight, const float* bias, float eps, float* out,
                                  float* mean, float* rstd, int64_t rows, int64_t width) {
  for (int64_t n = blockIdx.x; n < rows; n += gridDim.x) {
    const float* row = x + n * width;
    float* y = out + n * width;
    float total = 0.0f;
    for (int64_t d = threadIdx.x; d < width; d += blockDim.x) total += row[d];
    const float m = block_sum(total) / static_cast<float>(width);
    float squares = 0.0f;
    for (int64_t d = threadIdx.x; d < width; d += blockDim.x) squares += (row[d] - m) * (row[d] - m);
    const float s = 1.0f / sqrtf(block_sum(squares) / static_cast<float>(width) + eps);
    for (int64_t d = threadIdx.x; d < width; d += blockDim.x) y[d] = (row[d] - m) * s * weight[d] + bias[d];
    if (threadIdx.x == 0) {
      mean[n] = m;
      rstd[n] = s;
    }
  }
}

void layer_norm_cuda(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, Tensor& out,
                     Tensor& mean, Tensor& rstd) {
  const char* op = "layer_norm";
  require_float32(op, x);
  require_float32(op, weight);
  require_float32(op, bias);
  const int64_t width = weight.numel(), rows = mean.numel();
  if (rows == 0 || width == 0) return;
  layer_norm_kernel<<<row_blocks(rows), kThreads, 0, stream_of(x)>>>(
      ptr(x), ptr(weight), ptr(bias), static_cast<float>(eps), ptr(out), ptr(mean), ptr(rstd), rows, width);
  check_launch(op);
}

// With x̂ = (x − mean) · rstd and dx̂ = g ⊙ weight, per row:
//   dx = rstd · (dx̂ − mean(dx̂) − x̂ · mean(dx̂ ⊙ x̂))
// With accumulate, grad_x holds a gradient summed so far, and dX is added to it.
__global__ void layer_norm_grad_x_kernel(const float* x, const float* weight, const float* mean, const float* rstd,
                                         const float* grad_out, float* grad_x, int64_t rows, int64_t width,
                                         bool accumulate) {
  for (int64_t n = blockIdx.x; n < rows; n += gridDim.x) {
    const float* row = x + n * width;
    const float* g = grad_out + n * width;
    float* dx = grad_x + n * width;
    const float m = mean[n], s = rstd[n];
    float dnorm_total = 0.0f, dnorm_xhat_total = 0.0f;
    for (int64_t d = threadIdx.x; d < width; d += blockDim.x) {
      const float xhat = (row[d] - m) * s, dnorm = g[d] * weight[d];
      dnorm_total += dnorm;
      dnorm_xhat_total += dnorm * xhat;
    }
    const float dnorm_mean = block_sum(dnorm_total) / static_cast<float>(width);
    const float dnorm_xhat_mean = block_sum(dnorm_xhat_total) / static_cast<float>(width);
    for (int64_t d = threadIdx.x; d < width; d += blockDim.x) {
      const float xhat = (row[d] - m) * s;
      const float term = s * (g[d] * weight[d] - dnorm_mean - xhat * dnorm_xhat_mean);
      dx[d] = accumulate ? dx[d] + term : term;
    }
  }
}

// partial_*[block, d] = Σ over the block's rows of g ⊙ x̂ (weight) and g (bias).
__global__ void layer_norm_partial_kernel(const float* x, const float* mean, const float* rstd,
                                          const float* grad_out, float* partial_weight, float* partial_bias,
                                          int64_t rows, int64_t width, int64_t blocks) {
  HKT_CUDA_LOOP(index, blocks * width) {
    const int64_t block = index / width, d = index % width;
    const int64_t begin = block * kRowsPerBlock, end = min(rows, begin + kRowsPerBlock);
    float weight_total = 0.0f, bias_total = 0.0f;
    for (int64_t n = begin; n < end; ++n) {
      const float g = grad_out[n * width + d];
      weight_total += g * (x[n * width + d] - mean[n]) * rstd[n];
      bias_total += g;
    }
    partial_weight[index] = weight_total;
    partial_bias[index] = bias_total;
  }
}

__global__ void layer_norm_param_kernel(const float* partial_weight, const float* partial_bias, float* grad_weight,
                                        float* grad_bias, int64_t width, int64_t blocks) {
  HKT_CUDA_LOOP(d, width) {
    float weight_total = 0.0f, bias_total = 0.0f;
    for (int64_t block = 0; block < blocks; ++block) {
      weight_total += partial_weight[block * width + d];
      bias_total += partial_bias[block * width + d];
    }
    grad_weight[d] = weight_total;
    grad_bias[d] = bias_total;
  }
}

void layer_norm_backward_cuda(const Tensor& x, const Tensor& weight, const Tensor& mean, const Tensor& rstd,
                              const Tensor& grad_out, Tensor& grad_x, Tensor& grad_weight, Tensor& grad_bias,
                              bool accumulate) {
  const char* op = "layer_norm_backward";
  require_float32(op, x);
  require_float32(op, weight);
  require_float32(op, grad_out);
  const int64_t width = weight.numel(), rows = mean.numel();
  if (width == 0) return;
  cudaStream_t s = stream_of(x);
  if (rows == 0) {
    check(cudaMemsetAsync(grad_weight.raw_data(), 0, grad_weight.nbytes(), s), op, "cudaMemsetAsync");
    check(cudaMemsetAsync(grad_bias.raw_data(), 0, grad_bias.nbytes(), s), op, "cudaMemsetAsync");
    return;
  }
  layer_norm_grad_x_kernel<<<row_blocks(rows), kThreads, 0, s>>>(ptr(x), ptr(weight), ptr(mean), ptr(rstd),
                                                                  ptr(grad_out), ptr(grad_x), rows, width,
                                                                  accumulate);
  check_launch(op);
  const int64_t blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  Tensor partial_weight = Tensor::empty({blocks, width}, DType::Float32, x.device());
  Tensor partial_bias = Tensor::empty({blocks, width}, DType::Float32, x.device());
  layer_norm_partial_kernel<<<blocks_for(blocks * width), kThreads, 0, s>>>(
      ptr(x), ptr(mean), ptr(rstd), ptr(grad_out), ptr(partial_weight), ptr(partial_bias), rows, width, blocks);
  check_launch(op);
  layer_norm_param_kernel<<<blocks_for(width), kThreads, 0, s>>>(ptr(partial_weight), ptr(partial_bias),
                                                                  ptr(grad_weight), ptr(grad_bias), width, blocks);
  check_launch(op);
}

}  // namespace

HKT_REGISTER_KERNEL(kernels::layer_norm, DeviceType::CUDA, layer_norm_cuda);
HKT_REGISTER_KERNEL(kernels::layer_norm_backward, DeviceType::CUDA, layer_norm_backward_cuda);

}  // namespace hkt::cuda
