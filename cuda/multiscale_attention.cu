// HKT's fused multi-scale attention on CUDA: the "multiscale_attention" and
// "multiscale_attention_backward" kernels of ops/multiscale_attention.h,
// float32, both modes (bidirectional and causal), on the plan of
// ops/multiscale_attention.cpp and cuda/attention.cu:
//
//   S[i, j] = Σ_l λ_l · C_l[q_l(i), k_l(j)] · [term l allowed],  C_l = q_l k_lᵀ / sqrt(dh)
//   out = softmax_j(S + mask) v
//
// Side by side with the CPU kernels:
//   forward    As the CPU, one block per (batch, head, query tile), key tiles in
//              order, online softmax. For each key tile, each level's coarse keys
//              k_l[k_l(j0)] … k_l[k_l(j1 − 1)] are staged in shared memory (the
//              CPU's load_level_keys), and each query thread computes the coarse
//              scores of its own coarse row, C_l[q_l(i), ·] over those columns
//              (the CPU's coarse_scores, one row per thread), then adds
//              λ_l · C_l through the key map where the term is allowed (the
//              CPU's add_level_scores). No matrix is upsampled.
//   backward   The CPU's level_backward formulas,
//                dS = P ⊙ (dP − D),  dλ_l = Σ dS ⊙ C_l[maps],
//                dq_l[a] = λ_l / sqrt(dh) · Σ_{i: q_l(i) = a} Σ_{j allowed} dS_ij k_l[k_l(j)]
//                dk_l[b] = λ_l / sqrt(dh) · Σ_{j: k_l(j) = b} Σ_{i allowed} dS_ij q_l[q_l(i)]
//              split so that every row has one writer (no atomics, deterministic):
//                pass 1, a thread per fine query row i: G_l[i] = Σ_j dS_ij k_l[k_l(j)]
//                        and its row of dλ partial sums;
//                pass 2, a thread per fine key row j: dV_j and H_l[j] = Σ_i dS_ij q_l[q_l(i)];
//                then dq_l, dk_l sum G_l, H_l over each coarse row's s^l fine rows
//                (the index maps' preimages) and dλ sums its partials in double.
//              G and H are [L, B, H, T, dh] scratch: linear in T, never T × T.
// Untested on hardware when written: see docs/ARCHITECTURE.md and tests/parity_attention.cpp.
#include <cuda_runtime.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "cuda/attention_tiles.cuh"
#include "engine/dispatch.h"
#include "ops/index.h"
#include "ops/multiscale_attention.h"

namespace hkt {
namespace {

using namespace cuda_attention;

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
  extern __shared__ float shared[];
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
#pragma unroll
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
  extern __shared__ float shared[];
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
#pragma unroll
  for (int d = 0; d < Dh; ++d) grad_row[d] = 0;
  if (active) {
    load_row<Dh>(pgo + (head_index * length + i) * Dh, grad_row);
    lse = plse[head_index * length + i];
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
#pragma unroll
      for (int d = 0; d < Dh; ++d) sum[d] = 0;
      for (int b = 0; b < cols; ++b) add_scaled<Dh>(sum, level_keys + (l * kMultiscaleStage + b) * Dh, grad_coarse[b]);
      float* target = level_query_sums + (l * fine_rows + head_index * length + i) * Dh;
#pragma unroll
      for (int d = 0; d < Dh; ++d) target[d] += sum[d];
    }
  }
  if (active)
    for (int l = 0; l < levels.count; ++l) weight_partials[(head_index * length + i) * levels.count + l] = grad_weight[l];
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
  extern __shared__ float shared[];
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
#pragma unroll
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
      if (threadIdx.x < n) {
        stage_lse[threadIdx.x] = plse[head_index * length + s0 + threadIdx.x];
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
#pragma unroll
        for (int d = 0; d < Dh; ++d) sum[d] = 0;
        for (int a = 0; a < rows; ++a)
          add_scaled<Dh>(sum, level_queries + (l * kMultiscaleStage + a) * Dh, grad_coarse[a]);
        float* target = level_key_sums + (l * fine_rows + head_index * length + j) * Dh;
#pragma unroll
        for (int d = 0; d < Dh; ++d) target[d] += sum[d];
      }
    }
  }
  if (j < length) {
#pragma unroll
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

// ---- host side ------------------------------------------------------------

// s^l, saturated past T as ops/index.cpp (the CPU kernel's block_of).
int64_t block_of(int64_t length, int64_t level, int64_t stride) {
  int64_t block = 1;
  for (int64_t l = 0; l < level && block <= length; ++l) block *= stride;
  return block;
}

std::string describe(const MultiscaleAttentionDims& dims) {
  return "v [" + std::to_string(dims.batch) + ", " + std::to_string(dims.heads) + ", " + std::to_string(dims.length) +
         ", " + std::to_string(dims.head_dim) + "], " + std::to_string(dims.levels) + " levels, stride " +
         std::to_string(dims.stride);
}

Levels level_args(const char* op, const std::string& shapes, const std::vector<Tensor>& queries,
                  const std::vector<Tensor>& keys, const MultiscaleAttentionDims& dims, Device device) {
  hkt::check(dims.levels >= 1 && dims.levels <= kMaxLevels, op, ": ", shapes, ": the CUDA kernel takes 1 to ",
             kMaxLevels, " levels");
  hkt::check(static_cast<int64_t>(queries.size()) == dims.levels && static_cast<int64_t>(keys.size()) == dims.levels,
             op, ": ", shapes, ": ", queries.size(), " query and ", keys.size(), " key levels");
  Levels levels{};
  levels.count = static_cast<int>(dims.levels);
  for (int l = 0; l < levels.count; ++l) {
    const Shape expected{dims.batch, dims.heads, level_length(dims.length, l, dims.stride), dims.head_dim};
    for (const Tensor* t : {&queries[l], &keys[l]}) {
      check_float32_on(op, shapes, *t, device);
      hkt::check(t->shape() == expected, op, ": ", shapes, ": level ", l, " has ", t->str(), ", expected ",
                 shape_str(expected));
    }
    levels.queries[l] = device_floats(queries[l]);
    levels.keys[l] = device_floats(keys[l]);
    levels.rows[l] = expected[2];
    levels.block[l] = block_of(dims.length, l, dims.stride);
  }
  return levels;
}

void check_common(const char* op, const std::string& shapes, const Tensor& v, const Tensor& level_weights,
                  const Tensor& lengths, const MultiscaleAttentionDims& dims) {
  check_float32_on(op, shapes, v, v.device());
  check_float32_on(op, shapes, level_weights, v.device());
  hkt::check(level_weights.shape() == Shape{dims.heads, dims.levels}, op, ": ", shapes, ": level weights ",
             level_weights.str(), ", expected [H, L]");
  hkt::check(lengths.device() == v.device() && lengths.dtype() == DType::Int64, op, ": ", shapes, ": lengths ",
             lengths.str(), " on ", lengths.device().str(), " (int64 on ", v.device().str(), " expected)");
}

// Dynamic shared memory of `bytes` for `kernel`, opting in above 48 KiB.
template <class Kernel>
void allow_shared(const char* op, const std::string& shapes, Kernel kernel, size_t bytes) {
  if (bytes <= kSharedLimit) return;
  const cudaError_t status =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    fail(op, ": ", shapes, ": needs ", bytes, " bytes of shared memory per block, more than the device allows (",
         cudaGetErrorString(status), "); use fewer levels or a smaller head_dim");
  }
}

void multiscale_attention_cuda(const std::vector<Tensor>& queries, const std::vector<Tensor>& keys, const Tensor& v,
                               const Tensor& level_weights, const Tensor& lengths,
                               const MultiscaleAttentionDims& dims, Tensor& out, Tensor& log_sum_exp) {
  const char* op = "multiscale_attention";
  const std::string shapes = describe(dims);
  const Device device = v.device();
  check_common(op, shapes, v, level_weights, lengths, dims);
  check_float32_on(op, shapes, out, device);
  check_float32_on(op, shapes, log_sum_exp, device);
  const Levels levels = level_args(op, shapes, queries, keys, dims, device);
  visit_head_dim(op, shapes, dims.head_dim, [&](auto head_dim) {
    constexpr int Dh = decltype(head_dim)::value;
    const unsigned blocks = task_blocks(op, dims.batch * dims.heads * row_tiles(dims.length));
    const size_t shared = sizeof(float) * (dims.levels + 1) * kMultiscaleStage * Dh;
    allow_shared(op, shapes, multiscale_forward_kernel<Dh>, shared);
    const float scale = 1.0f / std::sqrt(static_cast<float>(Dh));
    multiscale_forward_kernel<Dh><<<blocks, kRowsPerBlock, shared, cuda::stream(device.index)>>>(
        levels, device_floats(v), device_floats(level_weights), static_cast<const int64_t*>(lengths.raw_data()),
        dims.heads, dims.length, dims.causal, scale, mutable_floats(out), mutable_floats(log_sum_exp));
    cuda::check_launch(op);
  });
}

void multiscale_attention_backward_cuda(const std::vector<Tensor>& queries, const std::vector<Tensor>& keys,
                                        const Tensor& v, const Tensor& level_weights, const Tensor& lengths,
                                        const Tensor& out, const Tensor& log_sum_exp, const Tensor& grad_out,
                                        const MultiscaleAttentionDims& dims, std::vector<Tensor>& grad_queries,
                                        std::vector<Tensor>& grad_keys, Tensor& grad_v, Tensor& grad_level_weights) {
  const char* op = "multiscale_attention_backward";
  const std::string shapes = describe(dims);
  const Device device = v.device();
  check_common(op, shapes, v, level_weights, lengths, dims);
  for (const Tensor* t : std::initializer_list<const Tensor*>{&out, &log_sum_exp, &grad_out, &grad_v, &grad_level_weights})
    check_float32_on(op, shapes, *t, device);
  hkt::check(grad_out.shape() == v.shape(), op, ": ", shapes, ": grad_out ", grad_out.str(), " differs from v");
  const Levels levels = level_args(op, shapes, queries, keys, dims, device);
  const Levels grads = level_args(op, shapes, grad_queries, grad_keys, dims, device);
  visit_head_dim(op, shapes, dims.head_dim, [&](auto head_dim) {
    constexpr int Dh = decltype(head_dim)::value;
    cudaStream_t stream = cuda::stream(device.index);
    const unsigned blocks = task_blocks(op, dims.batch * dims.heads * row_tiles(dims.length));
    const float scale = 1.0f / std::sqrt(static_cast<float>(Dh));
    const int64_t fine_rows = dims.batch * dims.heads * dims.length;
    const int64_t* valid = static_cast<const int64_t*>(lengths.raw_data());

    Tensor delta = Tensor::empty({fine_rows}, DType::Float32, device);
    Tensor query_sums = Tensor::empty({dims.levels, fine_rows, Dh}, DType::Float32, device);
    Tensor key_sums = Tensor::empty({dims.levels, fine_rows, Dh}, DType::Float32, device);
    Tensor weight_partials = Tensor::empty({fine_rows, dims.levels}, DType::Float64, device);
    cuda::check(cudaMemsetAsync(query_sums.raw_data(), 0, query_sums.nbytes(), stream), op, "cudaMemsetAsync");
    cuda::check(cudaMemsetAsync(key_sums.raw_data(), 0, key_sums.nbytes(), stream), op, "cudaMemsetAsync");

    row_delta_kernel<Dh><<<cuda::blocks_for(fine_rows), 256, 0, stream>>>(device_floats(grad_out), device_floats(out),
                                                                            fine_rows, mutable_floats(delta));
    cuda::check_launch(op);

    const size_t query_shared = sizeof(float) * (dims.levels + 1) * kMultiscaleStage * Dh;
    allow_shared(op, shapes, multiscale_grad_query_kernel<Dh>, query_shared);
    multiscale_grad_query_kernel<Dh><<<blocks, kRowsPerBlock, query_shared, stream>>>(
        levels, device_floats(v), device_floats(level_weights), valid, device_floats(log_sum_exp),
        device_floats(delta), device_floats(grad_out), dims.heads, dims.length, dims.causal, scale,
        mutable_floats(query_sums), static_cast<double*>(weight_partials.raw_data()));
    cuda::check_launch(op);

    const size_t key_shared = sizeof(float) * ((dims.levels + 1) * kMultiscaleStage * Dh + 2 * kMultiscaleStage);
    allow_shared(op, shapes, multiscale_grad_key_kernel<Dh>, key_shared);
    multiscale_grad_key_kernel<Dh><<<blocks, kRowsPerBlock, key_shared, stream>>>(
        levels, device_floats(v), device_floats(level_weights), valid, device_floats(log_sum_exp),
        device_floats(delta), device_floats(grad_out), dims.heads, dims.length, dims.causal, scale,
        mutable_floats(grad_v), mutable_floats(key_sums));
    cuda::check_launch(op);

    for (int l = 0; l < levels.count; ++l) {
      const int64_t rows = levels.rows[l], total = dims.batch * dims.heads * rows * Dh;
      const float* query_level_sums = device_floats(query_sums) + l * fine_rows * Dh;
      const float* key_level_sums = device_floats(key_sums) + l * fine_rows * Dh;
      coarse_gradient_kernel<<<cuda::blocks_for(total), 256, 0, stream>>>(
          query_level_sums, device_floats(level_weights), dims.heads, dims.levels, l, dims.length, rows,
          levels.block[l], Dh, dims.causal, scale, total, const_cast<float*>(grads.queries[l]));
      cuda::check_launch(op);
      coarse_gradient_kernel<<<cuda::blocks_for(total), 256, 0, stream>>>(
          key_level_sums, device_floats(level_weights), dims.heads, dims.levels, l, dims.length, rows,
          levels.block[l], Dh, false, scale, total, const_cast<float*>(grads.keys[l]));
      cuda::check_launch(op);
    }
    level_weight_gradient_kernel<<<cuda::blocks_for(dims.heads * dims.levels), 256, 0, stream>>>(
        static_cast<const double*>(weight_partials.raw_data()), dims.batch, dims.heads, dims.levels, dims.length,
        mutable_floats(grad_level_weights));
    cuda::check_launch(op);
    // The scratch tensors are released on return, maybe before the kernels run;
    // see attention_backward_cuda for why that is safe.
  });
}

}  // namespace

HKT_REGISTER_KERNEL("multiscale_attention", DeviceType::CUDA, multiscale_attention_cuda);
HKT_REGISTER_KERNEL("multiscale_attention_backward", DeviceType::CUDA, multiscale_attention_backward_cuda);

}  // namespace hkt
