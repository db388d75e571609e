#pragma once
// What the two attentions share (models/mha_attention.h, models/hkt_attention.h):
// the Attention interface, the per-batch SequenceMask, and the split of a
// [B, T, d] activation into heads and back.
#include <vector>

#include "models/config.h"
#include "nn/layers.h"

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
  // The attention's input is already 0 at padded positions (the block's
  // layer_norm_masked), so HKT's levels need no multiply by valid_rows.
  bool padded_rows_zero = false;

  // lengths_tensor [B] (int), each in [1, T]; masks in dtype/device.
  static SequenceMask build(const Tensor& lengths_tensor, int64_t length, bool causal, DType dtype, Device device,
                            bool fused = true);
};

// [B, T, d] ↔ [B, H, T, dh] (a permute copy each way): the composed reference path.
Tensor split_heads(const Tensor& x, int64_t heads);
Tensor merge_heads(const Tensor& x);
// [B, T, d] ↔ [B, T, H, dh] (HeadLayout::BTHD, reshapes, no copy): the fused ops.
Tensor view_heads(const Tensor& x, int64_t heads);
Tensor unview_heads(const Tensor& x);

class Attention : public Module {
 public:
  virtual Tensor forward(const Tensor& x, const SequenceMask& mask) const = 0;
};

}  // namespace hkt::models
