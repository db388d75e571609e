// Fused attention on CUDA: the "attention" and "attention_backward" kernels of
// ops/attention.h, float32, on the FlashAttention-2 plan of ops/attention.cpp:
//
//   S = q kᵀ / sqrt(dh) + mask,  P = softmax_j(S),  out = P v
//
// Side by side with the CPU kernels (ops/attention.cpp):
//   forward    CPU: one task per (batch, head, query tile), rows of the tile in a loop
//              CUDA: one block per (batch, head, query tile), one thread per query row;
//              key/value tiles are staged in shared memory; the same key_limit,
//              score_row, online_softmax_step and finish_row (cuda/attention_tiles.cuh).
//   backward   CPU: one task per (batch, head) owns its dQ, dK, dV rows.
//              CUDA: three race-free passes with the CPU's formulas,
//                D_i = Σ_d dO_i · O_i                          (row_delta_kernel)
//                dK_j, dV_j: one thread per key row j           (attention_grad_kv_kernel)
//                dQ_i:       one thread per query row i         (attention_grad_q_kernel)
//              each recomputing P = exp(S − lse) tile by tile; every gradient row has
//              exactly one writer, so no atomics and a deterministic result.
// Nothing T × T is allocated. Untested on hardware when written: see
// docs/ARCHITECTURE.md and tests/parity_attention.cpp.
#include <cuda_runtime.h>

#include <initializer_list>
#include <string>

#include "cuda/attention_tiles.cuh"
#include "engine/dispatch.h"
#include "ops/attention.h"

namespace hkt {
namespace {

using namespace cuda_attention;

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
#pragma unroll
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
//   P_ij = exp(S_ij − lse_i),  dV_j = Σ_i P_ij dO_i,  dS_ij = P_ij (dO_i · v_j − D_i),  dK_j = Σ_i dS_ij q_i / sqrt(dh)
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
#pragma unroll
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
        stage_lse[threadIdx.x] = plse[head_index * length + s0 + threadIdx.x];
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
#pragma unroll
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
#pragma unroll
  for (int d = 0; d < Dh; ++d) query[d] = grad_row[d] = grad_query[d] = 0;
  float lse = 0, delta = 0;
  if (active) {
    load_row<Dh>(pq + head_offset + i * Dh, query);
    load_row<Dh>(pgo + head_offset + i * Dh, grad_row);
    lse = plse[head_index * length + i];
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
#pragma unroll
    for (int d = 0; d < Dh; ++d) pgq[head_offset + i * Dh + d] = grad_query[d];
  }
}

std::string describe(const AttentionDims& dims) {
  return "q, k, v [" + std::to_string(dims.batch) + ", " + std::to_string(dims.heads) + ", " +
         std::to_string(dims.length) + ", " + std::to_string(dims.head_dim) + "]";
}

void attention_cuda(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& lengths, const AttentionDims& dims,
                    Tensor& out, Tensor& log_sum_exp) {
  const char* op = "attention";
  const std::string shapes = describe(dims);
  const Device device = q.device();
  for (const Tensor* t : std::initializer_list<const Tensor*>{&q, &k, &v, &out, &log_sum_exp}) check_float32_on(op, shapes, *t, device);
  hkt::check(lengths.device() == device && lengths.dtype() == DType::Int64, op, ": ", shapes, ": lengths ",
             lengths.str(), " on ", lengths.device().str(), " (int64 on ", device.str(), " expected)");
  visit_head_dim(op, shapes, dims.head_dim, [&](auto head_dim) {
    constexpr int Dh = decltype(head_dim)::value;
    const unsigned blocks = task_blocks(op, dims.batch * dims.heads * row_tiles(dims.length));
    const float scale = 1.0f / std::sqrt(static_cast<float>(Dh));
    attention_forward_kernel<Dh><<<blocks, kRowsPerBlock, 0, cuda::stream(device.index)>>>(
        device_floats(q), device_floats(k), device_floats(v), static_cast<const int64_t*>(lengths.raw_data()),
        dims.heads, dims.length, dims.causal, scale, mutable_floats(out), mutable_floats(log_sum_exp));
    cuda::check_launch(op);
  });
}

void attention_backward_cuda(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& lengths,
                             const Tensor& out, const Tensor& log_sum_exp, const Tensor& grad_out,
                             const AttentionDims& dims, Tensor& grad_q, Tensor& grad_k, Tensor& grad_v) {
  const char* op = "attention_backward";
  const std::string shapes = describe(dims);
  const Device device = q.device();
  for (const Tensor* t : std::initializer_list<const Tensor*>{&q, &k, &v, &out, &log_sum_exp, &grad_out, &grad_q, &grad_k, &grad_v})
    check_float32_on(op, shapes, *t, device);
  hkt::check(grad_out.shape() == q.shape(), op, ": ", shapes, ": grad_out ", grad_out.str(), " differs from q");
  hkt::check(lengths.device() == device && lengths.dtype() == DType::Int64, op, ": ", shapes, ": lengths ",
             lengths.str(), " on ", lengths.device().str(), " (int64 on ", device.str(), " expected)");
  visit_head_dim(op, shapes, dims.head_dim, [&](auto head_dim) {
    constexpr int Dh = decltype(head_dim)::value;
    cudaStream_t stream = cuda::stream(device.index);
    const unsigned blocks = task_blocks(op, dims.batch * dims.heads * row_tiles(dims.length));
    const float scale = 1.0f / std::sqrt(static_cast<float>(Dh));
    const int64_t rows = dims.batch * dims.heads * dims.length;
    const int64_t* valid = static_cast<const int64_t*>(lengths.raw_data());
    Tensor delta = Tensor::empty({dims.batch, dims.heads, dims.length}, DType::Float32, device);
    row_delta_kernel<Dh><<<cuda::blocks_for(rows), 256, 0, stream>>>(device_floats(grad_out), device_floats(out),
                                                                       rows, mutable_floats(delta));
    cuda::check_launch(op);
    attention_grad_kv_kernel<Dh><<<blocks, kRowsPerBlock, 0, stream>>>(
        device_floats(q), device_floats(k), device_floats(v), valid, device_floats(log_sum_exp), device_floats(delta),
        device_floats(grad_out), dims.heads, dims.length, dims.causal, scale, mutable_floats(grad_k),
        mutable_floats(grad_v));
    cuda::check_launch(op);
    attention_grad_q_kernel<Dh><<<blocks, kRowsPerBlock, 0, stream>>>(
        device_floats(q), device_floats(k), device_floats(v), valid, device_floats(log_sum_exp), device_floats(delta),
        device_floats(grad_out), dims.heads, dims.length, dims.causal, scale, mutable_floats(grad_q));
    cuda::check_launch(op);
    // `delta` is released when this returns, maybe before the kernels run: its
    // memory is only reused by work queued after them on this device's one
    // stream (cuda/runtime.h), or freed by cudaFree, which waits for the device.
  });
}

}  // namespace

HKT_REGISTER_KERNEL("attention", DeviceType::CUDA, attention_cuda);
HKT_REGISTER_KERNEL("attention_backward", DeviceType::CUDA, attention_backward_cuda);

}  // namespace hkt
