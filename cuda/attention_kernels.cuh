#pragma once
// The kernels of cuda/attention.cu (see there and cuda/attention_tiles.cuh):
// device code only, also compiled on the CPU by tests/cuda_emulation.h.
#include <cstdint>

#include "cuda/attention_tiles.cuh"

namespace hkt::cuda_attention {

// One block per task = (batch · heads + head) · query_tiles + query tile, as the CPU's task index.
template <int Dh>
__global__ void attention_forward_kernel(const float* pq, const float* pk, const float* pv, const int64_t* valid_keys,
                                         int64_t heads, int64_t length, bool causal, float scale, float* po,
                                         float* plse) {
  __shared__ float keys[kStageRows * Dh];
  __shared__ float values[kStageRows * Dh];
  const int64_t query_tiles = row_tiles(length), task = blockIdx.x;
  const int64_t head_index = task / query_tiles, i0 = (task % query_tiles) * kRowsPerBlock;
  const int64_t i1 = min64(length, i0 + kRowsPerBlock), i = i0 + threadIdx.x;
  const bool active = i < i1;
  const int64_t valid = valid_keys[head_index / heads];
  const int64_t head_offset = head_index * length * Dh;

  float query[Dh], acc[Dh], scores[kStageRows];
  float running_max = -INFINITY, running_sum = 0;
HKT_UNROLL
  for (int d = 0; d < Dh; ++d) query[d] = acc[d] = 0;
  if (active) load_row<Dh>(pq + head_offset + i * Dh, query);

  const int64_t key_end = key_limit(i1 - 1, valid, causal);  // the same for every thread of the block
  for (int64_t j0 = 0; j0 < key_end; j0 += kStageRows) {
    const int64_t j1 = min64(key_end, j0 + kStageRows);
    __syncthreads();  // every thread is done with the previous tile
    stage_rows<Dh>(pk + head_offset + j0 * Dh, j1 - j0, keys);
    stage_rows<Dh>(pv + head_offset + j0 * Dh, j1 - j0, values);
    __syncthreads();
    if (!active) continue;
    const int count = static_cast<int>(min64(key_limit(i, valid, causal), j1) - j0);
    if (count <= 0) continue;
    score_row<Dh>(query, keys, count, scale, scores);
    online_softmax_step<Dh>(scores, count, values, running_max, running_sum, acc);
  }
  if (active) finish_row<Dh>(acc, running_max, running_sum, po + head_offset + i * Dh, plse + head_index * length + i);
}

// dK_j and dV_j for one key row j per thread (FlashAttention-2's backward, as the CPU):
//   P_ij = exp(S_ij − lse_i),  dV_j = Σ_i P_ij dO_i,
//   dS_ij = P_ij (dO_i · v_j − D_i),  dK_j = Σ_i dS_ij q_i / sqrt(dh)
// over the queries i that see key j. Keys j ≥ lengths[b] get zeros, as on the CPU.
template <int Dh>
__global__ void attention_grad_kv_kernel(const float* pq, const float* pk, const float* pv, const int64_t* valid_keys,
                                         const float* plse, const float* pdelta, const float* pgo, int64_t heads,
                                         int64_t length, bool causal, float scale, float* pgk, float* pgv) {
  __shared__ float queries[kStageRows * Dh];
  __shared__ float grad_rows[kStageRows * Dh];
  __shared__ float stage_lse[kStageRows], stage_delta[kStageRows];
  const int64_t key_tiles = row_tiles(length), task = blockIdx.x;
  const int64_t head_index = task / key_tiles, j0 = (task % key_tiles) * kRowsPerBlock, j = j0 + threadIdx.x;
  const int64_t valid = valid_keys[head_index / heads];
  const bool active = j < valid;
  const int64_t head_offset = head_index * length * Dh;

  float key[Dh], value[Dh], grad_key[Dh], grad_value[Dh];
HKT_UNROLL
  for (int d = 0; d < Dh; ++d) key[d] = value[d] = grad_key[d] = grad_value[d] = 0;
  if (active) {
    load_row<Dh>(pk + head_offset + j * Dh, key);
    load_row<Dh>(pv + head_offset + j * Dh, value);
  }
  // Causally, queries i < j0 see none of this block's keys (the CPU's `i = causal ? j0 : 0`).
  // j0 < valid is the same for every thread, so the barriers inside are reached by all.
  if (j0 < valid) {
    for (int64_t s0 = causal ? j0 : 0; s0 < length; s0 += kStageRows) {
      const int64_t s1 = min64(length, s0 + kStageRows);
      __syncthreads();
      stage_rows<Dh>(pq + head_offset + s0 * Dh, s1 - s0, queries);
      stage_rows<Dh>(pgo + head_offset + s0 * Dh, s1 - s0, grad_rows);
      if (threadIdx.x < s1 - s0) {
        stage_lse[threadIdx.x] = loaded_log_sum_exp(plse + head_index * length + s0 + threadIdx.x);
        stage_delta[threadIdx.x] = pdelta[head_index * length + s0 + threadIdx.x];
      }
      __syncthreads();
      if (!active) continue;
      for (int r = 0; r < s1 - s0; ++r) {
        if (j >= key_limit(s0 + r, valid, causal)) continue;  // key j is masked for query s0 + r
        const float* query = queries + r * Dh;
        const float* grad_row = grad_rows + r * Dh;
        const float p = expf(scale * dot<Dh>(query, key) - stage_lse[r]);
        const float grad_score = p * (dot<Dh>(grad_row, value) - stage_delta[r]) * scale;
        add_scaled<Dh>(grad_value, grad_row, p);
        add_scaled<Dh>(grad_key, query, grad_score);
      }
    }
  }
  if (j < length) {
HKT_UNROLL
    for (int d = 0; d < Dh; ++d) {
      pgk[head_offset + j * Dh + d] = grad_key[d];
      pgv[head_offset + j * Dh + d] = grad_value[d];
    }
  }
}

// dQ_i = Σ_j dS_ij k_j / sqrt(dh) for one query row i per thread, over the keys i sees.
template <int Dh>
__global__ void attention_grad_q_kernel(const float* pq, const float* pk, const float* pv, const int64_t* valid_keys,
                                        const float* plse, const float* pdelta, const float* pgo, int64_t heads,
                                        int64_t length, bool causal, float scale, float* pgq) {
  __shared__ float keys[kStageRows * Dh];
  __shared__ float values[kStageRows * Dh];
  const int64_t query_tiles = row_tiles(length), task = blockIdx.x;
  const int64_t head_index = task / query_tiles, i0 = (task % query_tiles) * kRowsPerBlock;
  const int64_t i1 = min64(length, i0 + kRowsPerBlock), i = i0 + threadIdx.x;
  const bool active = i < i1;
  const int64_t valid = valid_keys[head_index / heads];
  const int64_t head_offset = head_index * length * Dh;

  float query[Dh], grad_row[Dh], grad_query[Dh];
HKT_UNROLL
  for (int d = 0; d < Dh; ++d) query[d] = grad_row[d] = grad_query[d] = 0;
  float lse = 0, delta = 0;
  if (active) {
    load_row<Dh>(pq + head_offset + i * Dh, query);
    load_row<Dh>(pgo + head_offset + i * Dh, grad_row);
    lse = loaded_log_sum_exp(plse + head_index * length + i);
    delta = pdelta[head_index * length + i];
  }
  const int64_t key_end = key_limit(i1 - 1, valid, causal);
  for (int64_t j0 = 0; j0 < key_end; j0 += kStageRows) {
    const int64_t j1 = min64(key_end, j0 + kStageRows);
    __syncthreads();
    stage_rows<Dh>(pk + head_offset + j0 * Dh, j1 - j0, keys);
    stage_rows<Dh>(pv + head_offset + j0 * Dh, j1 - j0, values);
    __syncthreads();
    if (!active) continue;
    const int count = static_cast<int>(min64(key_limit(i, valid, causal), j1) - j0);
    for (int c = 0; c < count; ++c) {
      const float p = expf(scale * dot<Dh>(query, keys + c * Dh) - lse);
      const float grad_score = p * (dot<Dh>(grad_row, values + c * Dh) - delta) * scale;
      add_scaled<Dh>(grad_query, keys + c * Dh, grad_score);
    }
  }
  if (active) {
HKT_UNROLL
    for (int d = 0; d < Dh; ++d) pgq[head_offset + i * Dh + d] = grad_query[d];
  }
}

}  // namespace hkt::cuda_attention
