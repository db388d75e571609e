#pragma once
// HKT multi-scale attention (SPEC sections 2-4): the downsampling, the per-
// level projections and the hybrid head as ops; the multi-scale score and
// softmax as the fused op (ops/multiscale_attention.h) or its composed
// reference that materialises every T × T matrix (ops/attention_reference.h).
#include <vector>

#include "models/attention.h"
#include "ops/conv1d.h"

namespace hkt::models {

// One level's query and key projections: levels.{l}.{q,k}.
struct LevelProjections : Module {
  std::shared_ptr<nn::Linear> q, k;
  LevelProjections(int64_t d, Generator& generator);
};

// Causal strided downsampling to level l (SPEC section 2):
// Y = depthwise_conv1d(X^(l-1), weight, bias, s), Z = pointwise(Y) when the
// config has down_pointwise (else Z = Y), X^(l) = GELU(LayerNorm(Z)).
// forward(x, rows) computes only the rows m < rows[b] of each sequence and
// leaves the rest 0 (the masked ops), so the GEMMs that read X^(l) skip them.
struct Downsample : Module {
  Parameter weight, bias;                  // [d, k], [d]
  std::shared_ptr<nn::Linear> pointwise;  // [d, d], [d]; null without down_pointwise
  std::shared_ptr<nn::LayerNorm> ln;
  int64_t stride;
  Downsample(int64_t d, int64_t kernel, int64_t stride, bool pointwise, Generator& generator);
  Tensor forward(const Tensor& x) const;
  Tensor forward(const Tensor& x, const Tensor& rows) const;
};

// The hybrid head's causal depthwise convolution over V (SPEC section 4).
struct CausalConv : Module {
  Parameter weight, bias;  // [d, kc], [d]
  CausalConv(int64_t d, int64_t kernel, Generator& generator);
  Tensor forward(const Tensor& x) const { return depthwise_conv1d(x, weight, bias, 1); }
};

class HKTAttention : public Attention {
 public:
  HKTAttention(const ModelConfig& config, Generator& generator);
  Tensor forward(const Tensor& x, const SequenceMask& mask) const override;

  std::vector<std::shared_ptr<LevelProjections>> levels;  // l = 0 … L−1
  std::vector<std::shared_ptr<Downsample>> down;          // index l − 1 for l = 1 … L−1
  std::shared_ptr<nn::Linear> v, o;
  std::shared_ptr<CausalConv> conv;
  Parameter level_logits;  // [H, L]; λ = softmax over levels
  Parameter gate_logit;    // [H]; β = sigmoid

  // X^(0) … X^(L−1); X^(0) is x with padded rows zeroed. Public for
  // inspection (tools/inspect/attention_maps.cpp rebuilds the scores from it).
  // With mask.padded_rows_zero (the fused blocks) a coarse level's rows that
  // no valid position reads are 0 (coarse_rows_read) rather than computed.
  std::vector<Tensor> level_inputs(const Tensor& x, const SequenceMask& mask) const;

 private:
  ModelConfig config_;
};

}  // namespace hkt::models
