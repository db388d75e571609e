#pragma once
// Gathers along one axis (index_select, embedding, upsample) and the index
// maps of HKT's nearest upsampling (SPEC section 3). Every gather's gradient
// is a scatter-add ("index_add") whose result does not depend on the thread count.
#include <cstdint>

#include "engine/tensor.h"

namespace hkt {

// out[..., p, ...] = x[..., index[p], ...] along `axis`; index is 1-D int32 or
// int64 with values in [0, x.size(axis)). Repeated indices add up in the gradient.
Tensor index_select(const Tensor& x, int64_t axis, const Tensor& index);

// Rows of weight [V, d] picked by tokens (int32/int64, any shape) → [..., d],
// as torch::nn::Embedding. The gradient adds into the rows of repeated tokens.
Tensor embedding(const Tensor& weight, const Tensor& tokens);

// T_l of SPEC section 1: T_0 = T, T_l = ceil(T_{l-1} / stride).
int64_t level_length(int64_t T, int64_t level, int64_t stride);

// The index maps of SPEC section 3, int64 [T], values in [0, T_l) (and −1):
//   query, bidirectional: q_l(i) = floor(i / s^l)
//   query, causal:        q_l(i) = floor((i + 1) / s^l) − 1, the last complete
//                         block at or before i; −1 where none is (term l not allowed)
//   key:                  k_l(j) = floor(j / s^l)
Tensor query_index_map(int64_t T, int64_t level, int64_t stride, bool causal, Device device = Device::cpu());
Tensor key_index_map(int64_t T, int64_t level, int64_t stride, Device device = Device::cpu());

// Nearest upsampling along `axis` by an index map (1-D int32/int64):
// out[..., i, ...] = x[..., map[i], ...], and 0 where map[i] = −1. The gradient
// scatter-adds into x, skipping −1.
Tensor upsample(const Tensor& x, int64_t axis, const Tensor& index_map);

// ---- kernel names and signatures (shared by the CPU and CUDA registrations) ----

namespace kernels {  // the names they register under, declared once (ops/, cuda/ and the lookups use them)
inline constexpr const char* index_select = "index_select";
inline constexpr const char* index_add = "index_add";
}  // namespace kernels

// x and out seen as [outer, extent, inner] around `axis`, out's extent being
// index.numel(): out[o, p, :] = x[o, index[p], :], zero where index[p] < 0.
using IndexSelectKernel = void(const Tensor& x, const Tensor& index, int64_t axis, Tensor& out);
// grad_in[o, index[p], :] += grad_out[o, p, :], skipping index[p] < 0.
using IndexAddKernel = void(const Tensor& grad_out, const Tensor& index, int64_t axis, Tensor& grad_in);

}  // namespace hkt
