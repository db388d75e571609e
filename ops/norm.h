#pragma once
// Normalisation layers.
#include "engine/tensor.h"

namespace hkt {

// LayerNorm over the last axis, as torch.nn.functional.layer_norm with
// normalized_shape = [D] (biased variance, eps inside the square root):
//   y = (x − mean) / sqrt(var + eps) ⊙ weight + bias
// x: [..., D]; weight, bias: [D]. SPEC §5 fixes eps = 1e-5.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps = 1e-5);

// layer_norm of x [B, T, D] with the rows of padded positions, t ≥ lengths[b],
// set to 0: layer_norm(x, …) ⊙ valid_rows as one op that spends nothing on
// those rows (the models' sequences; in a batch with lengths spread over
// T/2 … T a quarter of the rows) and passes them no gradient. lengths:
// integers [B], each in [0, T]. On the CPU one kernel; elsewhere layer_norm
// then masked_fill.
Tensor layer_norm_masked(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& lengths,
                         double eps = 1e-5);

// ---- kernel names and signatures (shared by the CPU and CUDA registrations) ----

namespace kernels {  // the names they register under, declared once (ops/, cuda/ and the lookups use them)
inline constexpr const char* layer_norm = "layer_norm";
inline constexpr const char* layer_norm_backward = "layer_norm_backward";
inline constexpr const char* layer_norm_masked = "layer_norm_masked";  // CPU only
inline constexpr const char* layer_norm_masked_backward = "layer_norm_masked_backward";
}  // namespace kernels

// x, out: [rows, D]; weight, bias: [D]; mean, rstd: [rows], saved for backward.
using LayerNormKernel = void(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, Tensor& out,
                             Tensor& mean, Tensor& rstd);
// grad_out, grad_x: [rows, D]; grad_weight, grad_bias: [D].
// With accumulate, grad_x holds a gradient summed so far and dX is added to it.
using LayerNormBackwardKernel = void(const Tensor& x, const Tensor& weight, const Tensor& mean, const Tensor& rstd,
                                     const Tensor& grad_out, Tensor& grad_x, Tensor& grad_weight,
                                     Tensor& grad_bias, bool accumulate);

// The masked forms: lengths int64 [B] on the CPU; x [B, T, D].
using LayerNormMaskedKernel = void(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                                   const Tensor& lengths, Tensor& out, Tensor& mean, Tensor& rstd);
using LayerNormMaskedBackwardKernel = void(const Tensor& x, const Tensor& weight, const Tensor& mean,
                                           const Tensor& rstd, const Tensor& lengths, const Tensor& grad_out,
                                           Tensor& grad_x, Tensor& grad_weight, Tensor& grad_bias, bool accumulate);

}  // namespace hkt
