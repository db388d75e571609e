#pragma once
// The MHA and HKT sequence classifiers of SPEC section 5. They share every
// layer but the attention:
//   x = embed.token[tokens] + embed.pos[0:T]
//   for each block:  x = x + attn(LN1(x));  x = x + fc2(GELU(fc1(LN2(x))))
//   logits = head(ln_f(mean of x over the valid positions))
#include <functional>
#include <memory>

#include "models/attention.h"
#include "models/config.h"
#include "ops/elementwise.h"

namespace hkt::models {

struct FeedForward : Module {
  std::shared_ptr<nn::Linear> fc1, fc2;
  FeedForward(int64_t d, int64_t d_ff, Generator& generator);
  Tensor forward(const Tensor& x) const { return fc2->forward(gelu(fc1->forward(x))); }
  // x [B, T, d] whose padded rows (t ≥ lengths[b]) nothing reads: the GELU leaves them 0 (gelu_masked).
  Tensor forward(const Tensor& x, const Tensor& lengths) const {
    return fc2->forward(gelu_masked(fc1->forward(x), lengths));
  }
};

struct Block : Module {
  std::shared_ptr<nn::LayerNorm> ln1, ln2;
  std::shared_ptr<Attention> attn;
  std::shared_ptr<FeedForward> ffn;
  Block(const ModelConfig& config, Generator& generator);
  Tensor forward(const Tensor& x, const SequenceMask& mask) const;
};

class Classifier : public Module {
 public:
  // Parameters are drawn from a Generator seeded with `seed`.
  Classifier(const ModelConfig& config, uint64_t seed);

  // tokens [B, T] int (T ≤ max_len), lengths [B] int in [1, T] → logits [B, classes].
  Tensor forward(const Tensor& tokens, const Tensor& lengths) const;
  const ModelConfig& config() const { return config_; }
  // Fused attention ops (default) or the composed reference; not part of the
  // config: both compute the same function (tests/test_models.cpp).
  void set_fused_attention(bool fused) { fused_attention_ = fused; }
  bool fused_attention() const { return fused_attention_; }

  // Inspection hook (tools/hkt-inspect): when set, forward calls it with each
  // block's attention input LN1(x) and the batch's mask. Unset in training.
  using AttentionInputObserver = std::function<void(int64_t block, const Tensor& attention_input, const SequenceMask&)>;
  AttentionInputObserver attention_input_observer;

  std::shared_ptr<nn::Embedding> token_embedding, position_embedding;
  std::vector<std::shared_ptr<Block>> blocks;
  std::shared_ptr<nn::LayerNorm> ln_f;
  std::shared_ptr<nn::Linear> head;

 private:
  ModelConfig config_;
  bool fused_attention_ = true;
};

// The two named models: a Classifier whose config says which attention.
struct MHAClassifier : Classifier {
  MHAClassifier(ModelConfig config, uint64_t seed);
};
struct HKTClassifier : Classifier {
  HKTClassifier(ModelConfig config, uint64_t seed);
};

}  // namespace hkt::models
