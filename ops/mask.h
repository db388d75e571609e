#pragma once
// Masking, as torch.Tensor.masked_fill.
#include "engine/tensor.h"

namespace hkt {

// out = value where mask ≠ 0, else x. mask may have any dtype and must
// broadcast to x's shape (x's shape is the output's; e.g. a [B, 1, T] key
// mask over [B, T, T] scores). value may be ±inf. The gradient passes to x
// where the mask is zero and is zero where it filled; mask gets none.
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);

// 1 at the padded positions t ≥ lengths[b] of B examples of T positions, 0
// elsewhere: B · T values in `shape` (B and T in that order, every other axis
// 1), a masked_fill mask over the keys or the query rows of a [B, ·, ·, ·]
// tensor. lengths checked by the caller.
Tensor padded_positions(const Tensor& lengths, int64_t length, const Shape& shape, DType dtype, Device device);

// x [B, T, …] with the rows t ≥ lengths[b] (padded positions) set to 0, by
// masked_fill: the composed form of the ops that skip padded rows on the CPU
// (layer_norm_masked, gelu_masked, hybrid_mix with lengths). lengths checked
// by the caller.
Tensor zero_padded_rows(const Tensor& x, const Tensor& lengths);

// ---- kernel names and signatures (shared by the CPU and CUDA registrations) ----

namespace kernels {  // the names they register under, declared once (ops/, cuda/ and the lookups use them)
inline constexpr const char* masked_fill = "masked_fill";
}  // namespace kernels

// x, out: the same shape; mask: any dtype, broadcast to x's shape.
using MaskedFillKernel = void(const Tensor& x, const Tensor& mask, double value, Tensor& out);

}  // namespace hkt
