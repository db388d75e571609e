#pragma once
// Reductions along one axis or over all elements.
#include "engine/tensor.h"
#include "ops/common.h"  // AxisSplit

namespace hkt {

Tensor sum(const Tensor& x, int64_t axis, bool keepdim = false);
Tensor sum(const Tensor& x);  // all elements, shape []
Tensor mean(const Tensor& x, int64_t axis, bool keepdim = false);
Tensor mean(const Tensor& x);
// The gradient goes to the first maximal element of each slice.
Tensor max(const Tensor& x, int64_t axis, bool keepdim = false);
Tensor max(const Tensor& x);

// Sums a broadcast gradient back to `shape` (the inverse of broadcasting).
Tensor sum_to(const Tensor& x, const Shape& shape);

// ---- kernel names and signatures (shared by the CPU and CUDA registrations) ----

namespace kernels {  // the names they register under, declared once (ops/, cuda/ and the lookups use them)
inline constexpr const char* sum = "sum";
inline constexpr const char* max = "max";
inline constexpr const char* max_backward = "max_backward";
}  // namespace kernels

// x viewed as [outer, extent, inner]; out is [outer, inner].
using ReduceKernel = void(const Tensor& x, AxisSplit split, Tensor& out);
// max also writes the index of the winner along the axis: [outer, inner] int64.
using MaxKernel = void(const Tensor& x, AxisSplit split, Tensor& out, Tensor& argmax);
// grad_in[o, argmax[o, i], i] = grad_out[o, i], zero elsewhere.
using MaxBackwardKernel = void(const Tensor& grad_out, const Tensor& argmax, AxisSplit split, Tensor& grad_in);

}  // namespace hkt
