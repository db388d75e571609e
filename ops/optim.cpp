// CPU kernels of the optimizer updates (ops/optim.h); nn/optim.cpp holds
// the optimizers that call them.
#include "ops/optim.h"

#include <cmath>

#include "engine/dispatch.h"
#include "ops/common.h"

namespace hkt {

void sgd_step_cpu(Tensor& param, const Tensor& grad, Tensor& velocity, const SGDHyper& h) {
  visit_floating("sgd_step", param.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* p = static_cast<T*>(param.raw_data());
    const T* g = static_cast<const T*>(grad.raw_data());
    T* buf = h.momentum != 0.0 ? static_cast<T*>(velocity.raw_data()) : nullptr;
    const int64_t n = param.numel();
#pragma omp parallel for if (n > HKT_OMP_MIN_WORK)
    for (int64_t i = 0; i < n; ++i) {
      T d = g[i] + T(h.weight_decay) * p[i];
      if (buf != nullptr) {
        buf[i] = h.first_step ? d : T(h.momentum) * buf[i] + d;
        d = buf[i];
      }
      p[i] -= T(h.lr) * d;
    }
  });
}

void adamw_step_cpu(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq, const AdamWHyper& h) {
  visit_floating("adamw_step", param.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* p = static_cast<T*>(param.raw_data());
    const T* g = static_cast<const T*>(grad.raw_data());
    T* m = static_cast<T*>(exp_avg.raw_data());
    T* v = static_cast<T*>(exp_avg_sq.raw_data());
    const int64_t n = param.numel();
#pragma omp parallel for if (n > HKT_OMP_MIN_WORK)
    for (int64_t i = 0; i < n; ++i) {
      p[i] -= T(h.lr * h.weight_decay) * p[i];
      m[i] = T(h.beta1) * m[i] + T(1 - h.beta1) * g[i];
      v[i] = T(h.beta2) * v[i] + T(1 - h.beta2) * g[i] * g[i];
      T m_hat = m[i] / T(h.bias_correction1), v_hat = v[i] / T(h.bias_correction2);
      p[i] -= T(h.lr) * m_hat / (std::sqrt(v_hat) + T(h.eps));
    }
  });
}

void scale_cpu(Tensor& x, double factor) {
  visit_floating("scale_", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* p = static_cast<T*>(x.raw_data());
    const int64_t n = x.numel();
#pragma omp parallel for if (n > HKT_OMP_MIN_WORK)
    for (int64_t i = 0; i < n; ++i) p[i] *= T(factor);
  });
}

HKT_REGISTER_KERNEL(kernels::sgd_step, DeviceType::CPU, sgd_step_cpu);
HKT_REGISTER_KERNEL(kernels::adamw_step, DeviceType::CPU, adamw_step_cpu);
HKT_REGISTER_KERNEL(kernels::scale_, DeviceType::CPU, scale_cpu);

}  // namespace hkt
