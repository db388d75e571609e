// CUDA kernels of the copying shape ops (ops/shape.h): axis_copy (slice, its
// backward, concat) and permute. Both move elements as same-sized words, so
// they work for every dtype.
#include "cuda/kernel_util.cuh"
#include "engine/dispatch.h"
#include "ops/common.h"
#include "ops/shape.h"

namespace hkt::cuda {
namespace {

// dst[o, dst_start + k, i] = src[o, src_start + k, i] for k < count; the run
// of count · inner elements at each o is contiguous in both.
template <class Word>
__global__ void axis_copy_kernel(const Word* src, Word* dst, int64_t outer, int64_t run, int64_t src_row,
                                 int64_t src_offset, int64_t dst_row, int64_t dst_offset) {
  HKT_CUDA_LOOP(i, outer * run) {
    const int64_t o = i / run, j = i % run;
    dst[o * dst_row + dst_offset + j] = src[o * src_row + src_offset + j];
  }
}

void axis_copy_cuda(const Tensor& src, int64_t src_start, Tensor& dst, int64_t dst_start, int64_t count,
                    int64_t axis) {
  AxisSplit s = split_at_axis(src.shape(), axis), d = split_at_axis(dst.shape(), axis);
  const int64_t run = count * s.inner;
  if (run == 0 || s.outer == 0) return;
  auto launch = [&](auto word_tag) {
    using Word = decltype(word_tag);
    axis_copy_kernel<Word><<<blocks_for(s.outer * run), kThreads, 0, stream_of(src)>>>(
        ptr<Word>(src), ptr<Word>(dst), s.outer, run, s.extent * s.inner, src_start * s.inner, d.extent * d.inner,
        dst_start * d.inner);
  };
  if (dtype_size(src.dtype()) == 4) launch(uint32_t{});
  else launch(uint64_t{});
  check_launch("axis_copy");
}

template <class Word>
__global__ void permute_kernel(const Word* x, Word* out, int64_t n, StridedView view) {
  HKT_CUDA_LOOP(i, n) {
    int64_t offset, unused;
    strided_offsets(view, i, offset, unused);
    out[i] = x[offset];
  }
}

void permute_cuda(const Tensor& x, const std::vector<int64_t>& dims, Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  // x's contiguous strides, read in output-axis order.
  std::vector<int64_t> contiguous(dims.size()), strides(dims.size());
  int64_t stride = 1;
  for (int64_t axis = x.dim() - 1; axis >= 0; --axis) {
    contiguous[axis] = stride;
    stride *= x.size(axis);
  }
  for (size_t k = 0; k < dims.size(); ++k) strides[k] = contiguous[dims[k]];
  StridedView view = strided_view("permute", out.shape(), strides, strides);
  auto launch = [&](auto word_tag) {
    using Word = decltype(word_tag);
    permute_kernel<Word><<<blocks_for(n), kThreads, 0, stream_of(x)>>>(ptr<Word>(x), ptr<Word>(out), n, view);
  };
  if (dtype_size(x.dtype()) == 4) launch(uint32_t{});
  else launch(uint64_t{});
  check_launch("permute");
}

}  // namespace

HKT_REGISTER_KERNEL(kernels::axis_copy, DeviceType::CUDA, axis_copy_cuda);
HKT_REGISTER_KERNEL(kernels::permute, DeviceType::CUDA, permute_cuda);

}  // namespace hkt::cuda
