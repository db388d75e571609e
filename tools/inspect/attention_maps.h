#pragma once
// The attention of a trained model, as numbers: for each block the per-level
// score matrices S^(l) and the softmax weights A (SPEC section 3), rebuilt in
// float64 plain loops from the block's projections; the fused ops never
// materialise them. A · V equals the attention op's output (tests/test_inspect.cpp).
#include <cstdint>
#include <vector>

#include "data/dataset.h"
#include "models/classifier.h"

namespace hkt::inspect {

struct BlockAttention {
  int64_t heads = 0, levels = 0, length = 0, stride = 2;
  std::vector<int64_t> level_lengths;            // T_l
  std::vector<std::vector<double>> level_scores;  // S^(l) [B, H, T_l, T_l], Q K^T / sqrt(dh), unmasked
  std::vector<double> fused_scores;              // S [B, H, T, T] before masking (SPEC section 3)
  std::vector<double> weights;                   // A = softmax_j(masked S), [B, H, T, T]; 0 at masked pairs
  std::vector<double> level_weights;             // λ [H, L] (MHA: 1)
  std::vector<double> gates;                     // β [H] (MHA: 1)
  std::vector<int64_t> lengths;                  // valid positions per example
  bool causal = false;

  double weight(int64_t b, int64_t h, int64_t i, int64_t j) const {
    return weights[static_cast<size_t>(((b * heads + h) * length + i) * length + j)];
  }
  // True where A may be non-zero: j is a valid key, and causally j ≤ i.
  bool allowed(int64_t b, int64_t i, int64_t j) const;
  // Valid coarse positions of example b at level l: ceil(length_b / s^l).
  int64_t valid_level_length(int64_t b, int64_t level) const;
};

// One entry per block, for the batch (run with gradients off).
std::vector<BlockAttention> attention_maps(models::Classifier& model, const data::Batch& batch);

}  // namespace hkt::inspect
