#include "models/hkt_attention.h"

#include <cmath>
#include <string>

#include "ops/attention_reference.h"
#include "ops/elementwise.h"
#include "ops/hybrid_attention.h"
#include "ops/lerp.h"
#include "ops/multiscale_attention.h"
#include "ops/shape.h"

namespace hkt::models {
namespace {

// Per level l ≥ 1, the rows of X^(l) that a valid position reads, int64 [B]
// each. A valid query or key i < n reads coarse row floor(i / s^l) (causal:
// at most that), so rows < ceil(n / s^l); and coarse row m of level l + 1 reads
// level l's rows up to m·s + s − 1 (SPEC section 2: the window ends at the
// block's last fine row). From the top level down: rows_l = min(T_l,
// s · rows_{l+1}). A level's other rows reach only padded queries and masked
// keys, so they get no gradient in SPEC's form either.
std::vector<Tensor> coarse_rows_read(const Tensor& lengths_tensor, int64_t length, int64_t levels, int64_t stride) {
  const std::vector<int64_t> lengths = lengths_tensor.to_vector<int64_t>();
  std::vector<int64_t> sizes{length};  // T_l
  for (int64_t l = 1; l < levels; ++l) sizes.push_back((sizes.back() + stride - 1) / stride);
  int64_t block = 1;  // fine positions per coarse row of the top level, s^(L−1)
  for (int64_t l = 1; l < levels; ++l) block *= stride;
  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(levels), std::vector<int64_t>(lengths.size()));
  for (size_t b = 0; b < lengths.size(); ++b) {
    rows[levels - 1][b] = std::min(sizes[levels - 1], (lengths[b] + block - 1) / block);
    for (int64_t l = levels - 2; l >= 1; --l) rows[l][b] = std::min(sizes[l], stride * rows[l + 1][b]);
  }
  std::vector<Tensor> result;
  for (int64_t l = 1; l < levels; ++l)
    result.push_back(Tensor::from_vector(rows[l], {static_cast<int64_t>(lengths.size())}));
  return result;
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

Tensor Downsample::forward(const Tensor& x, const Tensor& rows) const {
  // Z's rows past `rows` are pointwise's bias (its GEMM skips the zero rows of Y); the LayerNorm zeroes them.
  Tensor mixed = depthwise_conv1d_masked(x, weight, bias, stride, rows);
  if (pointwise) mixed = pointwise->forward(mixed);
  return gelu_masked(ln->forward(mixed, rows), rows);
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
  if (mask.padded_rows_zero && !down.empty()) {
    const std::vector<Tensor> rows = coarse_rows_read(mask.lengths_tensor, x.size(1), config_.levels, config_.stride);
    for (size_t l = 0; l < down.size(); ++l) inputs.push_back(down[l]->forward(inputs.back(), rows[l]));
    return inputs;
  }
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
  // β ⊙ attended + (1 − β) ⊙ conv(values): with the fused attention one op that mixes each head's rows while
  // they are in cache (ops/hybrid_attention.h), leaving the padded rows 0 as MHA's attention does, so that the o
  // projection skips them; composed otherwise.
  Tensor mixed;
  if (mask.fused) {
    mixed = unview_heads(hybrid_multiscale_attention(queries, keys, to_heads(values), level_logits,
                                                     mask.lengths_tensor, config_.stride, mask.causal, conv->weight,
                                                     conv->bias, sigmoid(gate_logit), PaddedRows::Zero));
  } else {
    Tensor attended = merge_heads(multiscale_attention_reference(queries, keys, to_heads(values), level_logits,
                                                                 mask.lengths_tensor, config_.stride, mask.causal));
    mixed = lerp(conv->forward(values), attended, gates_per_channel(sigmoid(gate_logit), config_.head_dim()));
  }
  return o->forward(mixed);
}

}  // namespace hkt::models
