#pragma once
// Internal to the fused attention kernels on CUDA (cuda/attention.cu,
// cuda/multiscale_attention.cu): the device twins of ops/attention_tiles.h,
// with the same names and the same arithmetic, so a CUDA kernel reads line by
// line like the CPU kernel it mirrors.
//
// The CUDA plan: one thread block per (batch, head, tile of kRowsPerBlock
// rows), one thread per row (a query row in the forward and the dQ pass, a key
// row in the dK/dV pass). The other side's rows are staged through shared
// memory kStageRows at a time, [kStageRows, Dh] row-major: every thread of the
// block reads the same staged row at once (a broadcast, no bank conflicts).
// A thread keeps its own row, its accumulators and the running max and sum of
// the online softmax in registers (Dh is a template parameter, so the arrays
// are unrolled). Everything is float32; head_dim is one of 8, 16, 32, 64, 128.
//
// The kernels themselves are in cuda/attention_kernels.cuh and
// cuda/multiscale_attention_kernels.cuh, apart from their launches (the .cu
// files), so tests/test_cuda_attention_emulated.cpp can run the very same
// source on the CPU (tests/cuda_emulation.h) where no GPU is present.
#ifndef HKT_CUDA_EMULATION  // tests/cuda_emulation.h runs these kernels on the CPU
#include <cuda_runtime.h>
#endif

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "engine/tensor.h"
#include "ops/common.h"

// `#pragma unroll` where the emulation, compiled by g++, has no such pragma.
#ifndef HKT_UNROLL
#define HKT_UNROLL _Pragma("unroll")
#endif

// A kernel's dynamic shared memory, as float[] (the emulation defines its own).
#ifndef HKT_DYNAMIC_SHARED
#define HKT_DYNAMIC_SHARED(name) extern __shared__ float name[]
#endif

namespace hkt::cuda_attention {

constexpr int kRowsPerBlock = 64;  // threads per block, one per owned row
constexpr int kStageRows = 32;     // rows of the other side in shared memory at a time

__device__ inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
__device__ inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
// Tiles of kRowsPerBlock rows covering `length` rows (host: the grid; device: the task's tile).
__host__ __device__ inline int64_t row_tiles(int64_t length) { return (length + kRowsPerBlock - 1) / kRowsPerBlock; }

// As attention_tiles::key_limit: query i sees keys j < key_limit(i).
__device__ inline int64_t key_limit(int64_t i, int64_t length, bool causal) {
  return causal ? min64(length, i + 1) : length;
}

// stage[0, count · Dh) = rows[0, count · Dh): `count` contiguous rows, copied
// by every thread of the block (coalesced). The caller synchronises.
template <int Dh>
__device__ void stage_rows(const float* rows, int64_t count, float* stage) {
  for (int64_t e = threadIdx.x; e < count * Dh; e += blockDim.x) stage[e] = rows[e];
}

// row[d] = source[d]: a thread's own row into registers.
template <int Dh>
__device__ void load_row(const float* source, float (&row)[Dh]) {
HKT_UNROLL
  for (int d = 0; d < Dh; ++d) row[d] = source[d];
}

template <int Dh>
__device__ float dot(const float* a, const float* b) {
  float total = 0;
HKT_UNROLL
  for (int d = 0; d < Dh; ++d) total += a[d] * b[d];
  return total;
}

// acc[d] += weight · row[d]
template <int Dh>
__device__ void add_scaled(float (&acc)[Dh], const float* row, float weight) {
HKT_UNROLL
  for (int d = 0; d < Dh; ++d) acc[d] += weight * row[d];
}

// As attention_tiles::score_row: scores[c] = scale · query · keys[c] for c < count (keys: staged [count, Dh]).
template <int Dh>
__device__ void score_row(const float* query, const float* keys, int count, float scale, float* scores) {
  for (int c = 0; c < count; ++c) scores[c] = scale * dot<Dh>(query, keys + c * Dh);
}

// As attention_tiles::online_softmax_step (same update, same order):
//   m' = max(m, max_c s_c),  l' = l·e^(m−m') + Σ_c e^(s_c−m'),  acc' = acc·e^(m−m') + Σ_c e^(s_c−m') v_c
// values: staged [valid, Dh].
template <int Dh>
__device__ void online_softmax_step(const float* scores, int valid, const float* values, float& running_max,
                                    float& running_sum, float (&acc)[Dh]) {
  if (valid <= 0) return;
  float tile_max = -INFINITY;
  for (int c = 0; c < valid; ++c) tile_max = fmaxf(tile_max, scores[c]);
  const float new_max = fmaxf(running_max, tile_max);
  const float correction = expf(running_max - new_max);  // 0 on the first tile (m = −inf)
  running_sum *= correction;
HKT_UNROLL
  for (int d = 0; d < Dh; ++d) acc[d] *= correction;
  for (int c = 0; c < valid; ++c) {
    const float p = expf(scores[c] - new_max);
    running_sum += p;
    add_scaled<Dh>(acc, values + c * Dh, p);
  }
  running_max = new_max;
}

// The saved row statistic is in base 2 on every device (ops/attention.h):
// log2 Σ_j exp(S_ij) = lse · log2 e, as the CPU kernels keep it for exp2.
// These kernels work with the natural lse and convert at the load and store.
__device__ inline float stored_log_sum_exp(float lse) { return lse * 1.44269504088896340736f; }
__device__ inline float loaded_log_sum_exp(const float* log2_sum_exp) { return *log2_sum_exp * 0.69314718055994530942f; }

// As attention_tiles::finish_row: out = acc / l, log_sum_exp = m + log l (stored in base 2).
template <int Dh>
__device__ void finish_row(const float (&acc)[Dh], float running_max, float running_sum, float* out,
                           float* log_sum_exp) {
  const float inverse = 1.0f / running_sum;
HKT_UNROLL
  for (int d = 0; d < Dh; ++d) out[d] = acc[d] * inverse;
  *log_sum_exp = stored_log_sum_exp(running_max + logf(running_sum));
}

namespace {  // a kernel per including file: each .cu registers its own copy with the CUDA runtime

// D_i = Σ_d dO_i · O_i for every row of [rows, Dh] (the backward's delta).
template <int Dh>
__global__ void row_delta_kernel(const float* grad_out, const float* out, int64_t rows, float* delta) {
  for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; r < rows;
       r += static_cast<int64_t>(gridDim.x) * blockDim.x)
    delta[r] = dot<Dh>(grad_out + r * Dh, out + r * Dh);
}

}  // namespace

// ---- host side ------------------------------------------------------------

inline const float* device_floats(const Tensor& t) {
  return static_cast<const float*>(t.raw_data());
}
inline float* mutable_floats(Tensor& t) { return static_cast<float*>(t.raw_data()); }

// The CUDA kernels take float32 tensors, all on one CUDA device.
inline void check_float32_on(const char* op, const std::string& shapes, const Tensor& t, Device device) {
  hkt::check(t.dtype() == DType::Float32, op, ": ", shapes, ": the CUDA kernel supports float32 only, got ",
             t);
  hkt::check(t.device() == device, op, ": ", shapes, ": tensors on ", t.device(), " and ", device,
             " (one CUDA device expected)");
}

// Calls fn(std::integral_constant<int, Dh>{}) for the head dims the kernels are built for.
template <class Fn>
void visit_head_dim(const char* op, const std::string& shapes, int64_t head_dim, Fn&& fn) {
  switch (head_dim) {
    case 8:  // the CPU kernels take it too: small models (d 16, 2 heads) run on both devices
      fn(std::integral_constant<int, 8>{});
      return;
    case 16:
      fn(std::integral_constant<int, 16>{});
      return;
    case 32:
      fn(std::integral_constant<int, 32>{});
      return;
    case 64:
      fn(std::integral_constant<int, 64>{});
      return;
    case 128:
      fn(std::integral_constant<int, 128>{});
      return;
    default:
      fail(op, ": ", shapes, ": head_dim ", head_dim,
           " is not supported by the CUDA kernel (built for 8, 16, 32, 64 and 128)");
  }
}

// Blocks for `tasks` (batch, head, row tile) triples: one block each, in a 1-D grid.
inline unsigned task_blocks(const char* op, int64_t tasks) {
  hkt::check(tasks >= 1 && tasks <= 0x7fffffffLL, op, ": ", tasks, " thread blocks do not fit a CUDA grid");
  return static_cast<unsigned>(tasks);
}


}  // namespace hkt::cuda_attention
