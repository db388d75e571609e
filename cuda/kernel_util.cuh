#pragma once
// What the CUDA op kernels share: float32 checks that name the op, launch
// shapes, broadcast offsets and block-wide reductions.
//
// Every kernel is written for clarity over speed: element kernels use
// grid-stride loops (any size fits any grid), row kernels give one block of
// kThreads threads to a row and reduce with warp shuffles + shared memory.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "cuda/runtime.h"
#include "engine/error.h"
#include "engine/tensor.h"

namespace hkt::cuda {

constexpr unsigned kThreads = 256;  // a multiple of 32, so that every warp is full

// The CUDA kernels compute in float32 only; anything else is an Error naming the op.
inline void require_float32(const char* op, const Tensor& t) {
  if (t.defined())
    hkt::check(t.dtype() == DType::Float32, op, ": the CUDA backend supports float32 only, got ", t, " on ",
          t.device());
}

template <class T = float>
T* ptr(const Tensor& t) {
  return static_cast<T*>(t.raw_data());
}

// Makes the tensor's device current and returns its stream.
inline cudaStream_t stream_of(const Tensor& t) { return stream(t.device().index); }

// Grid for one block per row: rows past the grid are taken by a block-stride loop.
inline unsigned row_blocks(long long rows) {
  if (rows < 1) return 1;
  return rows > 65535LL * 32 ? 65535u * 32u : static_cast<unsigned>(rows);
}

#define HKT_CUDA_LOOP(i, n)                                                         \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

// Broadcast (or permuted) reads: the element offsets, in up to two inputs, of
// output element i. Axes are those of the output; a stride of 0 stretches.
constexpr int kMaxRank = 8;
struct StridedView {
  int rank = 0;
  int64_t shape[kMaxRank] = {};
  int64_t stride_a[kMaxRank] = {};
  int64_t stride_b[kMaxRank] = {};
};

inline StridedView strided_view(const char* op, const Shape& out, const std::vector<int64_t>& strides_a,
                                const std::vector<int64_t>& strides_b) {
  hkt::check(out.size() <= static_cast<size_t>(kMaxRank), op, ": the CUDA kernel handles rank ", kMaxRank,
        " at most, got shape ", out);
  StridedView view;
  view.rank = static_cast<int>(out.size());
  for (size_t axis = 0; axis < out.size(); ++axis) {
    view.shape[axis] = out[axis];
    view.stride_a[axis] = strides_a[axis];
    view.stride_b[axis] = strides_b[axis];
  }
  return view;
}

__device__ inline void strided_offsets(const StridedView& view, int64_t i, int64_t& offset_a, int64_t& offset_b) {
  offset_a = 0;
  offset_b = 0;
  for (int axis = view.rank - 1; axis >= 0; --axis) {
    const int64_t coordinate = i % view.shape[axis];
    i /= view.shape[axis];
    offset_a += coordinate * view.stride_a[axis];
    offset_b += coordinate * view.stride_b[axis];
  }
}

// The larger value; a NaN wins, as on the CPU, so that it is never hidden.
__device__ inline float nan_max(float a, float b) { return (b > a || b != b) ? b : a; }

struct SumOp {
  __device__ static float apply(float a, float b) { return a + b; }
};
struct MaxOp {
  __device__ static float apply(float a, float b) { return nan_max(a, b); }
};

template <class Op>
__device__ inline float warp_reduce(float value) {
  for (int offset = 16; offset > 0; offset >>= 1) value = Op::apply(value, __shfl_down_sync(0xffffffffu, value, offset));
  return value;
}

// Reduces one value per thread over the block; every thread gets the result.
// All threads of the block must call it (it synchronises), with blockDim.x a
// multiple of 32. `identity` fills the slots of absent warps.
template <class Op>
__device__ inline float block_reduce(float value, float identity) {
  __shared__ float partial[32];
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const unsigned warps = blockDim.x >> 5;
  value = warp_reduce<Op>(value);
  __syncthreads();  // an earlier call may still be reading partial[0]
  if (lane == 0) partial[warp] = value;
  __syncthreads();
  if (warp == 0) {
    value = lane < warps ? partial[lane] : identity;
    value = warp_reduce<Op>(value);
    if (lane == 0) partial[0] = value;
  }
  __syncthreads();
  return partial[0];
}

__device__ inline float block_sum(float value) { return block_reduce<SumOp>(value, 0.0f); }
__device__ inline float block_max(float value) { return block_reduce<MaxOp>(value, -INFINITY); }

}  // namespace hkt::cuda
