#include "tools/inspect/attention_maps.h"

#include <cmath>
#include <limits>

#include "engine/autograd.h"
#include "models/hkt_attention.h"
#include "models/mha_attention.h"
#include "ops/index.h"

namespace hkt::inspect {
namespace {

// S [B, H, n, n] = Q K^T / sqrt(dh) from q, k [B, H, n, dh] (float64 host copies).
std::vector<double> scaled_scores(const Tensor& q, const Tensor& k) {
  const int64_t batch = q.size(0), heads = q.size(1), n = q.size(2), dh = q.size(3);
  const std::vector<double> qv = q.to_vector<double>(), kv = k.to_vector<double>();
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  std::vector<double> scores(static_cast<size_t>(batch * heads * n * n));
  for (int64_t bh = 0; bh < batch * heads; ++bh)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double dot = 0;
        for (int64_t c = 0; c < dh; ++c) dot += qv[(bh * n + i) * dh + c] * kv[(bh * n + j) * dh + c];
        scores[static_cast<size_t>((bh * n + i) * n + j)] = dot * scale;
      }
  return scores;
}

std::vector<double> softmax_rows(const std::vector<double>& logits, int64_t columns) {
  std::vector<double> out(logits.size());
  for (size_t start = 0; start < logits.size(); start += static_cast<size_t>(columns)) {
    double top = -std::numeric_limits<double>::infinity(), total = 0;
    for (int64_t l = 0; l < columns; ++l) top = std::max(top, logits[start + l]);
    for (int64_t l = 0; l < columns; ++l) total += out[start + l] = std::exp(logits[start + l] - top);
    for (int64_t l = 0; l < columns; ++l) out[start + l] /= total;
  }
  return out;
}

// Fills level_scores, level_weights and gates from the block's projections.
void level_scores_of(const models::Attention& attention, const Tensor& x, const models::SequenceMask& mask,
                     int64_t heads, BlockAttention& out) {
  if (const auto* hkt_attention = dynamic_cast<const models::HKTAttention*>(&attention)) {
    std::vector<Tensor> inputs = hkt_attention->level_inputs(x, mask);
    for (size_t l = 0; l < inputs.size(); ++l) {
      const auto& projections = *hkt_attention->levels[l];
      out.level_scores.push_back(scaled_scores(models::split_heads(projections.q->forward(inputs[l]), heads),
                                               models::split_heads(projections.k->forward(inputs[l]), heads)));
      out.level_lengths.push_back(inputs[l].size(1));
    }
    out.levels = static_cast<int64_t>(inputs.size());
    out.level_weights = softmax_rows(hkt_attention->level_logits.to_vector<double>(), out.levels);
    for (double logit : hkt_attention->gate_logit.to_vector<double>()) out.gates.push_back(1 / (1 + std::exp(-logit)));
    return;
  }
  const auto* mha = dynamic_cast<const models::MHAAttention*>(&attention);
  check(mha != nullptr, "hkt-inspect: block attention is neither MHA nor HKT");
  out.level_scores.push_back(
      scaled_scores(models::split_heads(mha->q->forward(x), heads), models::split_heads(mha->k->forward(x), heads)));
  out.level_lengths.push_back(x.size(1));
  out.levels = 1;
  out.level_weights.assign(static_cast<size_t>(heads), 1.0);
  out.gates.assign(static_cast<size_t>(heads), 1.0);
}

// S = Σ_l λ[h,l] · S^(l)[q_l(i), k_l(j)] · [term l allowed], then the masked softmax (SPEC section 3).
void fuse_and_softmax(BlockAttention& out) {
  const int64_t B = static_cast<int64_t>(out.lengths.size()), H = out.heads, T = out.length;
  out.fused_scores.assign(static_cast<size_t>(B * H * T * T), 0.0);
  for (int64_t l = 0; l < out.levels; ++l) {
    const auto qmap = query_index_map(T, l, out.stride, out.causal).to_vector<int64_t>();
    const auto kmap = key_index_map(T, l, out.stride).to_vector<int64_t>();
    const int64_t n = out.level_lengths[static_cast<size_t>(l)];
    const std::vector<double>& level = out.level_scores[static_cast<size_t>(l)];
    for (int64_t bh = 0; bh < B * H; ++bh) {
      const double lambda = out.level_weights[static_cast<size_t>((bh % H) * out.levels + l)];
      for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < T; ++j) {
          const int64_t qi = qmap[i], kj = kmap[j];
          if (out.causal && (qi < 0 || kj > qi)) continue;
          out.fused_scores[static_cast<size_t>((bh * T + i) * T + j)] +=
              lambda * level[static_cast<size_t>((bh * n + qi) * n + kj)];
        }
    }
  }
  out.weights.assign(out.fused_scores.size(), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < T; ++i) {
        const size_t row = static_cast<size_t>(((b * H + h) * T + i) * T);
        double top = -std::numeric_limits<double>::infinity(), total = 0;
        for (int64_t j = 0; j < T; ++j)
          if (out.allowed(b, i, j)) top = std::max(top, out.fused_scores[row + j]);
        for (int64_t j = 0; j < T; ++j)
          if (out.allowed(b, i, j)) total += out.weights[row + j] = std::exp(out.fused_scores[row + j] - top);
        for (int64_t j = 0; j < T; ++j) out.weights[row + j] /= total;
      }
}

}  // namespace

bool BlockAttention::allowed(int64_t b, int64_t i, int64_t j) const {
  return j < lengths[static_cast<size_t>(b)] && (!causal || j <= i);
}

int64_t BlockAttention::valid_level_length(int64_t b, int64_t level) const {
  int64_t n = lengths[static_cast<size_t>(b)];
  for (int64_t l = 0; l < level; ++l) n = (n + stride - 1) / stride;
  return n;
}

std::vector<BlockAttention> attention_maps(models::Classifier& model, const data::Batch& batch) {
  NoGradGuard no_grad;
  const models::ModelConfig& config = model.config();
  std::vector<BlockAttention> maps;
  auto saved_observer = model.attention_input_observer;
  model.attention_input_observer = [&](int64_t block, const Tensor& x, const models::SequenceMask& mask) {
    BlockAttention out;
    out.heads = config.n_heads;
    out.length = x.size(1);
    out.stride = config.stride;
    out.causal = mask.causal;
    out.lengths = mask.lengths_tensor.to_vector<int64_t>();
    level_scores_of(*model.blocks[static_cast<size_t>(block)]->attn, x, mask, config.n_heads, out);
    fuse_and_softmax(out);
    maps.push_back(std::move(out));
  };
  try {
    model.forward(batch.tokens, batch.lengths);
  } catch (...) {
    model.attention_input_observer = saved_observer;
    throw;
  }
  model.attention_input_observer = saved_observer;
  return maps;
}

}  // namespace hkt::inspect
