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

}  // namespace hkt
