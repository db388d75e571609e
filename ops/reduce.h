#pragma once
// Reductions along one axis or over all elements.
#include "engine/tensor.h"

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

}  // namespace hkt
