#pragma once
// Normalisation layers.
#include "engine/tensor.h"

namespace hkt {

// LayerNorm over the last axis, as torch.nn.functional.layer_norm with
// normalized_shape = [D] (biased variance, eps inside the square root):
//   y = (x − mean) / sqrt(var + eps) ⊙ weight + bias
// x: [..., D]; weight, bias: [D]. SPEC §5 fixes eps = 1e-5.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps = 1e-5);

// ---- kernel names and signatures (shared by the CPU and CUDA registrations) ----

namespace kernels {  // the names they register under, declared once (ops/, cuda/ and the lookups use them)
inline constexpr const char* layer_norm = "layer_norm";
inline constexpr const char* layer_norm_backward = "layer_norm_backward";
}  // namespace kernels

// x, out: [rows, D]; weight, bias: [D]; mean, rstd: [rows], saved for backward.
using LayerNormKernel = void(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, Tensor& out,
                             Tensor& mean, Tensor& rstd);
// grad_out, grad_x: [rows, D]; grad_weight, grad_bias: [D].
// With accumulate, grad_x holds a gradient summed so far and dX is added to it.
using LayerNormBackwardKernel = void(const Tensor& x, const Tensor& weight, const Tensor& mean, const Tensor& rstd,
                                     const Tensor& grad_out, Tensor& grad_x, Tensor& grad_weight,
                                     Tensor& grad_bias, bool accumulate);

}  // namespace hkt
