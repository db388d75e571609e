#pragma once
// Shape ops. reshape shares storage with its input (a view); permute, slice
// and concat copy (views with strides may come later; docs/ARCHITECTURE.md).
#include <vector>

#include "engine/tensor.h"

namespace hkt {

// One extent may be -1 (inferred).
Tensor reshape(const Tensor& x, Shape shape);
Tensor permute(const Tensor& x, const std::vector<int64_t>& dims);
Tensor transpose(const Tensor& x, int64_t axis0, int64_t axis1);
// Elements start ≤ k < end along axis (0 ≤ start ≤ end ≤ extent).
Tensor slice(const Tensor& x, int64_t axis, int64_t start, int64_t end);
Tensor concat(const std::vector<Tensor>& tensors, int64_t axis);

// ---- kernel names and signatures (shared by the CPU and CUDA registrations) ----

namespace kernels {  // the names they register under, declared once (ops/, cuda/ and the lookups use them)
inline constexpr const char* axis_copy = "axis_copy";
inline constexpr const char* permute = "permute";
}  // namespace kernels

// out[o, dst_start + k, i] = src[o, src_start + k, i] for k < count, both seen
// as [outer, extent, inner] around `axis`. Serves slice, its backward and concat.
using AxisCopyKernel = void(const Tensor& src, int64_t src_start, Tensor& dst, int64_t dst_start, int64_t count,
                            int64_t axis);
using PermuteKernel = void(const Tensor& x, const std::vector<int64_t>& dims, Tensor& out);

}  // namespace hkt
