#pragma once
// Depthwise 1-D convolution over the sequence axis, channels last: the causal
// downsampling of SPEC section 2 and, with stride 1, the causal convolution of
// the hybrid head (SPEC section 4).
#include <cstdint>

#include "engine/tensor.h"

namespace hkt {

// x [B, T, C], weight [C, k], bias [C] (may be undefined) → [B, ceil(T/s), C]:
//
//   Y[b, m, c] = bias[c] + Σ_{r=0}^{k-1} W[c, r] · X[b, m·s + s − k + r, c]
//
// with X = 0 where the index is < 0 or ≥ T (SPEC section 2). The window of
// output m ends at input (m+1)·s − 1, so output m depends on no later input.
// With s = 1 this is SPEC section 4's causal convolution,
// O_conv[i, c] = bc[c] + Σ_r Wc[c, r] · V[i − kc + 1 + r, c].
Tensor depthwise_conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride);

// depthwise_conv1d with the output rows m ≥ lengths[b] set to 0 and passed no
// gradient: on the CPU it computes only the rows m < lengths[b] (HKT's fused
// levels, whose coarse rows past what any valid position reads the pointwise
// projection's GEMM then skips). lengths: integers [B], each in [0, T_out].
// On other devices than the CPU, depthwise_conv1d then masked_fill.
Tensor depthwise_conv1d_masked(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride,
                               const Tensor& lengths);

// ---- kernel names and signatures (shared by the CPU and CUDA registrations) ----

namespace kernels {  // the names they register under, declared once (ops/, cuda/ and the lookups use them)
inline constexpr const char* depthwise_conv1d = "depthwise_conv1d";
inline constexpr const char* depthwise_conv1d_backward = "depthwise_conv1d_backward";
inline constexpr const char* depthwise_conv1d_masked = "depthwise_conv1d_masked";  // CPU only
inline constexpr const char* depthwise_conv1d_masked_backward = "depthwise_conv1d_masked_backward";
}  // namespace kernels

// x [B, T, C], weight [C, k], bias [C] or undefined, out [B, T_out, C].
using DepthwiseConv1dKernel = void(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride,
                                   Tensor& out);
// Writes each defined gradient: grad_x [B, T, C], grad_weight [C, k], grad_bias [C];
// with accumulate, grad_x holds a gradient summed so far and dX is added to it.
using DepthwiseConv1dBackwardKernel = void(const Tensor& x, const Tensor& weight, const Tensor& grad_out,
                                           int64_t stride, Tensor& grad_x, Tensor& grad_weight, Tensor& grad_bias,
                                           bool accumulate);
// The masked forms: lengths int64 [B] on the CPU, the output rows computed per sequence.
using DepthwiseConv1dMaskedKernel = void(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride,
                                         const Tensor& lengths, Tensor& out);
using DepthwiseConv1dMaskedBackwardKernel = void(const Tensor& x, const Tensor& weight, const Tensor& grad_out,
                                                 int64_t stride, const Tensor& lengths, Tensor& grad_x,
                                                 Tensor& grad_weight, Tensor& grad_bias, bool accumulate);

}  // namespace hkt
