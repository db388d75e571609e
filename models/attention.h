#pragma once
// Attention layers of the classifiers: the MHA baseline and the HKT
// multi-scale attention (SPEC sections 2-4), both composed from ops.
#include <vector>

#include "models/config.h"
#include "models/layers.h"

namespace hkt::models {

// What attention needs to know about a batch, built once per forward:
// x is [B, T, d]; lengths[b] valid positions, the rest padding.
struct SequenceMask {
  Tensor lengths_tensor;  // int64 [B], valid positions per example
  bool causal = false;
  // true: the fused, tiled attention ops (ops/attention.h, memory linear in T);
  // false: their composed references (ops/attention_reference.h), which
  // materialise every T × T score matrix.
  bool fused = true;
  Tensor valid_rows;  // [B, T, 1], 1 at valid positions, 0 at padding

  // lengths_tensor [B] (int), each in [1, T]; masks in dtype/device.
  static SequenceMask build(const Tensor& lengths_tensor, int64_t length, bool causal, DType dtype, Device device,
                            bool fused = true);
};

// [B, T, d] ↔ [B, H, T, dh]
Tensor split_heads(const Tensor& x, int64_t heads);
Tensor merge_heads(const Tensor& x);

class Attention : public Module {
 public:
  virtual Tensor forward(const Tensor& x, const SequenceMask& mask) const = 0;
};

// Standard multi-head attention: softmax(Q Kᵀ / sqrt(dh)) V, then Wo.
class MHAAttention : public Attention {
 public:
  MHAAttention(const ModelConfig& config, Generator& generator);
  Tensor forward(const Tensor& x, const SequenceMask& mask) const override;

  std::shared_ptr<Linear> q, k, v, o;

 private:
  int64_t heads_;
};

}  // namespace hkt::models
