#pragma once
// Internal to the fused attention ops (ops/attention.cpp,
// ops/multiscale_attention.cpp, ops/hybrid_attention.cpp): argument helpers
// shared by the ops and their references. The CPU kernels are
// ops/attention_cpu_kernels.h.
#include <cstdint>
#include <vector>

#include "engine/tensor.h"
#include "ops/attention.h"
#include "ops/attention_cpu.h"
#include "ops/multiscale_attention.h"

namespace hkt::attention_tiles {

// The CPU kernels' problem (ops/attention_cpu.h) without its levels;
// lengths: the checked int64 lengths on the CPU.
attention_cpu::Problem cpu_problem(const AttentionDims& dims, const Tensor& lengths);

// tile must be one of 8, 16, 32, 64, 128 (the CPU kernels' tile edge); messages name `op`.
void check_tile(const char* op, int64_t tile);

// The problem's sizes from a [B, H, T, dh] (BTHD: [B, T, H, dh]) tensor, with the CPU tile edge.
inline void fill_dims(AttentionDims& dims, const Tensor& like, bool causal, HeadLayout layout) {
  dims.heads_interleaved = layout == HeadLayout::BTHD;
  dims.batch = like.size(0);
  dims.heads = like.size(dims.heads_interleaved ? 2 : 1);
  dims.length = like.size(dims.heads_interleaved ? 1 : 2);
  dims.head_dim = like.size(3);
  dims.causal = causal;
  dims.tile = attention_cpu_tile(causal);
}

// "[B, H, T, dh]" or "[B, T, H, dh]", for messages.
inline const char* layout_str(HeadLayout layout) {
  return layout == HeadLayout::BTHD ? "[B, T, H, dh]" : "[B, H, T, dh]";
}

// [B, T, H, dh] ↔ [B, H, T, dh] (the permute is its own inverse): the CUDA
// kernels read heads first, so the ops convert a BTHD problem for them.
Tensor swap_heads_and_time(const Tensor& t);

// out with its query rows from lengths[b] on set to 0 (masked_fill with
// padded_positions, ops/mask.h, so their gradient is 0 too):
// PaddedRows::Zero on devices whose kernels compute every row.
// out: [B, H, T, dh] ([B, T, H, dh] with BTHD); lengths checked.
Tensor zero_padded_rows(const Tensor& out, const Tensor& lengths, HeadLayout layout);

// multiscale_attention's argument checks; messages name `op`.
void check_multiscale_args(const char* op, const std::vector<Tensor>& q_levels, const std::vector<Tensor>& k_levels,
                           const Tensor& v, const Tensor& level_logits, int64_t stride, HeadLayout layout);

// HKT's hybrid head for the multi-scale CPU kernels (attention_cpu::HybridMix;
// ops/hybrid_attention.cpp): weight [C, k], bias [C] or undefined, gates β [H];
// mixed: the forward's output Y; partials: the backward's [B · H, k + 2, dh].
struct MixTensors {
  Tensor weight, bias, gates, mixed, partials;
};

// The multi-scale CPU kernels ("multiscale_attention", its backward) with a
// mix folded in, or none (mix null); lengths: the checked int64 lengths.
void multiscale_forward_cpu(const std::vector<Tensor>& queries, const std::vector<Tensor>& keys, const Tensor& v,
                            const Tensor& level_weights, const Tensor& lengths, const MultiscaleAttentionDims& dims,
                            Tensor& out, Tensor& log_sum_exp, const MixTensors* mix);
void multiscale_backward_cpu(const std::vector<Tensor>& queries, const std::vector<Tensor>& keys, const Tensor& v,
                             const Tensor& level_weights, const Tensor& lengths, const Tensor& out,
                             const Tensor& log_sum_exp, const Tensor& grad_out, const MultiscaleAttentionDims& dims,
                             std::vector<Tensor>& grad_queries, std::vector<Tensor>& grad_keys, Tensor& grad_v,
                             Tensor& grad_level_weights, const MixTensors* mix);

}  // namespace hkt::attention_tiles
