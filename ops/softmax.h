#pragma once
// softmax and log_softmax along one axis, numerically stable (the row maximum
// is subtracted before exp; log_softmax uses log-sum-exp).
//
// A row that is entirely -inf (every key masked, SPEC §3) has no defined
// softmax. We choose, as attention needs: softmax gives zeros there,
// log_softmax gives -inf, and the gradient flowing back into that row is zero
// (not NaN), so a fully padded query does not poison the rest of the batch.
// Rows that are only partly -inf are ordinary: their -inf entries get weight 0.
#include <cstdint>

#include "engine/tensor.h"
#include "ops/common.h"  // AxisSplit

namespace hkt {

Tensor softmax(const Tensor& x, int64_t axis);
Tensor log_softmax(const Tensor& x, int64_t axis);

// ---- kernel names and signatures (shared by the CPU and CUDA registrations) ----

namespace kernels {  // the names they register under, declared once (ops/, cuda/ and the lookups use them)
inline constexpr const char* softmax = "softmax";
inline constexpr const char* softmax_backward = "softmax_backward";
inline constexpr const char* log_softmax = "log_softmax";
inline constexpr const char* log_softmax_backward = "log_softmax_backward";
}  // namespace kernels

// x, out: [outer, extent, inner].
using SoftmaxKernel = void(const Tensor& x, AxisSplit split, Tensor& out);
// y is the forward output (softmax or log_softmax); grad_in gets dL/dx.
using SoftmaxBackwardKernel = void(const Tensor& y, const Tensor& grad_out, AxisSplit split, Tensor& grad_in);

}  // namespace hkt
