#pragma once
// The optimizer updates as kernels: nn/optim.h's SGD, AdamW and
// clip_grad_norm call them through engine/dispatch, one call per parameter,
// so each backend brings its own (CPU: ops/optim.cpp, CUDA: cuda/optim.cu).
// A backend may also register "adamw_step_multi", every parameter of one
// device in one call, where one launch for all parameters pays (CUDA: a
// launch per parameter costs more than the update of a small one); AdamW
// falls back to "adamw_step" per parameter elsewhere.
#include <vector>

#include "engine/tensor.h"

namespace hkt {

// ---- kernel names and signatures (shared by the CPU and CUDA registrations) ----

namespace kernels {  // the names they register under, declared once (ops/, cuda/ and the lookups use them)
inline constexpr const char* sgd_step = "sgd_step";
inline constexpr const char* adamw_step = "adamw_step";
inline constexpr const char* adamw_step_multi = "adamw_step_multi";
inline constexpr const char* scale_ = "scale_";
}  // namespace kernels

struct SGDHyper {
  double lr, momentum, weight_decay;
  bool first_step;
};
struct AdamWHyper {
  double lr, beta1, beta2, eps, weight_decay, bias_correction1, bias_correction2;
};
// The velocity is unused (and may be undefined) when momentum is 0.
using SGDKernel = void(Tensor& param, const Tensor& grad, Tensor& velocity, const SGDHyper& hyper);
using AdamWKernel = void(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                         const AdamWHyper& hyper);
using ScaleKernel = void(Tensor& x, double factor);

// Lists of equal length, entry i being one parameter, its gradient and state.
using AdamWMultiKernel = void(std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                              std::vector<Tensor>& exp_avg, std::vector<Tensor>& exp_avg_sq, const AdamWHyper& hyper);

}  // namespace hkt
