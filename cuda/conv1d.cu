// CUDA kernels of the depthwise causal conv1d (ops/conv1d.h). x [B, T, C],
// weight [C, k], output m reads inputs t = m·s + s − k + r for taps r < k.
#include "cuda/kernel_util.cuh"
#include "engine/dispatch.h"
#include "ops/conv1d.h"

namespace hkt::cuda {
namespace {

__global__ void conv_forward_kernel(const float* x, const float* weight, const float* bias, float* out, int64_t B,
                                    int64_t length, int64_t C, int64_t k, int64_t stride, int64_t T_out) {
  HKT_CUDA_LOOP(i, B * T_out * C) {
    const int64_t c = i % C, m = (i / C) % T_out, b = i / (C * T_out);
    float y = bias != nullptr ? bias[c] : 0.0f;
    for (int64_t r = 0; r < k; ++r) {
      const int64_t t = m * stride + stride - k + r;
      if (t < 0 || t >= length) continue;
      y += weight[c * k + r] * x[(b * length + t) * C + c];
    }
    out[i] = y;
  }
}

void depthwise_conv1d_cuda(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride, Tensor& out) {
  const char* op = "depthwise_conv1d";
  require_float32(op, x);
  require_float32(op, weight);
  require_float32(op, bias);
  const int64_t B = x.size(0), length = x.size(1), C = x.size(2), k = weight.size(1), T_out = out.size(1);
  if (out.numel() == 0) return;
  conv_forward_kernel<<<blocks_for(out.numel()), kThreads, 0, stream_of(x)>>>(
      ptr(x), ptr(weight), bias.defined() ? ptr(bias) : nullptr, ptr(out), B, length, C, k, stride, T_out);
  check_launch(op);
}

// dX[b, t, c] = Σ_r W[c, r] · dY[b, m, c] over the taps r whose output m reads t.
// With accumulate, grad_x holds a gradient summed so far, and dX is added to it.
__global__ void conv_grad_x_kernel(const float* weight, const float* grad_out, float* grad_x, int64_t B,
                                   int64_t length, int64_t C, int64_t k, int64_t stride, int64_t T_out,
                                   bool accumulate) {
  HKT_CUDA_LOOP(i, B * length * C) {
    const int64_t c = i % C, t = (i / C) % length, b = i / (C * length);
    float dx = 0.0f;
    for (int64_t r = 0; r < k; ++r) {
      const int64_t shifted = t - (stride - k) - r;  // = m·s for the output m reading t at tap r
      if (shifted < 0 || shifted % stride != 0 || shifted / stride >= T_out) continue;
      dx += weight[c * k + r] * grad_out[(b * T_out + shifted / stride) * C + c];
    }
    grad_x[i] = accumulate ? grad_x[i] + dx : dx;
  }
}

// One block per (channel c, slot r): slot r < k gives dW[c, r] = Σ_{b,m} dY[b, m, c] · X[b, m·s + s − k + r, c],
// slot k gives dbias[c] = Σ_{b,m} dY[b, m, c]. Block reductions in a fixed order.
__global__ void conv_grad_params_kernel(const float* x, const float* grad_out, float* grad_weight, float* grad_bias,
                                        int64_t B, int64_t length, int64_t C, int64_t k, int64_t stride,
                                        int64_t T_out) {
  for (int64_t slot = blockIdx.x; slot < C * (k + 1); slot += gridDim.x) {
    const int64_t c = slot / (k + 1), r = slot % (k + 1);
    const bool is_bias = r == k;
    if ((is_bias && grad_bias == nullptr) || (!is_bias && grad_weight == nullptr)) continue;  // uniform per block
    float total = 0.0f;
    for (int64_t item = threadIdx.x; item < B * T_out; item += blockDim.x) {
      const int64_t b = item / T_out, m = item % T_out;
      const float dy = grad_out[(b * T_out + m) * C + c];
      if (is_bias) {
        total += dy;
      } else {
        const int64_t t = m * stride + stride - k + r;
        if (t >= 0 && t < length) total += dy * x[(b * length + t) * C + c];
      }
    }
    total = block_sum(total);
    if (threadIdx.x == 0) {
      if (is_bias) grad_bias[c] = total;
      else grad_weight[c * k + r] = total;
    }
  }
}

void depthwise_conv1d_backward_cuda(const Tensor& x, const Tensor& weight, const Tensor& grad_out, int64_t stride,
                                    Tensor& grad_x, Tensor& grad_weight, Tensor& grad_bias, bool accumulate) {
  const char* op = "depthwise_conv1d_backward";
  require_float32(op, x);
  require_float32(op, weight);
  require_float32(op, grad_out);
  const int64_t B = x.size(0), length = x.size(1), C = x.size(2), k = weight.size(1), T_out = grad_out.size(1);
  cudaStream_t s = stream_of(x);
  if (grad_x.defined() && grad_x.numel() > 0) {
    conv_grad_x_kernel<<<blocks_for(grad_x.numel()), kThreads, 0, s>>>(ptr(weight), ptr(grad_out), ptr(grad_x), B,
                                                                        length, C, k, stride, T_out, accumulate);
    check_launch(op);
  }
  if ((!grad_weight.defined() && !grad_bias.defined()) || C == 0) return;
  conv_grad_params_kernel<<<row_blocks(C * (k + 1)), kThreads, 0, s>>>(
      ptr(x), ptr(grad_out), grad_weight.defined() ? ptr(grad_weight) : nullptr,
      grad_bias.defined() ? ptr(grad_bias) : nullptr, B, length, C, k, stride, T_out);
  check_launch(op);
}

}  // namespace

HKT_REGISTER_KERNEL(kernels::depthwise_conv1d, DeviceType::CUDA, depthwise_conv1d_cuda);
HKT_REGISTER_KERNEL(kernels::depthwise_conv1d_backward, DeviceType::CUDA, depthwise_conv1d_backward_cuda);

}  // namespace hkt::cuda
