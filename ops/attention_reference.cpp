// Composed references of the fused attention ops; see attention_reference.h.
#include "ops/attention_reference.h"

#include <cmath>
#include <limits>

#include "ops/attention.h"
#include "ops/attention_tiles.h"
#include "ops/common.h"
#include "ops/elementwise.h"
#include "ops/index.h"
#include "ops/mask.h"
#include "ops/matmul.h"
#include "ops/shape.h"
#include "ops/softmax.h"

namespace hkt {
namespace {

constexpr double kMinusInfinity = -std::numeric_limits<double>::infinity();

// Fills padded keys (and, causally, keys j > i) of scores [B, H, T, T] with −inf.
Tensor mask_scores(const Tensor& scores, const Tensor& lengths, bool causal) {
  const int64_t batch = scores.size(0), length = scores.size(2);
  Tensor masked = masked_fill(scores,
                              padded_positions(lengths, length, {batch, 1, 1, length}, scores.dtype(),
                                               scores.device()),
                              kMinusInfinity);
  if (!causal) return masked;
  std::vector<double> future(static_cast<size_t>(length * length));
  for (int64_t i = 0; i < length; ++i)
    for (int64_t j = 0; j < length; ++j) future[i * length + j] = j > i ? 1.0 : 0.0;
  return masked_fill(masked, Tensor::from_doubles(future, {1, 1, length, length}, scores.dtype(), scores.device()),
                     kMinusInfinity);
}

// 1 where level l's term is allowed causally: q_l(i) ≥ 0 and k_l(j) ≤ q_l(i) (SPEC section 3).
Tensor causal_allowed(const Tensor& query_map, const Tensor& key_map, DType dtype, Device device) {
  auto q = query_map.to_vector<int64_t>(), k = key_map.to_vector<int64_t>();
  const int64_t length = static_cast<int64_t>(q.size());
  std::vector<double> allowed(static_cast<size_t>(length * length));
  for (int64_t i = 0; i < length; ++i)
    for (int64_t j = 0; j < length; ++j) allowed[i * length + j] = q[i] >= 0 && k[j] <= q[i] ? 1.0 : 0.0;
  return Tensor::from_doubles(allowed, {1, 1, length, length}, dtype, device);
}

double inverse_sqrt(int64_t head_dim) { return 1.0 / std::sqrt(static_cast<double>(head_dim)); }

}  // namespace

Tensor attention_reference(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& lengths, bool causal) {
  checked_sequence_lengths("attention_reference", lengths, q.size(0), q.size(2), 1, q.device());
  Tensor scores = mul(gemm(q, k, false, true), inverse_sqrt(q.size(3)));
  return matmul(softmax(mask_scores(scores, lengths, causal), -1), v);
}

Tensor multiscale_attention_reference(const std::vector<Tensor>& q_levels, const std::vector<Tensor>& k_levels,
                                      const Tensor& v, const Tensor& level_logits, const Tensor& lengths,
                                      int64_t stride, bool causal) {
  const int64_t heads = v.size(1), length = v.size(2);
  checked_sequence_lengths("multiscale_attention_reference", lengths, v.size(0), length, 1, v.device());
  Tensor level_weights = softmax(level_logits, 1);  // λ [H, L]
  Tensor fused;
  for (int64_t l = 0; l < static_cast<int64_t>(q_levels.size()); ++l) {
    Tensor scores = mul(gemm(q_levels[l], k_levels[l], false, true), inverse_sqrt(v.size(3)));
    if (l > 0) {
      Tensor query_map = query_index_map(length, l, stride, causal, v.device());
      Tensor key_map = key_index_map(length, l, stride, v.device());
      scores = upsample(upsample(scores, 2, query_map), 3, key_map);
      if (causal) scores = mul(scores, causal_allowed(query_map, key_map, v.dtype(), v.device()));
    }
    // Level 0 needs no allowed-mask: its disallowed pairs (j > i) are masked below.
    Tensor term = mul(scores, reshape(slice(level_weights, 1, l, l + 1), {1, heads, 1, 1}));
    fused = fused.defined() ? add(fused, term) : term;
  }
  return matmul(softmax(mask_scores(fused, lengths, causal), -1), v);
}

}  // namespace hkt
