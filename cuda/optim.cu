// CUDA kernels of the optimizer updates (ops/optim.h; CPU: ops/optim.cpp):
// SGD, AdamW (per parameter, and over all parameters in one launch per 32)
// and the in-place scale used by gradient clipping. The arithmetic follows the CPU
// kernels step by step (hyper-parameters rounded to float32 as they are there).
#include <algorithm>

#include "cuda/kernel_util.cuh"
#include "engine/dispatch.h"
#include "ops/optim.h"

namespace hkt::cuda {
namespace {

__global__ void sgd_kernel(float* p, const float* g, float* velocity, int64_t n, float lr, float momentum,
                           float weight_decay, bool first_step) {
  HKT_CUDA_LOOP(i, n) {
    float d = g[i] + weight_decay * p[i];
    if (velocity != nullptr) {
      velocity[i] = first_step ? d : momentum * velocity[i] + d;
      d = velocity[i];
    }
    p[i] -= lr * d;
  }
}

void sgd_step_cuda(Tensor& param, const Tensor& grad, Tensor& velocity, const SGDHyper& h) {
  require_float32("sgd_step", param);
  require_float32("sgd_step", grad);
  const int64_t n = param.numel();
  if (n == 0) return;
  float* v = h.momentum != 0.0 ? ptr(velocity) : nullptr;
  sgd_kernel<<<blocks_for(n), kThreads, 0, stream_of(param)>>>(ptr(param), ptr(grad), v, n, float(h.lr),
                                                                float(h.momentum), float(h.weight_decay),
                                                                h.first_step);
  check_launch("sgd_step");
}

struct AdamWFloats {
  float lr, decay, beta1, one_minus_beta1, beta2, one_minus_beta2, eps, bias_correction1, bias_correction2;
};

// One element of the AdamW update, in the CPU kernel's order of operations.
__device__ inline void adamw_update(float* p, const float* g, float* m, float* v, int64_t i, const AdamWFloats& h) {
  float param = p[i];
  param -= h.decay * param;
  const float m_i = h.beta1 * m[i] + h.one_minus_beta1 * g[i];
  const float v_i = h.beta2 * v[i] + h.one_minus_beta2 * g[i] * g[i];
  m[i] = m_i;
  v[i] = v_i;
  const float m_hat = m_i / h.bias_correction1, v_hat = v_i / h.bias_correction2;
  p[i] = param - h.lr * m_hat / (sqrtf(v_hat) + h.eps);
}

__global__ void adamw_kernel(float* p, const float* g, float* m, float* v, int64_t n, AdamWFloats h) {
  HKT_CUDA_LOOP(i, n) adamw_update(p, g, m, v, i, h);
}

AdamWFloats adamw_floats(const AdamWHyper& h) {
  AdamWFloats f;
  f.lr = float(h.lr);
  f.decay = float(h.lr * h.weight_decay);
  f.beta1 = float(h.beta1);
  f.one_minus_beta1 = float(1 - h.beta1);
  f.beta2 = float(h.beta2);
  f.one_minus_beta2 = float(1 - h.beta2);
  f.eps = float(h.eps);
  f.bias_correction1 = float(h.bias_correction1);
  f.bias_correction2 = float(h.bias_correction2);
  return f;
}

void adamw_step_cuda(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq, const AdamWHyper& h) {
  require_float32("adamw_step", param);
  require_float32("adamw_step", grad);
  const int64_t n = param.numel();
  if (n == 0) return;
  const AdamWFloats hyper = adamw_floats(h);
  adamw_kernel<<<blocks_for(n), kThreads, 0, stream_of(param)>>>(ptr(param), ptr(grad), ptr(exp_avg),
                                                                  ptr(exp_avg_sq), n, hyper);
  check_launch("adamw_step");
}

// Up to kChunk tensors per launch, passed by value in the kernel's arguments
// (about 1.3 KB, under the 4 KB limit): no pointer table to copy to the device.
constexpr int kChunk = 32;
struct AdamWChunk {
  float* p[kChunk];
  const float* g[kChunk];
  float* m[kChunk];
  float* v[kChunk];
  int64_t n[kChunk];
};

// blockIdx.y picks the tensor; blocks along x stride over its elements.
__global__ void adamw_multi_kernel(AdamWChunk chunk, AdamWFloats h) {
  const int t = blockIdx.y;
  HKT_CUDA_LOOP(i, chunk.n[t]) adamw_update(chunk.p[t], chunk.g[t], chunk.m[t], chunk.v[t], i, h);
}

void adamw_step_multi_cuda(std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                           std::vector<Tensor>& exp_avg, std::vector<Tensor>& exp_avg_sq, const AdamWHyper& h) {
  const char* op = "adamw_step";
  const AdamWFloats hyper = adamw_floats(h);
  for (size_t start = 0; start < params.size(); start += kChunk) {
    AdamWChunk chunk{};
    int count = 0;
    int64_t largest = 0;
    for (size_t i = start; i < params.size() && count < kChunk; ++i, ++count) {
      require_float32(op, params[i]);
      require_float32(op, grads[i]);
      chunk.p[count] = ptr(params[i]);
      chunk.g[count] = ptr(grads[i]);
      chunk.m[count] = ptr(exp_avg[i]);
      chunk.v[count] = ptr(exp_avg_sq[i]);
      chunk.n[count] = params[i].numel();
      largest = std::max(largest, chunk.n[count]);
    }
    if (largest == 0) continue;
    const dim3 grid(std::min(blocks_for(largest), 1024u), static_cast<unsigned>(count));
    adamw_multi_kernel<<<grid, kThreads, 0, stream_of(params[start])>>>(chunk, hyper);
    check_launch(op);
  }
}

__global__ void scale_kernel(float* x, int64_t n, float factor) {
  HKT_CUDA_LOOP(i, n) x[i] *= factor;
}

void scale_cuda(Tensor& x, double factor) {
  require_float32("scale_", x);
  const int64_t n = x.numel();
  if (n == 0) return;
  scale_kernel<<<blocks_for(n), kThreads, 0, stream_of(x)>>>(ptr(x), n, float(factor));
  check_launch("scale_");
}

}  // namespace

HKT_REGISTER_KERNEL(kernels::sgd_step, DeviceType::CUDA, sgd_step_cuda);
HKT_REGISTER_KERNEL(kernels::adamw_step, DeviceType::CUDA, adamw_step_cuda);
HKT_REGISTER_KERNEL(kernels::adamw_step_multi, DeviceType::CUDA, adamw_step_multi_cuda);
HKT_REGISTER_KERNEL(kernels::scale_, DeviceType::CUDA, scale_cuda);

}  // namespace hkt::cuda
