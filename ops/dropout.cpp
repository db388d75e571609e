// dropout: composed from mul with a host-drawn, pre-scaled keep-mask, so it
// needs no kernel of its own and the gradient (g ⊙ mask / (1 − p)) comes from
// mul's backward. The mask is drawn on the host for reproducibility (random.h).
#include "ops/dropout.h"

#include <vector>

#include "ops/common.h"
#include "ops/elementwise.h"

namespace hkt {

Tensor dropout(const Tensor& x, double p, Generator& generator, bool training) {
  check_floating("dropout", x);
  check(p >= 0.0 && p < 1.0, "dropout: p must be in [0, 1), got ", p);
  if (!training || p == 0.0) return x;
  // mask[i] / (1 − p) with mask[i] = [uniform() ≥ p], drawn in row-major order.
  const double keep_scale = 1.0 / (1.0 - p);
  std::vector<double> scaled_mask(static_cast<size_t>(x.numel()));
  for (double& value : scaled_mask) value = generator.uniform() >= p ? keep_scale : 0.0;
  return mul(x, Tensor::from_doubles(scaled_mask, x.shape(), x.dtype(), x.device()));
}

}  // namespace hkt
