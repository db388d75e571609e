// CUDA kernels of the gathers (ops/index.h: index_select, embedding,
// upsample) and their scatter-add gradient. Index values were checked on the
// host by the op; −1 (upsample's "no block") reads as 0 and is skipped in the
// gradient. The scatter uses atomicAdd, so repeated indices (an embedding's
// repeated tokens) add up in an unspecified order: parity with the CPU is to
// float32 rounding, not bitwise.
#include "cuda/kernel_util.cuh"
#include "engine/dispatch.h"
#include "ops/common.h"
#include "ops/index.h"

namespace hkt::cuda {
namespace {

// Elements move as same-sized words, so any dtype can be gathered (token ids too).
template <class Word, class I>
__global__ void index_select_kernel(const Word* x, const I* index, Word* out, int64_t outer, int64_t extent,
                                    int64_t count, int64_t inner) {
  HKT_CUDA_LOOP(i, outer * count * inner) {
    const int64_t row = i / inner, j = i % inner;
    const int64_t o = row / count, source = static_cast<int64_t>(index[row % count]);
    out[i] = source < 0 ? Word(0) : x[(o * extent + source) * inner + j];
  }
}

void index_select_cuda(const Tensor& x, const Tensor& index, int64_t axis, Tensor& out) {
  const AxisSplit split = split_at_axis(x.shape(), axis);
  const int64_t count = index.numel(), n = split.outer * count * split.inner;
  if (n == 0) return;
  cudaStream_t s = stream_of(x);
  visit_index("index_select", index.dtype(), [&](auto index_tag) {
    using I = decltype(index_tag);
    auto launch = [&](auto word_tag) {
      using Word = decltype(word_tag);
      index_select_kernel<Word, I><<<blocks_for(n), kThreads, 0, s>>>(ptr<Word>(x), ptr<I>(index), ptr<Word>(out),
                                                                       split.outer, split.extent, count, split.inner);
    };
    if (dtype_size(x.dtype()) == 4) launch(uint32_t{});
    else launch(uint64_t{});
    check_launch("index_select");
  });
}

template <class I>
__global__ void index_add_kernel(const float* grad_out, const I* index, float* grad_in, int64_t outer,
                                 int64_t extent, int64_t count, int64_t inner) {
  HKT_CUDA_LOOP(i, outer * count * inner) {
    const int64_t row = i / inner, j = i % inner;
    const int64_t o = row / count, target = static_cast<int64_t>(index[row % count]);
    if (target >= 0) atomicAdd(grad_in + (o * extent + target) * inner + j, grad_out[i]);
  }
}

// grad_in[o, index[p], :] += grad_out[o, p, :]; grad_in is zeroed by the op.
void index_add_cuda(const Tensor& grad_out, const Tensor& index, int64_t axis, Tensor& grad_in) {
  require_float32("index_add", grad_in);
  require_float32("index_add", grad_out);
  const AxisSplit split = split_at_axis(grad_in.shape(), axis);
  const int64_t count = index.numel(), n = split.outer * count * split.inner;
  if (n == 0) return;
  visit_index("index_add", index.dtype(), [&](auto index_tag) {
    using I = decltype(index_tag);
    index_add_kernel<I><<<blocks_for(n), kThreads, 0, stream_of(grad_in)>>>(
        ptr(grad_out), ptr<I>(index), ptr(grad_in), split.outer, split.extent, count, split.inner);
    check_launch("index_add");
  });
}

}  // namespace

HKT_REGISTER_KERNEL(kernels::index_select, DeviceType::CUDA, index_select_cuda);
HKT_REGISTER_KERNEL(kernels::index_add, DeviceType::CUDA, index_add_cuda);

}  // namespace hkt::cuda
