#pragma once
// The MHA baseline's attention (SPEC section 5): standard multi-head
// attention, softmax(Q Kᵀ / sqrt(dh)) V, then Wo; the score and softmax as
// the fused op (ops/attention.h) or its composed reference that materialises
// every T × T matrix (ops/attention_reference.h).
#include <memory>

#include "models/attention.h"

namespace hkt::models {

class MHAAttention : public Attention {
 public:
  MHAAttention(const ModelConfig& config, Generator& generator);
  Tensor forward(const Tensor& x, const SequenceMask& mask) const override;

  std::shared_ptr<nn::Linear> q, k, v, o;

 private:
  int64_t heads_;
};

}  // namespace hkt::models
