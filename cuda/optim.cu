// CUDA kernels of the optimizer updates (engine/optim.h): SGD, AdamW and the
// in-place scale used by gradient clipping. The arithmetic follows the CPU
// kernels step by step (hyper-parameters rounded to float32 as they are there).
#include "cuda/kernel_util.cuh"
#include "engine/dispatch.h"
#include "engine/optim.h"

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

__global__ void adamw_kernel(float* p, const float* g, float* m, float* v, int64_t n, AdamWFloats h) {
  HKT_CUDA_LOOP(i, n) {
    float param = p[i];
    param -= h.decay * param;
    const float m_i = h.beta1 * m[i] + h.one_minus_beta1 * g[i];
    const float v_i = h.beta2 * v[i] + h.one_minus_beta2 * g[i] * g[i];
    m[i] = m_i;
    v[i] = v_i;
    const float m_hat = m_i / h.bias_correction1, v_hat = v_i / h.bias_correction2;
    p[i] = param - h.lr * m_hat / (sqrtf(v_hat) + h.eps);
  }
}

void adamw_step_cuda(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq, const AdamWHyper& h) {
  require_float32("adamw_step", param);
  require_float32("adamw_step", grad);
  const int64_t n = param.numel();
  if (n == 0) return;
  AdamWFloats hyper;
  hyper.lr = float(h.lr);
  hyper.decay = float(h.lr * h.weight_decay);
  hyper.beta1 = float(h.beta1);
  hyper.one_minus_beta1 = float(1 - h.beta1);
  hyper.beta2 = float(h.beta2);
  hyper.one_minus_beta2 = float(1 - h.beta2);
  hyper.eps = float(h.eps);
  hyper.bias_correction1 = float(h.bias_correction1);
  hyper.bias_correction2 = float(h.bias_correction2);
  adamw_kernel<<<blocks_for(n), kThreads, 0, stream_of(param)>>>(ptr(param), ptr(grad), ptr(exp_avg),
                                                                  ptr(exp_avg_sq), n, hyper);
  check_launch("adamw_step");
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

HKT_REGISTER_KERNEL("sgd_step", DeviceType::CUDA, sgd_step_cuda);
HKT_REGISTER_KERNEL("adamw_step", DeviceType::CUDA, adamw_step_cuda);
HKT_REGISTER_KERNEL("scale_", DeviceType::CUDA, scale_cuda);

}  // namespace hkt::cuda
