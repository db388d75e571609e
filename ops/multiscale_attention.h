#pragma once
// HKT's fused multi-scale attention (SPEC section 3) as one op, tiled like
// ops/attention.h: no T × T score matrix, forward or backward.
#include <cstdint>
#include <vector>

#include "engine/tensor.h"
#include "ops/attention.h"

namespace hkt {

// λ = softmax(level_logits) over levels, and with the index maps of
// ops/index.h (query_index_map, key_index_map):
//   S[b,h,i,j] = Σ_l λ[h,l] · q_l[b,h,q_l(i)] · k_l[b,h,k_l(j)] / sqrt(dh) · [term l allowed]
//   S = −inf at padded keys j ≥ lengths[b] and, causally, at j > i
//   out = softmax_j(S) v
// q_levels[l], k_levels[l]: [B, H, T_l, dh] with T_l = level_length(T, l, stride);
// v: [B, H, T, dh]; level_logits: [H, L]; lengths: [B] int32/int64 in [1, T];
// stride ≥ 2. Output [B, H, T, dh]; differentiable in every q_levels[l],
// k_levels[l], v and level_logits. With HeadLayout::BTHD every [B, H, ·, dh]
// above is [B, ·, H, dh]; PaddedRows::Zero makes the padded query rows 0
// (ops/attention.h).
Tensor multiscale_attention(const std::vector<Tensor>& q_levels, const std::vector<Tensor>& k_levels, const Tensor& v,
                            const Tensor& level_logits, const Tensor& lengths, int64_t stride, bool causal,
                            HeadLayout layout = HeadLayout::BHTD, PaddedRows padded = PaddedRows::Attend);

// The kernels' problem ("multiscale_attention", "multiscale_attention_backward"):
// level l has T_l = level_length(length, l, stride) rows and block s^l.
struct MultiscaleAttentionDims : AttentionDims {
  int64_t levels = 1, stride = 2;
  // Backward, CPU kernel only: grad_v holds a gradient summed so far (autograd's
  // take_gradient_sum) and dV is added to it. The op sets it only on the CPU.
  bool accumulate_grad_v = false;
};

// The kernels' signatures, shared by ops/multiscale_attention.cpp (CPU) and
// cuda/multiscale_attention.cu (CUDA).
// queries[l], keys[l]: [B, H, T_l, dh]; v, out: [B, H, T, dh]; level_weights: λ [H, L];
// lengths: int64 [B]; log_sum_exp: [B, H, T] in base 2, as in ops/attention.h.
using MultiscaleAttentionKernel = void(const std::vector<Tensor>& queries, const std::vector<Tensor>& keys,
                                       const Tensor& v, const Tensor& level_weights, const Tensor& lengths,
                                       const MultiscaleAttentionDims& dims, Tensor& out, Tensor& log_sum_exp);
// Writes every element of the gradients (grad_level_weights: dL/dλ [H, L]).
using MultiscaleAttentionBackwardKernel = void(const std::vector<Tensor>& queries, const std::vector<Tensor>& keys,
                                               const Tensor& v, const Tensor& level_weights, const Tensor& lengths,
                                               const Tensor& out, const Tensor& log_sum_exp, const Tensor& grad_out,
                                               const MultiscaleAttentionDims& dims, std::vector<Tensor>& grad_queries,
                                               std::vector<Tensor>& grad_keys, Tensor& grad_v,
                                               Tensor& grad_level_weights);

}  // namespace hkt
