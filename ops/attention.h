#pragma once
// Fused scaled-dot-product attention, flash-attention style: the T × T score
// matrix is never stored, forward or backward, so memory is linear in T.
// ops/multiscale_attention.h is HKT's fused score (SPEC section 3) on the same plan.
#include <cstdint>

#include "engine/tensor.h"

namespace hkt {

// Where the heads are in q, k, v, the output and their gradients: BHTD is
// [B, H, T, dh] (PyTorch's scaled_dot_product_attention), BTHD is
// [B, T, H, dh] (FlashAttention's): a linear layer's [B, T, d] output
// reshaped, so a model passes its projections in and takes the output out
// with no permute copy either way.
enum class HeadLayout { BHTD, BTHD };

// What the fused ops return at query rows past an example's length (padded
// positions). Attend: what every other row gets, softmax over the valid keys
// (the composed masked_fill + softmax's answer; SPEC section 3). Zero: 0,
// with no work spent on those rows and no gradient through them (the output
// there is constant), for callers that never read them: in the models the
// pooling reads only valid rows and no valid row reads a padded query's
// output, so logits and gradients are the same either way (FlashAttention's
// variable-length kernels leave padding out the same way). On the CPU the
// kernels skip the rows; on other devices the op zeroes them after its kernel
// (masked_fill, whose backward zeroes their gradient).
enum class PaddedRows { Attend, Zero };

// out = softmax(q kᵀ / sqrt(dh) + mask) v, per batch item and head.
// q, k, v: [B, H, T, dh] (or [B, T, H, dh] with HeadLayout::BTHD;
// float32/float64, same dtype and device); lengths: [B]
// int32/int64, 1 ≤ lengths[b] ≤ T, the valid keys of example b: keys
// j ≥ lengths[b] are masked, and with `causal` so are keys j > i. Query rows
// at padded positions attend to the valid keys, as the composed masked_fill +
// softmax does, or are 0 with PaddedRows::Zero. Output in q's layout;
// differentiable in q, k, v. The CPU backward skips the query rows after a
// head's last row whose output gradient is nonzero: they add exactly nothing
// (the models' padded rows).
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& lengths, bool causal,
                 HeadLayout layout = HeadLayout::BHTD, PaddedRows padded = PaddedRows::Attend);

// The kernels' problem, shared with CUDA kernels registered under the same
// names ("attention", "attention_backward", "multiscale_attention", ...).
// `tile` is the CPU kernels' tile edge (queries × keys), attention_cpu_tile().
// heads_interleaved (HeadLayout::BTHD) reaches the CPU kernels only: for
// other devices the ops permute to [B, H, T, dh] and back.
struct AttentionDims {
  int64_t batch = 0, heads = 0, length = 0, head_dim = 0;
  bool causal = false;
  int64_t tile = 128;  // filled from attention_cpu_tile(causal)
  bool heads_interleaved = false;
  bool zero_padded_rows = false;  // PaddedRows::Zero; reaches the CPU kernels only (other devices: masked_fill after)
};

// The tile edge the CPU kernels of both fused ops use for a problem: the one
// set, or by default 128 bidirectionally and 64 causally (the fastest at
// T = 512, dh = 16: a causal diagonal tile computes about half its scores
// for nothing, so a larger tile wastes more). A partial last key tile
// computes only its keys, rounded up to the SIMD width, so a large tile
// costs padded batches little. set_attention_cpu_tile takes 8, 16, 32, 64 or
// 128 for every call, or 0 for the default again; small tiles let tests
// cross many tile boundaries at small T.
int64_t attention_cpu_tile(bool causal = false);
void set_attention_cpu_tile(int64_t tile);

// The kernels' signatures, one declaration for every device's registration
// (ops/attention.cpp on the CPU, cuda/attention.cu on CUDA).
// q, k, v, out: [B, H, T, dh]; lengths: int64 [B]; log_sum_exp: [B, H, T], the
// softmax's row statistic in base 2, log2 Σ_j exp(S_ij) = lse · log2 e, on every
// device (the CPU kernels' softmax runs on exp2), so devices' results compare.
using AttentionKernel = void(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& lengths,
                             const AttentionDims& dims, Tensor& out, Tensor& log_sum_exp);
// out and log_sum_exp from the forward; grad_out: [B, H, T, dh]; writes every element of grad_q, grad_k, grad_v.
using AttentionBackwardKernel = void(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& lengths,
                                     const Tensor& out, const Tensor& log_sum_exp, const Tensor& grad_out,
                                     const AttentionDims& dims, Tensor& grad_q, Tensor& grad_k, Tensor& grad_v);

}  // namespace hkt
