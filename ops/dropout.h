#pragma once
// Inverted dropout, as torch.nn.functional.dropout.
#include "engine/random.h"
#include "engine/tensor.h"

namespace hkt {

// When training and p > 0: each element is kept where generator.uniform() ≥ p
// (drawn on the host in row-major order, so the same seed gives the same mask
// on every device and thread count) and scaled by 1/(1 − p); the gradient is
// masked and scaled the same way. Otherwise x itself is returned and the
// generator is not advanced. p must lie in [0, 1).
Tensor dropout(const Tensor& x, double p, Generator& generator, bool training);

}  // namespace hkt
