#include "models/classifier.h"

#include <string>

#include "models/hkt_attention.h"
#include "models/mha_attention.h"
#include "models/model_size.h"
#include "ops/reduce.h"
#include "ops/shape.h"

namespace hkt::models {

FeedForward::FeedForward(int64_t d, int64_t d_ff, Generator& generator) {
  fc1 = register_module("fc1", std::make_shared<nn::Linear>(d, d_ff, generator));
  fc2 = register_module("fc2", std::make_shared<nn::Linear>(d_ff, d, generator));
}

Block::Block(const ModelConfig& config, Generator& generator) {
  ln1 = register_module("ln1", std::make_shared<nn::LayerNorm>(config.d_model));
  if (config.attention == "mha")
    attn = register_module("attn", std::make_shared<MHAAttention>(config, generator));
  else
    attn = register_module("attn", std::make_shared<HKTAttention>(config, generator));
  ln2 = register_module("ln2", std::make_shared<nn::LayerNorm>(config.d_model));
  ffn = register_module("ffn", std::make_shared<FeedForward>(config.d_model, config.d_ff, generator));
}

Tensor Block::forward(const Tensor& x, const SequenceMask& mask) const {
  if (!mask.fused) {  // the composed reference path, SPEC as written
    Tensor h = add(x, attn->forward(ln1->forward(x), mask));
    return add(h, ffn->forward(ln2->forward(h)));
  }
  // No valid position reads a padded one's row (attention masks those keys,
  // the pooling drops them), so the LayerNorms and the feed-forward's GELU
  // leave padded rows 0: their own work there is skipped, and so are the
  // zero rows in the GEMMs of the projections, fc1 and fc2 that read them.
  SequenceMask zeroed = mask;
  zeroed.padded_rows_zero = true;
  Tensor h = add(x, attn->forward(ln1->forward(x, mask.lengths_tensor), zeroed));
  return add(h, ffn->forward(ln2->forward(h, mask.lengths_tensor), mask.lengths_tensor));
}

Classifier::Classifier(const ModelConfig& config, uint64_t seed) : config_(config) {
  config.validate();
  // No machine holds more; callers with a budget check theirs first (check_model_size).
  check_model_size(config, 1, 1e12, "classifier");
  Generator generator(seed);
  auto embed = register_module("embed", std::make_shared<Module>());
  token_embedding = embed->register_module("token", std::make_shared<nn::Embedding>(config.vocab, config.d_model, generator));
  position_embedding =
      embed->register_module("pos", std::make_shared<nn::Embedding>(config.max_len, config.d_model, generator));
  auto block_list = register_module("blocks", std::make_shared<Module>());
  for (int64_t i = 0; i < config.n_layers; ++i)
    blocks.push_back(block_list->register_module(std::to_string(i), std::make_shared<Block>(config, generator)));
  ln_f = register_module("ln_f", std::make_shared<nn::LayerNorm>(config.d_model));
  head = register_module("head", std::make_shared<nn::Linear>(config.d_model, config.classes, generator));
}

Tensor Classifier::forward(const Tensor& tokens, const Tensor& lengths) const {
  check(tokens.defined() && tokens.dim() == 2 && !is_floating(tokens.dtype()),
        "classifier: tokens must be an integer [B, T] tensor, got ", tokens);
  const int64_t batch = tokens.size(0), length = tokens.size(1);
  check(batch >= 1 && length >= 1, "classifier: empty batch ", tokens);
  check(length <= config_.max_len, "classifier: sequence length ", length, " exceeds max_len ", config_.max_len);
  check(lengths.defined() && lengths.dim() == 1 && lengths.size(0) == batch, "classifier: lengths ",
        lengths, " do not match tokens ", tokens);
  const Tensor& table = token_embedding->weight;
  SequenceMask mask =
      SequenceMask::build(lengths, length, config_.causal, table.dtype(), table.device(), fused_attention_);

  Tensor positions = slice(position_embedding->weight, 0, 0, length);  // [T, d]
  Tensor x = add(token_embedding->forward(tokens), positions);          // [B, T, d]
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (attention_input_observer) attention_input_observer(static_cast<int64_t>(i), blocks[i]->ln1->forward(x), mask);
    x = blocks[i]->forward(x, mask);
  }
  Tensor counts = reshape(sum(mask.valid_rows, 1), {batch, 1});
  Tensor pooled = div(sum(mul(x, mask.valid_rows), 1), counts);        // mean over valid positions, [B, d]
  return head->forward(ln_f->forward(pooled));
}

namespace {

ModelConfig with_attention(ModelConfig config, const char* attention) {
  config.attention = attention;
  return config;
}

}  // namespace

MHAClassifier::MHAClassifier(ModelConfig config, uint64_t seed) : Classifier(with_attention(config, "mha"), seed) {}
HKTClassifier::HKTClassifier(ModelConfig config, uint64_t seed) : Classifier(with_attention(config, "hkt"), seed) {}

}  // namespace hkt::models
