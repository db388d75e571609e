#pragma once
// Normalisation layers.
#include "engine/tensor.h"

namespace hkt {

// LayerNorm over the last axis, as torch.nn.functional.layer_norm with
// normalized_shape = [D] (biased variance, eps inside the square root):
//   y = (x − mean) / sqrt(var + eps) ⊙ weight + bias
// x: [..., D]; weight, bias: [D]. SPEC §5 fixes eps = 1e-5.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps = 1e-5);

}  // namespace hkt
