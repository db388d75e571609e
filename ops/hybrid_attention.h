#pragma once
// HKT's hybrid head (SPEC section 4) fused with its multi-scale attention
// (SPEC section 3): one op and one graph node for
//   out = β_h ⊙ A + (1 − β_h) ⊙ c,
//   A = multiscale_attention(q_levels, k_levels, v, level_logits, lengths, stride, causal, BTHD, padded),
//   c = bias + Σ_r weight[:, r] ⊙ v[t − k + 1 + r]   (the causal depthwise convolution of v over time),
// which hybrid_mix(A, v as [B, T, C], weight, bias, β repeated per channel)
// computes as a second op. Fused, the CPU kernels mix each head's rows while
// the attention has them in cache: the forward mixes a query tile as soon as
// its output rows are stored; the backward reads dY itself as dO = β_h · dY
// (β_h scales the dP and dV GEMMs and D; nothing is written for dA) and adds
// the convolution's dV to the head's dV rows after its key tiles. The
// separate mix read A, V and dY and wrote dA and dV from memory: 2.2-5.3 ms of
// HKT's 123-163 ms step on two Zen 4 threads (docs/PERFORMANCE.md).
//
// On other devices than the CPU the op is that composition of
// multiscale_attention and hybrid_mix (their CUDA kernels).
#include <cstdint>
#include <vector>

#include "engine/tensor.h"
#include "ops/attention.h"
#include "ops/multiscale_attention.h"

namespace hkt {

// q_levels[l], k_levels[l]: [B, T_l, H, dh]; v: [B, T, H, dh] (heads
// interleaved, HeadLayout::BTHD; channel c = h · dh + d); level_logits [H, L];
// lengths [B] in [1, T]; weight [C, k] with C = H · dh; bias [C] or
// undefined; gates β [H] (the gate itself, not its logit). Output [B, T, H,
// dh]. With PaddedRows::Zero the rows from lengths[b] on are 0 and pass no
// gradient. Differentiable in every tensor argument but lengths.
Tensor hybrid_multiscale_attention(const std::vector<Tensor>& q_levels, const std::vector<Tensor>& k_levels,
                                   const Tensor& v, const Tensor& level_logits, const Tensor& lengths, int64_t stride,
                                   bool causal, const Tensor& weight, const Tensor& bias, const Tensor& gates,
                                   PaddedRows padded = PaddedRows::Attend);

// β per head [H] repeated over each head's dh channels, [H · dh]: the gates
// hybrid_mix takes, in the composition above.
Tensor gates_per_channel(const Tensor& gates, int64_t head_dim);

namespace kernels {
inline constexpr const char* hybrid_multiscale_attention = "hybrid_multiscale_attention";
inline constexpr const char* hybrid_multiscale_attention_backward = "hybrid_multiscale_attention_backward";
}  // namespace kernels

// The CPU kernels (CUDA has none: the op composes there). attended and
// log_sum_exp are multiscale_attention's out and statistic, saved for the
// backward; out is the mix. Every gradient is written (grad_bias where
// defined); grad_v is added to when dims.accumulate_grad_v.
using HybridAttentionKernel = void(const std::vector<Tensor>& queries, const std::vector<Tensor>& keys,
                                   const Tensor& v, const Tensor& level_weights, const Tensor& lengths,
                                   const Tensor& weight, const Tensor& bias, const Tensor& gates,
                                   const MultiscaleAttentionDims& dims, Tensor& attended, Tensor& log_sum_exp,
                                   Tensor& out);
using HybridAttentionBackwardKernel = void(const std::vector<Tensor>& queries, const std::vector<Tensor>& keys,
                                           const Tensor& v, const Tensor& level_weights, const Tensor& lengths,
                                           const Tensor& weight, const Tensor& bias, const Tensor& gates,
                                           const Tensor& attended, const Tensor& log_sum_exp, const Tensor& grad_out,
                                           const MultiscaleAttentionDims& dims, std::vector<Tensor>& grad_queries,
                                           std::vector<Tensor>& grad_keys, Tensor& grad_v,
                                           Tensor& grad_level_weights, Tensor& grad_weight, Tensor& grad_bias,
                                           Tensor& grad_gates);

}  // namespace hkt
