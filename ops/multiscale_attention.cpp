// HKT's fused multi-scale attention (SPEC section 3): forward, backward and
// CPU kernels, on the plan of ops/attention.cpp.
//
//   S[i, j] = Σ_l λ_l · C_l[q_l(i), k_l(j)] · [term l allowed],  C_l = q_l k_lᵀ / sqrt(dh)
//   out = softmax_j(S + mask) v
//
// For a tile of fine queries × fine keys, each level's coarse score tile C_l
// covers only the coarse rows and columns the tile touches (about tile / s^l
// of each) and is added through the index maps; no matrix is upsampled. The
// forward saves out and the row log-sum-exp [B, H, T]; the backward recomputes
// S tile by tile and scatters dS back through the maps:
//   dλ_l = Σ dS ⊙ C_l[maps],  dC_l = λ_l · Σ_{maps} dS,  dq_l = dC_l k_l / sqrt(dh),  dk_l = dC_lᵀ q_l / sqrt(dh).
#include "ops/multiscale_attention.h"

#include <cmath>
#include <utility>
#include <vector>

#include "engine/dispatch.h"
#include "ops/attention_tiles.h"
#include "ops/common.h"
#include "ops/index.h"
#include "ops/softmax.h"

namespace hkt {

// ---- CPU kernels ----------------------------------------------------------

namespace {

using namespace attention_tiles;

// One level of one (batch, head): its rows, block s^l and weight λ_l.
template <class T>
struct Level {
  const T* queries = nullptr;  // [T_l, dh]
  const T* keys = nullptr;     // [T_l, dh]
  int64_t block = 1;
  T weight = 0;
  bool causal = false;

  // SPEC section 3's index maps (ops/index.h); −1: no complete block yet (causal).
  int64_t query_index(int64_t i) const { return causal ? (i + 1) / block - 1 : i / block; }
  int64_t key_index(int64_t j) const { return j / block; }
  // Keys j of query i whose term is allowed: j < allowed_end(i). Causally
  // k_l(j) ≤ q_l(i) ⇔ j < (q_l(i) + 1) · s^l, and nothing where q_l(i) < 0.
  int64_t allowed_end(int64_t i, int64_t key_end) const {
    return causal ? std::min(key_end, (query_index(i) + 1) * block) : key_end;
  }
};

// s^l, saturated past T as ops/index.cpp does (the maps are then constant).
int64_t block_of(int64_t length, int64_t level, int64_t stride) {
  int64_t block = 1;
  for (int64_t l = 0; l < level && block <= length; ++l) block *= stride;
  return block;
}

// The coarse rows [row0, row0 + rows) and columns [col0, col0 + cols) that fine
// queries [i0, i1) × keys [j0, j1) touch at one level, and for each key of the
// tile its column in the coarse tile. Every extent is ≤ Tile.
template <int64_t Tile>
struct CoarseTile {
  int64_t row0 = 0, rows = 0, col0 = 0, cols = 0;
  int32_t column_of[Tile];

  template <class T>
  void locate_keys(const Level<T>& level, int64_t j0, int64_t j1) {
    col0 = level.key_index(j0);
    cols = level.key_index(j1 - 1) - col0 + 1;
    for (int64_t c = 0; c < j1 - j0; ++c) column_of[c] = static_cast<int32_t>(level.key_index(j0 + c) - col0);
  }
  template <class T>
  void locate_queries(const Level<T>& level, int64_t i0, int64_t i1) {
    row0 = std::max<int64_t>(0, level.query_index(i0));
    rows = level.query_index(i1 - 1) - row0 + 1;  // ≤ 0 when no query of the tile has a complete block
  }
};

// coarse[a · Tile + b] = C_l[row0 + a, col0 + b]; keys_t holds the tile's coarse keys transposed.
template <class T, int64_t Tile>
void coarse_scores(const Level<T>& level, const CoarseTile<Tile>& tile, const T* keys_t, int64_t dh, T scale,
                   T* coarse) {
  for (int64_t a = 0; a < tile.rows; ++a)
    score_row(level.queries + (tile.row0 + a) * dh, keys_t, dh, Tile, tile.cols, scale, coarse + a * Tile);
}

// scores[r · Tile + c] += λ_l · C_l[q_l(i0 + r), k_l(j0 + c)] where term l is allowed.
template <class T, int64_t Tile>
void add_level_scores(const Level<T>& level, const CoarseTile<Tile>& tile, const T* coarse, int64_t i0, int64_t i1,
                      int64_t j0, int64_t j1, T* scores) {
  for (int64_t i = i0; i < i1; ++i) {
    const int64_t end = level.allowed_end(i, j1) - j0;
    if (end <= 0) continue;
    const T* coarse_row = coarse + (level.query_index(i) - tile.row0) * Tile;
    T* row = scores + (i - i0) * Tile;
    for (int64_t c = 0; c < end; ++c) row[c] += level.weight * coarse_row[tile.column_of[c]];
  }
}

// The fused scores of queries [i0, i1) × keys [j0, j1): scores[r · Tile + c].
// Level l's coarse tile is left in coarse + l · Tile², its geometry in tiles[l];
// keys_t + l · dh · Tile must hold level l's coarse keys for columns tiles[l].col0….
template <class T, int64_t Tile>
void fused_scores(const std::vector<Level<T>>& levels, std::vector<CoarseTile<Tile>>& tiles, const T* keys_t,
                  int64_t dh, T scale, int64_t i0, int64_t i1, int64_t j0, int64_t j1, T* coarse, T* scores) {
  std::fill(scores, scores + Tile * Tile, T(0));
  for (size_t l = 0; l < levels.size(); ++l) {
    CoarseTile<Tile>& tile = tiles[l];
    tile.locate_queries(levels[l], i0, i1);
    if (tile.rows <= 0) continue;
    T* level_coarse = coarse + l * Tile * Tile;
    coarse_scores(levels[l], tile, keys_t + l * dh * Tile, dh, scale, level_coarse);
    add_level_scores(levels[l], tile, level_coarse, i0, i1, j0, j1, scores);
  }
}

// Level views of one (batch, head) = head_index.
template <class T>
std::vector<Level<T>> head_levels(const std::vector<Tensor>& queries, const std::vector<Tensor>& keys,
                                  const T* level_weights, const MultiscaleAttentionDims& dims, int64_t head_index) {
  std::vector<Level<T>> levels(static_cast<size_t>(dims.levels));
  const int64_t head = head_index % dims.heads;
  for (int64_t l = 0; l < dims.levels; ++l) {
    const int64_t rows = queries[l].size(2);
    Level<T>& level = levels[l];
    level.queries = queries[l].data<T>() + head_index * rows * dims.head_dim;
    level.keys = keys[l].data<T>() + head_index * rows * dims.head_dim;
    level.block = block_of(dims.length, l, dims.stride);
    level.weight = level_weights[head * dims.levels + l];
    level.causal = dims.causal;
  }
  return levels;
}

// Loads each level's coarse keys for fine keys [j0, j1) transposed into keys_t.
template <class T, int64_t Tile>
void load_level_keys(const std::vector<Level<T>>& levels, std::vector<CoarseTile<Tile>>& tiles, int64_t dh, int64_t j0,
                     int64_t j1, T* keys_t) {
  for (size_t l = 0; l < levels.size(); ++l) {
    tiles[l].locate_keys(levels[l], j0, j1);
    load_transposed(levels[l].keys + tiles[l].col0 * dh, tiles[l].cols, dh, Tile, keys_t + l * dh * Tile);
  }
}

// One task per (batch, head, query tile), each written by one thread.
template <class T, int64_t Tile>
void multiscale_forward_tiles(const std::vector<Tensor>& queries, const std::vector<Tensor>& keys, const Tensor& v,
                              const Tensor& level_weights, const Tensor& lengths, const MultiscaleAttentionDims& dims,
                              Tensor& out, Tensor& log_sum_exp) {
  const int64_t length = dims.length, dh = dims.head_dim, levels = dims.levels;
  const int64_t query_tiles = (length + Tile - 1) / Tile, tasks = dims.batch * dims.heads * query_tiles;
  const T scale = T(1) / std::sqrt(T(dh));
  const T* pv = v.data<T>();
  const T* weights = level_weights.data<T>();
  const int64_t* valid_keys = lengths.data<int64_t>();
  T* po = out.data<T>();
  T* plse = log_sum_exp.data<T>();
#pragma omp parallel if (tasks * Tile * length * dh > HKT_OMP_MIN_WORK)
  {
    std::vector<T> keys_t(levels * dh * Tile), coarse(levels * Tile * Tile), scores(Tile * Tile), acc(Tile * dh);
    std::vector<CoarseTile<Tile>> tiles(static_cast<size_t>(levels));
    T running_max[Tile], running_sum[Tile];
#pragma omp for schedule(dynamic)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t head_index = task / query_tiles, i0 = (task % query_tiles) * Tile;
      const int64_t i1 = std::min(length, i0 + Tile), valid = valid_keys[head_index / dims.heads];
      const std::vector<Level<T>> level_views = head_levels<T>(queries, keys, weights, dims, head_index);
      const T* values = pv + head_index * length * dh;
      std::fill(acc.begin(), acc.end(), T(0));
      std::fill(running_max, running_max + Tile, -std::numeric_limits<T>::infinity());
      std::fill(running_sum, running_sum + Tile, T(0));
      const int64_t key_end = key_limit(i1 - 1, valid, dims.causal);
      for (int64_t j0 = 0; j0 < key_end; j0 += Tile) {
        const int64_t j1 = std::min(key_end, j0 + Tile);
        load_level_keys(level_views, tiles, dh, j0, j1, keys_t.data());
        fused_scores(level_views, tiles, keys_t.data(), dh, scale, i0, i1, j0, j1, coarse.data(), scores.data());
        for (int64_t i = i0; i < i1; ++i) {
          const int64_t r = i - i0, count = std::min(key_limit(i, valid, dims.causal), j1) - j0;
          online_softmax_step(scores.data() + r * Tile, count, values + j0 * dh, dh, running_max[r], running_sum[r],
                              acc.data() + r * dh);
        }
      }
      for (int64_t i = i0; i < i1; ++i)
        finish_row(acc.data() + (i - i0) * dh, running_max[i - i0], running_sum[i - i0], dh,
                   po + (head_index * length + i) * dh, plse + head_index * length + i);
    }
  }
}

// One tile's dS back through level l's maps: returns Σ dS ⊙ C_l[maps] (the
// tile's part of dL/dλ_l) and adds dC_l = λ_l Σ_{maps} dS into the coarse
// query and key gradients.
template <class T, int64_t Tile>
double level_backward(const Level<T>& level, const CoarseTile<Tile>& tile, const T* coarse, const T* grad_scores,
                      int64_t dh, T scale, int64_t i0, int64_t i1, int64_t j0, int64_t j1, T* grad_coarse,
                      T* grad_queries, T* grad_keys) {
  double grad_weight = 0;
  for (int64_t a = 0; a < tile.rows; ++a) std::fill(grad_coarse + a * Tile, grad_coarse + a * Tile + tile.cols, T(0));
  for (int64_t i = i0; i < i1; ++i) {
    const int64_t end = level.allowed_end(i, j1) - j0;
    if (end <= 0) continue;
    const int64_t a = level.query_index(i) - tile.row0;
    const T* coarse_row = coarse + a * Tile;
    T* grad_row = grad_coarse + a * Tile;
    const T* grad_scores_row = grad_scores + (i - i0) * Tile;
    T row_total = 0;
    for (int64_t c = 0; c < end; ++c) {
      row_total += grad_scores_row[c] * coarse_row[tile.column_of[c]];
      grad_row[tile.column_of[c]] += level.weight * grad_scores_row[c];
    }
    grad_weight += row_total;
  }
  for (int64_t a = 0; a < tile.rows; ++a)
    for (int64_t b = 0; b < tile.cols; ++b) {
      const T g = grad_coarse[a * Tile + b] * scale;
      if (g == T(0)) continue;
      add_scaled(grad_queries + (tile.row0 + a) * dh, level.keys + (tile.col0 + b) * dh, g, dh);
      add_scaled(grad_keys + (tile.col0 + b) * dh, level.queries + (tile.row0 + a) * dh, g, dh);
    }
  return grad_weight;
}

// One task per (batch, head): every gradient row it writes (fine and coarse)
// belongs to that head, visited in a fixed order (key tiles outer, query
// tiles inner). dL/dλ is summed per head in double, then over the batch in order.
template <class T, int64_t Tile>
void multiscale_backward_tiles(const std::vector<Tensor>& queries, const std::vector<Tensor>& keys, const Tensor& v,
                               const Tensor& level_weights, const Tensor& lengths, const Tensor& out,
                               const Tensor& log_sum_exp, const Tensor& grad_out, const MultiscaleAttentionDims& dims,
                               std::vector<Tensor>& grad_queries, std::vector<Tensor>& grad_keys, Tensor& grad_v,
                               Tensor& grad_level_weights) {
  const int64_t length = dims.length, dh = dims.head_dim, levels = dims.levels, tasks = dims.batch * dims.heads;
  const T scale = T(1) / std::sqrt(T(dh));
  const T *pv = v.data<T>(), *po = out.data<T>(), *plse = log_sum_exp.data<T>(), *pgo = grad_out.data<T>();
  const T* weights = level_weights.data<T>();
  const int64_t* valid_keys = lengths.data<int64_t>();
  T* pgv = grad_v.data<T>();
  std::vector<double> head_grad_weights(static_cast<size_t>(tasks * levels), 0.0);
#pragma omp parallel if (tasks * length * length * dh > HKT_OMP_MIN_WORK)
  {
    std::vector<T> keys_t(levels * dh * Tile), values_t(dh * Tile), coarse(levels * Tile * Tile);
    std::vector<T> scores(Tile * Tile), grad_coarse(Tile * Tile), delta(length);
    std::vector<CoarseTile<Tile>> tiles(static_cast<size_t>(levels));
    T grad_probs[Tile];
#pragma omp for schedule(dynamic)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t offset = task * length * dh, valid = valid_keys[task / dims.heads];
      const std::vector<Level<T>> level_views = head_levels<T>(queries, keys, weights, dims, task);
      std::vector<T*> level_grad_queries(levels), level_grad_keys(levels);
      for (int64_t l = 0; l < levels; ++l) {
        const int64_t rows = queries[l].size(2);
        level_grad_queries[l] = grad_queries[l].data<T>() + task * rows * dh;
        level_grad_keys[l] = grad_keys[l].data<T>() + task * rows * dh;
        std::fill(level_grad_queries[l], level_grad_queries[l] + rows * dh, T(0));
        std::fill(level_grad_keys[l], level_grad_keys[l] + rows * dh, T(0));
      }
      const T *values = pv + offset, *go = pgo + offset, *lse = plse + task * length;
      T* gv = pgv + offset;
      std::fill(gv, gv + length * dh, T(0));
      for (int64_t i = 0; i < length; ++i) delta[i] = dot(go + i * dh, po + offset + i * dh, dh);
      for (int64_t j0 = 0; j0 < valid; j0 += Tile) {
        const int64_t j1 = std::min(valid, j0 + Tile);
        load_level_keys(level_views, tiles, dh, j0, j1, keys_t.data());
        load_transposed(values + j0 * dh, j1 - j0, dh, Tile, values_t.data());
        for (int64_t i0 = dims.causal ? j0 : 0; i0 < length; i0 += Tile) {  // causally, rows i < j0 see no key here
          const int64_t i1 = std::min(length, i0 + Tile);
          fused_scores(level_views, tiles, keys_t.data(), dh, scale, i0, i1, j0, j1, coarse.data(), scores.data());
          // scores → dS = P ⊙ (dP − D) in place, 0 at masked keys; dV += Pᵀ dO.
          for (int64_t i = i0; i < i1; ++i) {
            T* row = scores.data() + (i - i0) * Tile;
            const int64_t count = std::max<int64_t>(0, std::min(key_limit(i, valid, dims.causal), j1) - j0);
            score_row(go + i * dh, values_t.data(), dh, Tile, count, T(1), grad_probs);
            for (int64_t c = 0; c < count; ++c) {
              const T p = std::exp(row[c] - lse[i]);
              add_scaled(gv + (j0 + c) * dh, go + i * dh, p, dh);
              row[c] = p * (grad_probs[c] - delta[i]);
            }
            std::fill(row + count, row + Tile, T(0));
          }
          for (int64_t l = 0; l < levels; ++l) {
            if (tiles[l].rows <= 0) continue;
            head_grad_weights[task * levels + l] +=
                level_backward(level_views[l], tiles[l], coarse.data() + l * Tile * Tile, scores.data(), dh, scale, i0,
                               i1, j0, j1, grad_coarse.data(), level_grad_queries[l], level_grad_keys[l]);
          }
        }
      }
    }
  }
  T* gw = grad_level_weights.data<T>();
  for (int64_t h = 0; h < dims.heads; ++h)
    for (int64_t l = 0; l < levels; ++l) {
      double total = 0;
      for (int64_t b = 0; b < dims.batch; ++b) total += head_grad_weights[(b * dims.heads + h) * levels + l];
      gw[h * levels + l] = static_cast<T>(total);
    }
}

void multiscale_attention_cpu(const std::vector<Tensor>& queries, const std::vector<Tensor>& keys, const Tensor& v,
                              const Tensor& level_weights, const Tensor& lengths, const MultiscaleAttentionDims& dims,
                              Tensor& out, Tensor& log_sum_exp) {
  visit_floating("multiscale_attention", v.dtype(), [&](auto tag) {
    using T = decltype(tag);
    visit_tile("multiscale_attention", dims.tile, [&](auto tile) {
      multiscale_forward_tiles<T, decltype(tile)::value>(queries, keys, v, level_weights, lengths, dims, out,
                                                         log_sum_exp);
    });
  });
}

void multiscale_attention_backward_cpu(const std::vector<Tensor>& queries, const std::vector<Tensor>& keys,
                                       const Tensor& v, const Tensor& level_weights, const Tensor& lengths,
                                       const Tensor& out, const Tensor& log_sum_exp, const Tensor& grad_out,
                                       const MultiscaleAttentionDims& dims, std::vector<Tensor>& grad_queries,
                                       std::vector<Tensor>& grad_keys, Tensor& grad_v, Tensor& grad_level_weights) {
  visit_floating("multiscale_attention_backward", v.dtype(), [&](auto tag) {
    using T = decltype(tag);
    visit_tile("multiscale_attention_backward", dims.tile, [&](auto tile) {
      multiscale_backward_tiles<T, decltype(tile)::value>(queries, keys, v, level_weights, lengths, out, log_sum_exp,
                                                          grad_out, dims, grad_queries, grad_keys, grad_v,
                                                          grad_level_weights);
    });
  });
}

}  // namespace

HKT_REGISTER_KERNEL("multiscale_attention", DeviceType::CPU, multiscale_attention_cpu);
HKT_REGISTER_KERNEL("multiscale_attention_backward", DeviceType::CPU, multiscale_attention_backward_cpu);

// ---- op -------------------------------------------------------------------

namespace {

constexpr const char* kOp = "multiscale_attention";

void check_multiscale_args(const std::vector<Tensor>& q_levels, const std::vector<Tensor>& k_levels, const Tensor& v,
                           const Tensor& level_logits, int64_t stride) {
  const int64_t levels = static_cast<int64_t>(q_levels.size());
  check(levels >= 1, kOp, ": no levels (q_levels is empty)");
  check(static_cast<int64_t>(k_levels.size()) == levels, kOp, ": ", levels, " query levels but ", k_levels.size(),
        " key levels");
  check(stride >= 2, kOp, ": stride ", stride, " must be at least 2");
  check_floating(kOp, v);
  check_floating(kOp, level_logits);
  check(v.dim() == 4 && v.numel() > 0, kOp, ": v ", shape_str(v.shape()), " is not a non-empty [B, H, T, dh]");
  const int64_t batch = v.size(0), heads = v.size(1), length = v.size(2), dh = v.size(3);
  for (int64_t l = 0; l < levels; ++l) {
    check_floating(kOp, q_levels[l]);
    check_floating(kOp, k_levels[l]);
    check_compatible(kOp, {q_levels[l], k_levels[l], v, level_logits});
    const Shape expected{batch, heads, level_length(length, l, stride), dh};
    for (const auto& [name, t] : {std::pair{"q_levels", q_levels[l]}, std::pair{"k_levels", k_levels[l]}})
      check(t.shape() == expected, kOp, ": ", name, "[", l, "] ", shape_str(t.shape()), " but expected ",
            shape_str(expected), " (v ", shape_str(v.shape()), ", T_", l, " = level_length(", length, ", ", l, ", ",
            stride, "))");
  }
  check(level_logits.shape() == Shape{heads, levels}, kOp, ": level_logits ", shape_str(level_logits.shape()),
        " but expected [H, L] = [", heads, ", ", levels, "]");
}

}  // namespace

Tensor multiscale_attention(const std::vector<Tensor>& q_levels, const std::vector<Tensor>& k_levels, const Tensor& v,
                            const Tensor& level_logits, const Tensor& lengths, int64_t stride, bool causal) {
  check_multiscale_args(q_levels, k_levels, v, level_logits, stride);
  MultiscaleAttentionDims dims;
  attention_tiles::fill_dims(dims, v, causal);
  dims.levels = static_cast<int64_t>(q_levels.size());
  dims.stride = stride;
  Tensor valid = attention_tiles::checked_lengths(kOp, lengths, dims.batch, dims.length, v.device());

  Tensor level_weights = softmax(level_logits, 1);  // λ [H, L]; its own node carries dλ to level_logits
  Tensor out = Tensor::empty(v.shape(), v.dtype(), v.device());
  Tensor log_sum_exp = Tensor::empty({dims.batch, dims.heads, dims.length}, v.dtype(), v.device());
  dispatch::kernel<MultiscaleAttentionKernel>(kOp, v.device())(q_levels, k_levels, v, level_weights, valid, dims, out,
                                                               log_sum_exp);
  std::vector<Tensor> inputs(q_levels);
  inputs.insert(inputs.end(), k_levels.begin(), k_levels.end());
  inputs.push_back(v);
  inputs.push_back(level_weights);
  std::vector<Tensor> saved;
  for (const Tensor& t : inputs) saved.push_back(t.detach());
  record(kOp, inputs, out,
         [saved, valid, dims, out = out.detach(), log_sum_exp](const Tensor& grad_out) -> std::vector<Tensor> {
           const size_t levels = static_cast<size_t>(dims.levels);
           const std::vector<Tensor> queries(saved.begin(), saved.begin() + levels);
           const std::vector<Tensor> keys(saved.begin() + levels, saved.begin() + 2 * levels);
           const Tensor &values = saved[2 * levels], &level_weights = saved[2 * levels + 1];
           std::vector<Tensor> grad_queries, grad_keys;
           for (size_t l = 0; l < levels; ++l) {
             grad_queries.push_back(Tensor::empty(queries[l].shape(), values.dtype(), values.device()));
             grad_keys.push_back(Tensor::empty(keys[l].shape(), values.dtype(), values.device()));
           }
           Tensor grad_v = Tensor::empty(values.shape(), values.dtype(), values.device());
           Tensor grad_level_weights = Tensor::empty(level_weights.shape(), values.dtype(), values.device());
           dispatch::kernel<MultiscaleAttentionBackwardKernel>("multiscale_attention_backward", values.device())(
               queries, keys, values, level_weights, valid, out, log_sum_exp, grad_out, dims, grad_queries, grad_keys,
               grad_v, grad_level_weights);
           std::vector<Tensor> grads(grad_queries);
           grads.insert(grads.end(), grad_keys.begin(), grad_keys.end());
           grads.push_back(grad_v);
           grads.push_back(grad_level_weights);
           return grads;
         });
  return out;
}

}  // namespace hkt
