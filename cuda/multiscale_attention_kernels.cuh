#pragma once
// The kernels of cuda/multiscale_attention.cu (see there and
// cuda/attention_tiles.cuh): device code only, also compiled on the CPU by
// tests/cuda_emulation.h.
#include <cstdint>

#include "cuda/attention_tiles.cuh"

namespace hkt::cuda_attention {

constexpr int kMaxLevels = 8;          // levels the kernels take (HKT uses 1–4)
constexpr int kMultiscaleStage = 16;   // fine rows staged per step; a level's coarse rows of a step fit too
constexpr int kSharedLimit = 48 * 1024;  // dynamic shared memory usable without opting in

// Each level's rows of every (batch, head), passed by value to the kernels.
struct Levels {
  const float* queries[kMaxLevels];  // [B, H, T_l, dh]
  const float* keys[kMaxLevels];     // [B, H, T_l, dh]
  int64_t rows[kMaxLevels];          // T_l
  int64_t block[kMaxLevels];         // s^l, saturated past T as ops/index.cpp
  int count;
};

// SPEC section 3's index maps, as the CPU's Level: −1 means no complete block yet (causal).
__device__ inline int64_t query_index(int64_t i, int64_t block, bool causal) {
  return causal ? (i + 1) / block - 1 : i / block;
}
__device__ inline int64_t key_index(int64_t j, int64_t block) { return j / block; }
// As Level::allowed_end: keys j < allowed_end(i) of query i carry level l's term.
__device__ inline int64_t allowed_end(int64_t i, int64_t key_end, int64_t block, bool causal) {
  return causal ? min64(key_end, (query_index(i, block, causal) + 1) * block) : key_end;
}
// The coarse rows [row0, row0 + rows) that fine queries [i0, i1) touch (CoarseTile::locate_queries).
__device__ inline void coarse_rows(int64_t i0, int64_t i1, int64_t block, bool causal, int64_t& row0, int64_t& rows) {
  row0 = max64(0, query_index(i0, block, causal));
  rows = query_index(i1 - 1, block, causal) - row0 + 1;  // ≤ 0: no query of the tile has a complete block
}

// Stages level l's coarse keys of fine keys [j0, j1) at stage + l · kMultiscaleStage · Dh (CPU's load_level_keys).
template <int Dh>
__device__ void stage_level_keys(const Levels& levels, int64_t head_index, int64_t j0, int64_t j1, float* stage) {
  for (int l = 0; l < levels.count; ++l) {
    const int64_t col0 = key_index(j0, levels.block[l]), cols = key_index(j1 - 1, levels.block[l]) - col0 + 1;
    stage_rows<Dh>(levels.keys[l] + (head_index * levels.rows[l] + col0) * Dh, cols, stage + l * kMultiscaleStage * Dh);
  }
}

// scores[c] = Σ_l λ_l · C_l[q_l(i), k_l(j0 + c)] over allowed terms, c < count; keys staged by stage_level_keys.
// The per-level coarse scores are left in coarse[l · kMultiscaleStage + b] (column b = k_l(j) − k_l(j0)).
template <int Dh>
__device__ void fused_score_row(const Levels& levels, const float* weights, const float* level_keys,
                                int64_t head_index, int64_t i, int64_t j0, int count, bool causal, float scale,
                                float* scores, float* coarse) {
  float query[Dh];
  for (int c = 0; c < count; ++c) scores[c] = 0;
  for (int l = 0; l < levels.count; ++l) {
    const int64_t block = levels.block[l];
    const int end = static_cast<int>(min64(count, allowed_end(i, j0 + count, block, causal) - j0));
    if (end <= 0) continue;  // also every causal row with q_l(i) = −1
    const int64_t col0 = key_index(j0, block), cols = key_index(j0 + end - 1, block) - col0 + 1;
    load_row<Dh>(levels.queries[l] + (head_index * levels.rows[l] + query_index(i, block, causal)) * Dh, query);
    float* level_coarse = coarse + l * kMultiscaleStage;
    score_row<Dh>(query, level_keys + l * kMultiscaleStage * Dh, static_cast<int>(cols), scale, level_coarse);
    const float weight = weights[l];
    for (int c = 0; c < end; ++c) scores[c] += weight * level_coarse[key_index(j0 + c, block) - col0];
  }
}

// One block per (batch, head, query tile), one thread per query row (the CPU's multiscale_forward_tiles).
// Shared: levels.count × [kMultiscaleStage, Dh] coarse keys, then [kMultiscaleStage, Dh] values.
template <int Dh>
__global__ void multiscale_forward_kernel(Levels levels, const float* pv, const float* level_weights,
                                          const int64_t* valid_keys, int64_t heads, int64_t length, bool causal,
                                          float scale, float* po, float* plse) {
  HKT_DYNAMIC_SHARED(shared);
  float* level_keys = shared;
  float* values = shared + levels.count * kMultiscaleStage * Dh;
  const int64_t query_tiles = row_tiles(length), task = blockIdx.x;
  const int64_t head_index = task / query_tiles, i0 = (task % query_tiles) * kRowsPerBlock;
  const int64_t i1 = min64(length, i0 + kRowsPerBlock), i = i0 + threadIdx.x;
  const bool active = i < i1;
  const int64_t valid = valid_keys[head_index / heads];
  const float* weights = level_weights + (head_index % heads) * levels.count;

  float acc[Dh], scores[kMultiscaleStage], coarse[kMaxLevels * kMultiscaleStage];
  float running_max = -INFINITY, running_sum = 0;
HKT_UNROLL
  for (int d = 0; d < Dh; ++d) acc[d] = 0;
  const int64_t key_end = key_limit(i1 - 1, valid, causal);
  for (int64_t j0 = 0; j0 < key_end; j0 += kMultiscaleStage) {
    const int64_t j1 = min64(key_end, j0 + kMultiscaleStage);
    __syncthreads();
    stage_level_keys<Dh>(levels, head_index, j0, j1, level_keys);
    stage_rows<Dh>(pv + (head_index * length + j0) * Dh, j1 - j0, values);
    __syncthreads();
    if (!active) continue;
    const int count = static_cast<int>(min64(key_limit(i, valid, causal), j1) - j0);
    if (count <= 0) continue;
    fused_score_row<Dh>(levels, weights, level_keys, head_index, i, j0, count, causal, scale, scores, coarse);
    online_softmax_step<Dh>(scores, count, values, running_max, running_sum, acc);
  }
  if (active)
    finish_row<Dh>(acc, running_max, running_sum, po + (head_index * length + i) * Dh, plse + head_index * length + i);
}

// Pass 1, one thread per fine query row i: recomputes S_i· tile by tile, dS = P ⊙ (dP − D), and
//   G_l[i] += Σ_j allowed dS_ij k_l[k_l(j)]   (scratch [L, B·H·T, Dh], zeroed by the caller)
//   weight_partials[i · L + l] = Σ_j allowed dS_ij C_l[q_l(i), k_l(j)]   (double [B·H·T, L])
template <int Dh>
__global__ void multiscale_grad_query_kernel(Levels levels, const float* pv, const float* level_weights,
                                             const int64_t* valid_keys, const float* plse, const float* pdelta,
                                             const float* pgo, int64_t heads, int64_t length, bool causal,
                                             float scale, float* level_query_sums, double* weight_partials) {
  HKT_DYNAMIC_SHARED(shared);
  float* level_keys = shared;
  float* values = shared + levels.count * kMultiscaleStage * Dh;
  const int64_t query_tiles = row_tiles(length), task = blockIdx.x;
  const int64_t head_index = task / query_tiles, i0 = (task % query_tiles) * kRowsPerBlock;
  const int64_t i1 = min64(length, i0 + kRowsPerBlock), i = i0 + threadIdx.x;
  const bool active = i < i1;
  const int64_t valid = valid_keys[head_index / heads];
  const float* weights = level_weights + (head_index % heads) * levels.count;
  const int64_t fine_rows = gridDim.x / query_tiles * length;  // B · H · T

  float grad_row[Dh], sum[Dh], scores[kMultiscaleStage], coarse[kMaxLevels * kMultiscaleStage];
  float grad_coarse[kMultiscaleStage];
  double grad_weight[kMaxLevels];
  for (int l = 0; l < kMaxLevels; ++l) grad_weight[l] = 0;
  float lse = 0, delta = 0;
HKT_UNROLL
  for (int d = 0; d < Dh; ++d) grad_row[d] = 0;
  if (active) {
    load_row<Dh>(pgo + (head_index * length + i) * Dh, grad_row);
    lse = loaded_log_sum_exp(plse + head_index * length + i);
    delta = pdelta[head_index * length + i];
  }
  const int64_t key_end = key_limit(i1 - 1, valid, causal);
  for (int64_t j0 = 0; j0 < key_end; j0 += kMultiscaleStage) {
    const int64_t j1 = min64(key_end, j0 + kMultiscaleStage);
    __syncthreads();
    stage_level_keys<Dh>(levels, head_index, j0, j1, level_keys);
    stage_rows<Dh>(pv + (head_index * length + j0) * Dh, j1 - j0, values);
    __syncthreads();
    if (!active) continue;
    const int count = static_cast<int>(min64(key_limit(i, valid, causal), j1) - j0);
    if (count <= 0) continue;
    fused_score_row<Dh>(levels, weights, level_keys, head_index, i, j0, count, causal, scale, scores, coarse);
    for (int c = 0; c < count; ++c) {  // scores → dS in place
      const float p = expf(scores[c] - lse);
      scores[c] = p * (dot<Dh>(grad_row, values + c * Dh) - delta);
    }
    for (int l = 0; l < levels.count; ++l) {
      const int64_t block = levels.block[l];
      const int end = static_cast<int>(min64(count, allowed_end(i, j1, block, causal) - j0));
      if (end <= 0) continue;
      const int64_t col0 = key_index(j0, block), cols = key_index(j0 + end - 1, block) - col0 + 1;
      const float* level_coarse = coarse + l * kMultiscaleStage;
      float row_total = 0;
      for (int b = 0; b < cols; ++b) grad_coarse[b] = 0;
      for (int c = 0; c < end; ++c) {
        const int64_t b = key_index(j0 + c, block) - col0;
        row_total += scores[c] * level_coarse[b];
        grad_coarse[b] += scores[c];
      }
      grad_weight[l] += row_total;
HKT_UNROLL
      for (int d = 0; d < Dh; ++d) sum[d] = 0;
      for (int b = 0; b < cols; ++b) add_scaled<Dh>(sum, level_keys + (l * kMultiscaleStage + b) * Dh, grad_coarse[b]);
      float* target = level_query_sums + (l * fine_rows + head_index * length + i) * Dh;
HKT_UNROLL
      for (int d = 0; d < Dh; ++d) target[d] += sum[d];
    }
  }
  if (active)
    for (int l = 0; l < levels.count; ++l)
      weight_partials[(head_index * length + i) * levels.count + l] = grad_weight[l];
}

// Pass 2, one thread per fine key row j (keys j ≥ lengths[b] get zeros): recomputes S_·j tile by
// tile over the queries that see key j and writes
//   dV_j = Σ_i P_ij dO_i,   H_l[j] += Σ_i allowed dS_ij q_l[q_l(i)]   (scratch [L, B·H·T, Dh], zeroed).
// Shared: levels.count × [kMultiscaleStage, Dh] coarse queries, [kMultiscaleStage, Dh] dO rows, lse, D.
template <int Dh>
__global__ void multiscale_grad_key_kernel(Levels levels, const float* pv, const float* level_weights,
                                           const int64_t* valid_keys, const float* plse, const float* pdelta,
                                           const float* pgo, int64_t heads, int64_t length, bool causal, float scale,
                                           float* pgv, float* level_key_sums) {
  HKT_DYNAMIC_SHARED(shared);
  float* level_queries = shared;
  float* grad_rows = shared + levels.count * kMultiscaleStage * Dh;
  float* stage_lse = grad_rows + kMultiscaleStage * Dh;
  float* stage_delta = stage_lse + kMultiscaleStage;
  const int64_t key_tiles = row_tiles(length), task = blockIdx.x;
  const int64_t head_index = task / key_tiles, j0 = (task % key_tiles) * kRowsPerBlock, j = j0 + threadIdx.x;
  const int64_t valid = valid_keys[head_index / heads];
  const bool active = j < valid;
  const float* weights = level_weights + (head_index % heads) * levels.count;
  const int64_t fine_rows = gridDim.x / key_tiles * length;  // B · H · T

  float value[Dh], key[Dh], grad_value[Dh], sum[Dh], scores[kMultiscaleStage], coarse[kMultiscaleStage];
  float grad_coarse[kMultiscaleStage];
HKT_UNROLL
  for (int d = 0; d < Dh; ++d) value[d] = grad_value[d] = 0;
  if (active) load_row<Dh>(pv + (head_index * length + j) * Dh, value);
  if (j0 < valid) {  // the same for every thread: the barriers below are reached by all
    for (int64_t s0 = causal ? j0 : 0; s0 < length; s0 += kMultiscaleStage) {
      const int64_t s1 = min64(length, s0 + kMultiscaleStage);
      const int n = static_cast<int>(s1 - s0);
      __syncthreads();
      for (int l = 0; l < levels.count; ++l) {
        int64_t row0, rows;
        coarse_rows(s0, s1, levels.block[l], causal, row0, rows);
        if (rows > 0)
          stage_rows<Dh>(levels.queries[l] + (head_index * levels.rows[l] + row0) * Dh, rows,
                         level_queries + l * kMultiscaleStage * Dh);
      }
      stage_rows<Dh>(pgo + (head_index * length + s0) * Dh, n, grad_rows);
      if (static_cast<int>(threadIdx.x) < n) {
        stage_lse[threadIdx.x] = loaded_log_sum_exp(plse + head_index * length + s0 + threadIdx.x);
        stage_delta[threadIdx.x] = pdelta[head_index * length + s0 + threadIdx.x];
      }
      __syncthreads();
      if (!active) continue;
      // S[s0 + r, j] for r < n, level by level in the CPU's order.
      for (int r = 0; r < n; ++r) scores[r] = 0;
      for (int l = 0; l < levels.count; ++l) {
        const int64_t block = levels.block[l], column = key_index(j, block);
        int64_t row0, rows;
        coarse_rows(s0, s1, block, causal, row0, rows);
        if (rows <= 0) continue;
        load_row<Dh>(levels.keys[l] + (head_index * levels.rows[l] + column) * Dh, key);
        for (int a = 0; a < rows; ++a)
          coarse[a] = scale * dot<Dh>(key, level_queries + (l * kMultiscaleStage + a) * Dh);
        for (int r = 0; r < n; ++r)
          if (j < allowed_end(s0 + r, length, block, causal))
            scores[r] += weights[l] * coarse[query_index(s0 + r, block, causal) - row0];
      }
      // scores → dS in place (0 where key j is masked for query s0 + r); dV_j += P dO.
      for (int r = 0; r < n; ++r) {
        if (j >= key_limit(s0 + r, valid, causal)) {
          scores[r] = 0;
          continue;
        }
        const float* grad_row = grad_rows + r * Dh;
        const float p = expf(scores[r] - stage_lse[r]);
        add_scaled<Dh>(grad_value, grad_row, p);
        scores[r] = p * (dot<Dh>(grad_row, value) - stage_delta[r]);
      }
      for (int l = 0; l < levels.count; ++l) {
        const int64_t block = levels.block[l];
        int64_t row0, rows;
        coarse_rows(s0, s1, block, causal, row0, rows);
        if (rows <= 0) continue;
        for (int a = 0; a < rows; ++a) grad_coarse[a] = 0;
        for (int r = 0; r < n; ++r)
          if (j < allowed_end(s0 + r, length, block, causal))
            grad_coarse[query_index(s0 + r, block, causal) - row0] += scores[r];
HKT_UNROLL
        for (int d = 0; d < Dh; ++d) sum[d] = 0;
        for (int a = 0; a < rows; ++a)
          add_scaled<Dh>(sum, level_queries + (l * kMultiscaleStage + a) * Dh, grad_coarse[a]);
        float* target = level_key_sums + (l * fine_rows + head_index * length + j) * Dh;
HKT_UNROLL
        for (int d = 0; d < Dh; ++d) target[d] += sum[d];
      }
    }
  }
  if (j < length) {
HKT_UNROLL
    for (int d = 0; d < Dh; ++d) pgv[(head_index * length + j) * Dh + d] = grad_value[d];
  }
}

// grad[bh, a, d] = λ[h, l] · scale · Σ_{fine rows i of coarse row a} sums[bh, i, d], one thread per element.
// The fine rows of coarse row a: query map (causal) [(a + 1) s − 1, (a + 2) s − 1), else [a s, (a + 1) s).
__global__ void coarse_gradient_kernel(const float* sums, const float* level_weights, int64_t heads, int64_t levels,
                                       int64_t level, int64_t length, int64_t rows, int64_t block, int64_t head_dim,
                                       bool shifted, float scale, int64_t total, float* grad) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t d = e % head_dim, a = (e / head_dim) % rows, head_index = e / (head_dim * rows);
    const int64_t first = shifted ? (a + 1) * block - 1 : a * block;
    const int64_t last = min64(length, first + block);
    float total_sum = 0;
    for (int64_t i = first; i < last; ++i) total_sum += sums[(head_index * length + i) * head_dim + d];
    grad[e] = level_weights[(head_index % heads) * levels + level] * scale * total_sum;
  }
}

// dλ[h, l] = Σ_b Σ_i partials[((b · H + h) · T + i) · L + l], in double, one thread per (h, l).
__global__ void level_weight_gradient_kernel(const double* partials, int64_t batch, int64_t heads, int64_t levels,
                                             int64_t length, float* grad_level_weights) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= heads * levels) return;
  const int64_t h = e / levels, l = e % levels;
  double total = 0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < length; ++i) total += partials[((b * heads + h) * length + i) * levels + l];
  grad_level_weights[e] = static_cast<float>(total);
}

}  // namespace hkt::cuda_attention
