#include "models/mha_attention.h"

#include "ops/attention.h"
#include "ops/attention_reference.h"

namespace hkt::models {

MHAAttention::MHAAttention(const ModelConfig& config, Generator& generator) : heads_(config.n_heads) {
  q = register_module("q", std::make_shared<nn::Linear>(config.d_model, config.d_model, generator));
  k = register_module("k", std::make_shared<nn::Linear>(config.d_model, config.d_model, generator));
  v = register_module("v", std::make_shared<nn::Linear>(config.d_model, config.d_model, generator));
  o = register_module("o", std::make_shared<nn::Linear>(config.d_model, config.d_model, generator));
}

Tensor MHAAttention::forward(const Tensor& x, const SequenceMask& mask) const {
  // x: [B, T, d]. The fused op reads the projections as [B, T, H, dh] in
  // place, and spends nothing on padded query rows (0: nothing reads them);
  // the reference materialises [B, H, T, T] scores from [B, H, T, dh].
  if (mask.fused)
    return o->forward(unview_heads(attention(view_heads(q->forward(x), heads_), view_heads(k->forward(x), heads_),
                                             view_heads(v->forward(x), heads_), mask.lengths_tensor, mask.causal,
                                             HeadLayout::BTHD, PaddedRows::Zero)));
  Tensor queries = split_heads(q->forward(x), heads_);
  Tensor keys = split_heads(k->forward(x), heads_);
  Tensor values = split_heads(v->forward(x), heads_);
  return o->forward(merge_heads(attention_reference(queries, keys, values, mask.lengths_tensor, mask.causal)));
}

}  // namespace hkt::models
