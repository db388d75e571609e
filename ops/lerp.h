#pragma once
// lerp(start, end, weight) = start + weight · (end − start), as torch.lerp.
// HKT's hybrid head mixes attention and convolution with it (SPEC section 4:
// β · A + (1 − β) · C = lerp(C, A, β)): one pass forward and one backward,
// where the composed form (two products, 1 − β and a sum) walks the [B, T, d]
// activations nine times. start and end have one shape; weight broadcasts
// to it (β is one value per channel).
#include "engine/tensor.h"

namespace hkt {

Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight);

namespace kernels {
inline constexpr const char* lerp = "lerp";
inline constexpr const char* lerp_backward = "lerp_backward";
}  // namespace kernels

// out = start + weight · (end − start), weight read broadcast to out's shape.
using LerpKernel = void(const Tensor& start, const Tensor& end, const Tensor& weight, Tensor& out);
// At out's shape: grad_start = g · (1 − w), grad_end = g · w, grad_weight =
// g · (end − start) (the op sums it to weight's shape). An undefined output
// is not wanted and not written.
using LerpBackwardKernel = void(const Tensor& start, const Tensor& end, const Tensor& weight, const Tensor& grad_out,
                                Tensor& grad_start, Tensor& grad_end, Tensor& grad_weight);

}  // namespace hkt
