#pragma once
// Internal to the fused attention ops (ops/attention.cpp,
// ops/multiscale_attention.cpp): argument helpers, and the CPU building blocks
// of their tiled kernels. A tile of keys is held transposed, [dh, tile], so a
// row of scores is a loop over keys that the compiler vectorises, and the
// online softmax (running max and sum, as FlashAttention) folds one tile of a
// score row into the row's unnormalised output.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "engine/tensor.h"
#include "ops/attention.h"

namespace hkt::attention_tiles {

// lengths [B] (int32/int64, any device), each in [1, T]; returns them as an
// int64 tensor on `device`. Messages name `op`.
Tensor checked_lengths(const char* op, const Tensor& lengths, int64_t batch, int64_t length, Device device);

// Calls fn(std::integral_constant<int64_t, Tile>{}) for the kernels' tile edge.
template <class Fn>
void visit_tile(const char* op, int64_t tile, Fn&& fn) {
  switch (tile) {
    case 8:
      fn(std::integral_constant<int64_t, 8>{});
      return;
    case 16:
      fn(std::integral_constant<int64_t, 16>{});
      return;
    case 32:
      fn(std::integral_constant<int64_t, 32>{});
      return;
    case 64:
      fn(std::integral_constant<int64_t, 64>{});
      return;
    default:
      fail(op, ": tile ", tile, " is not one of 8, 16, 32, 64");
  }
}

// Query i sees keys j < key_limit(i): padded keys (j ≥ length) are masked and,
// causally, so are keys after i. Always ≥ 1 since length ≥ 1.
// The problem's sizes from a [B, H, T, dh] tensor, with the CPU tile edge.
inline void fill_dims(AttentionDims& dims, const Tensor& like, bool causal) {
  dims.batch = like.size(0);
  dims.heads = like.size(1);
  dims.length = like.size(2);
  dims.head_dim = like.size(3);
  dims.causal = causal;
  dims.tile = attention_cpu_tile();
}

inline int64_t key_limit(int64_t i, int64_t length, bool causal) { return causal ? std::min(length, i + 1) : length; }

// out[d * ld + c] = rows[c * dh + d] for c < count: `count` rows of width dh, transposed.
template <class T>
void load_transposed(const T* rows, int64_t count, int64_t dh, int64_t ld, T* out) {
  for (int64_t c = 0; c < count; ++c)
    for (int64_t d = 0; d < dh; ++d) out[d * ld + c] = rows[c * dh + d];
}

// scores[c] = scale · Σ_d query[d] · keys_t[d * ld + c] for c < count.
template <class T>
void score_row(const T* query, const T* keys_t, int64_t dh, int64_t ld, int64_t count, T scale, T* scores) {
  std::fill(scores, scores + count, T(0));
  for (int64_t d = 0; d < dh; ++d) {
    const T qd = query[d];
    const T* key_d = keys_t + d * ld;
    for (int64_t c = 0; c < count; ++c) scores[c] += qd * key_d[c];
  }
  for (int64_t c = 0; c < count; ++c) scores[c] *= scale;
}

// acc[d] += weight · row[d]
template <class T>
void add_scaled(T* acc, const T* row, T weight, int64_t dh) {
  for (int64_t d = 0; d < dh; ++d) acc[d] += weight * row[d];
}

template <class T>
T dot(const T* a, const T* b, int64_t dh) {
  T total = 0;
  for (int64_t d = 0; d < dh; ++d) total += a[d] * b[d];
  return total;
}

// The online softmax over one tile of a score row: scores[c], c < valid, are
// the row's unmasked scores against the tile's keys, values their value rows
// [valid, dh]. With m the running max and l the running Σ exp(s − m):
//   m' = max(m, max_c s_c),  l' = l·e^(m−m') + Σ_c e^(s_c−m'),  acc' = acc·e^(m−m') + Σ_c e^(s_c−m') v_c
// so that at the end out = acc / l and log_sum_exp = m + log l. scores is overwritten.
template <class T>
void online_softmax_step(T* scores, int64_t valid, const T* values, int64_t dh, T& running_max, T& running_sum,
                         T* acc) {
  if (valid <= 0) return;
  T tile_max = -std::numeric_limits<T>::infinity();
  for (int64_t c = 0; c < valid; ++c) tile_max = std::max(tile_max, scores[c]);
  const T new_max = std::max(running_max, tile_max);
  const T correction = std::exp(running_max - new_max);  // 0 on the first tile (m = −inf)
  running_sum *= correction;
  for (int64_t d = 0; d < dh; ++d) acc[d] *= correction;
  for (int64_t c = 0; c < valid; ++c) {
    const T p = std::exp(scores[c] - new_max);
    running_sum += p;
    add_scaled(acc, values + c * dh, p, dh);
  }
  running_max = new_max;
}

// out = acc / l, log_sum_exp = m + log l (every row has at least one key).
template <class T>
void finish_row(const T* acc, T running_max, T running_sum, int64_t dh, T* out, T* log_sum_exp) {
  const T inverse = T(1) / running_sum;
  for (int64_t d = 0; d < dh; ++d) out[d] = acc[d] * inverse;
  *log_sum_exp = running_max + std::log(running_sum);
}

}  // namespace hkt::attention_tiles
