#pragma once
// The hybrid head's mix (SPEC section 4): β ⊙ attended + (1 − β) ⊙ conv(values),
// conv the depthwise causal convolution (stride 1), as one op:
//   hybrid_mix(A, V, W, b, β) = lerp(depthwise_conv1d(V, W, b, 1), A, β).
// Composed, the convolution's output is written, read back by lerp, and its
// gradient written again for the convolution's backward, which also re-reads
// every row once more for dW; here the forward reads A and V and writes the
// result once, and the backward reads dY, A and V once, recomputing the
// convolution a row at a time, and writes dA and dV (dV added into the
// gradient V already has, where autograd hands it over). β is one value per
// channel. On other devices than the CPU the op is that composition of
// depthwise_conv1d and lerp (their CUDA kernels).
#include "engine/tensor.h"

namespace hkt {

// attended, values [B, T, C]; weight [C, k]; bias [C] or undefined; gates [C].
// With lengths (integers [B], each in [0, T]) the rows of padded positions,
// t ≥ lengths[b], are 0 and pass no gradient, at no cost: as the fused
// attention leaves its padded rows (PaddedRows::Zero), so that the output
// projection's GEMM skips them.
Tensor hybrid_mix(const Tensor& attended, const Tensor& values, const Tensor& weight, const Tensor& bias,
                  const Tensor& gates, const Tensor& lengths = Tensor());

namespace kernels {
inline constexpr const char* hybrid_mix = "hybrid_mix";
inline constexpr const char* hybrid_mix_backward = "hybrid_mix_backward";
}  // namespace kernels

// out = c + β ⊙ (attended − c), c = bias + Σ_r W[:, r] ⊙ values[t − k + 1 + r];
// lengths: int64 [B] on the CPU, or undefined (every row valid).
using HybridMixKernel = void(const Tensor& attended, const Tensor& values, const Tensor& weight, const Tensor& bias,
                             const Tensor& gates, const Tensor& lengths, Tensor& out);
// Each defined gradient is written: grad_attended [B, T, C]; grad_values [B, T,
// C] (added to its values when accumulate); grad_weight [C, k]; grad_bias [C];
// grad_gates [C].
using HybridMixBackwardKernel = void(const Tensor& attended, const Tensor& values, const Tensor& weight,
                                     const Tensor& bias, const Tensor& gates, const Tensor& lengths,
                                     const Tensor& grad_out,
                                     Tensor& grad_attended, Tensor& grad_values, Tensor& grad_weight,
                                     Tensor& grad_bias, Tensor& grad_gates, bool accumulate);

}  // namespace hkt
