#include "models/hkt_attention.h"

#include <cmath>
#include <string>

#include "ops/attention_reference.h"
#include "ops/elementwise.h"
#include "ops/hybrid_mix.h"
#include "ops/lerp.h"
#include "ops/multiscale_attention.h"
#include "ops/shape.h"

namespace hkt::models {
namespace {

// β of head h on its dh channels: [H] → [d].
Tensor channel_gates(const Tensor& gate_logit, int64_t head_dim) {
  const int64_t heads = gate_logit.size(0);
  Tensor gates = reshape(sigmoid(gate_logit), {heads, 1});
  return reshape(broadcast_to(gates, {heads, head_dim}), {heads * head_dim});
}

}  // namespace

LevelProjections::LevelProjections(int64_t d, Generator& generator) {
  q = register_module("q", std::make_shared<nn::Linear>(d, d, generator));
  k = register_module("k", std::make_shared<nn::Linear>(d, d, generator));
}

Downsample::Downsample(int64_t d, int64_t kernel, int64_t stride_, bool with_pointwise, Generator& generator)
    : stride(stride_) {
  const double std = 1.0 / std::sqrt(static_cast<double>(kernel));
  weight = register_parameter("weight", randn({d, kernel}, generator, DType::Float32, Device::cpu(), 0.0, std));
  bias = register_parameter("bias", Tensor::zeros({d}));
  // Initialised as every Linear; drawn after the convolution's weights, so a
  // model without it draws exactly what it drew before the key existed.
  if (with_pointwise) pointwise = register_module("pointwise", std::make_shared<nn::Linear>(d, d, generator));
  ln = register_module("ln", std::make_shared<nn::LayerNorm>(d));
}

Tensor Downsample::forward(const Tensor& x) const {
  Tensor mixed = depthwise_conv1d(x, weight, bias, stride);
  if (pointwise) mixed = pointwise->forward(mixed);  // one coarse token at a time: causality unchanged
  return gelu(ln->forward(mixed));
}

CausalConv::CausalConv(int64_t d, int64_t kernel, Generator& generator) {
  const double std = 1.0 / std::sqrt(static_cast<double>(kernel));
  weight = register_parameter("weight", randn({d, kernel}, generator, DType::Float32, Device::cpu(), 0.0, std));
  bias = register_parameter("bias", Tensor::zeros({d}));
}

HKTAttention::HKTAttention(const ModelConfig& config, Generator& generator) : config_(config) {
  const int64_t d = config.d_model;
  auto level_list = register_module("levels", std::make_shared<Module>());
  for (int64_t l = 0; l < config.levels; ++l)
    levels.push_back(level_list->register_module(std::to_string(l), std::make_shared<LevelProjections>(d, generator)));
  v = register_module("v", std::make_shared<nn::Linear>(d, d, generator));
  o = register_module("o", std::make_shared<nn::Linear>(d, d, generator));
  if (config.levels > 1) {
    auto down_list = register_module("down", std::make_shared<Module>());
    for (int64_t l = 1; l < config.levels; ++l)
      down.push_back(down_list->register_module(
          std::to_string(l), std::make_shared<Downsample>(d, config.down_kernel, config.stride, config.down_pointwise,
                                                          generator)));
  }
  level_logits = register_parameter("level_logits", Tensor::zeros({config.n_heads, config.levels}));
  conv = register_module("conv", std::make_shared<CausalConv>(d, config.conv_kernel, generator));
  gate_logit = register_parameter("gate_logit", Tensor::zeros({config.n_heads}));
}

std::vector<Tensor> HKTAttention::level_inputs(const Tensor& x, const SequenceMask& mask) const {
  // X^(0): x with padded rows 0 (SPEC section 2), which the block's layer_norm_masked already made them.
  std::vector<Tensor> inputs{mask.padded_rows_zero ? x : mul(x, mask.valid_rows)};
  for (const auto& downsample : down) inputs.push_back(downsample->forward(inputs.back()));
  return inputs;
}

Tensor HKTAttention::forward(const Tensor& x, const SequenceMask& mask) const {
  // x: [B, T, d]. SPEC section 3 for the attention, section 4 for the hybrid head.
  std::vector<Tensor> inputs = level_inputs(x, mask);
  Tensor values = v->forward(inputs[0]);  // V from level 0 only, [B, T, d]
  // Per level, [B, T_l, H, dh] for the fused op (views, no copy), [B, H, T_l, dh] for the reference. The fused
  // op spends nothing on padded query rows (PaddedRows::Zero): no valid row and not the pooling reads them.
  const int64_t heads = config_.n_heads;
  auto to_heads = [&](const Tensor& t) { return mask.fused ? view_heads(t, heads) : split_heads(t, heads); };
  std::vector<Tensor> queries, keys;
  for (int64_t l = 0; l < config_.levels; ++l) {
    queries.push_back(to_heads(levels[l]->q->forward(inputs[l])));
    keys.push_back(to_heads(levels[l]->k->forward(inputs[l])));
  }
  Tensor attended =
      mask.fused ? unview_heads(multiscale_attention(queries, keys, to_heads(values), level_logits, mask.lengths_tensor,
                                                     config_.stride, mask.causal, HeadLayout::BTHD, PaddedRows::Zero))
                 : merge_heads(multiscale_attention_reference(queries, keys, to_heads(values), level_logits,
                                                              mask.lengths_tensor, config_.stride, mask.causal));
  Tensor gates = channel_gates(gate_logit, config_.head_dim());
  // β ⊙ attended + (1 − β) ⊙ conv(values): one op with the fused attention (ops/hybrid_mix.h), composed otherwise.
  // The fused path leaves the padded rows 0, as MHA's attention does, so the o projection skips them.
  Tensor mixed = mask.fused ? hybrid_mix(attended, values, conv->weight, conv->bias, gates, mask.lengths_tensor)
                            : lerp(conv->forward(values), attended, gates);
  return o->forward(mixed);
}

}  // namespace hkt::models
