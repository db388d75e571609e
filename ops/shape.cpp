#include "ops/shape.h"

#include <algorithm>
#include <cstring>

#include "engine/dispatch.h"
#include "ops/broadcast.h"
#include "ops/common.h"

namespace hkt {

// ---- CPU kernels ----------------------------------------------------------

void axis_copy_cpu(const Tensor& src, int64_t src_start, Tensor& dst, int64_t dst_start, int64_t count,
                   int64_t axis) {
  AxisSplit s = split_at_axis(src.shape(), axis), d = split_at_axis(dst.shape(), axis);
  const size_t element = dtype_size(src.dtype());
  const size_t run = static_cast<size_t>(count * s.inner) * element;
  const char* ps = static_cast<const char*>(src.raw_data());
  char* pd = static_cast<char*>(dst.raw_data());
#pragma omp parallel for if (s.outer * count * s.inner > HKT_OMP_MIN_WORK)
  for (int64_t o = 0; o < s.outer; ++o) {
    if (run == 0) continue;
    std::memcpy(pd + static_cast<size_t>((o * d.extent + dst_start) * d.inner) * element,
                ps + static_cast<size_t>((o * s.extent + src_start) * s.inner) * element, run);
  }
}

void permute_cpu(const Tensor& x, const std::vector<int64_t>& dims, Tensor& out) {
  // Input strides read in output-axis order.
  std::vector<int64_t> strides(dims.size());
  int64_t stride = 1;
  std::vector<int64_t> contiguous(dims.size());
  for (int64_t axis = x.dim() - 1; axis >= 0; --axis) {
    contiguous[axis] = stride;
    stride *= x.size(axis);
  }
  for (size_t k = 0; k < dims.size(); ++k) strides[k] = contiguous[dims[k]];
  const int64_t length = out.dim() == 0 ? 1 : out.shape().back();
  const int64_t step = out.dim() == 0 ? 0 : strides.back();
  // Elements move as same-sized integers: permute is dtype-blind.
  auto move = [&](auto word) {
    using Word = decltype(word);
    const Word* px = static_cast<const Word*>(x.raw_data());
    Word* po = static_cast<Word*>(out.raw_data());
    for_each_broadcast_row(out.shape(), strides, strides, [&](int64_t row, int64_t offset, int64_t) {
      if (step == 1)  // the last axis stays last (split and merge heads): a contiguous row copy
        std::copy(px + offset, px + offset + length, po + row * length);
      else
        for (int64_t j = 0; j < length; ++j) po[row * length + j] = px[offset + j * step];
    });
  };
  if (dtype_size(x.dtype()) == 4) move(uint32_t{});
  else move(uint64_t{});
}

HKT_REGISTER_KERNEL(kernels::axis_copy, DeviceType::CPU, axis_copy_cpu);
HKT_REGISTER_KERNEL(kernels::permute, DeviceType::CPU, permute_cpu);

// ---- ops ------------------------------------------------------------------

namespace {

void axis_copy(const Tensor& src, int64_t src_start, Tensor& dst, int64_t dst_start, int64_t count, int64_t axis) {
  dispatch::kernel<AxisCopyKernel>(kernels::axis_copy, src.device())(src, src_start, dst, dst_start, count, axis);
}

}  // namespace

Tensor reshape(const Tensor& x, Shape shape) {
  check_defined("reshape", x);
  int64_t known = 1, inferred = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      check(inferred < 0, "reshape: ", x.shape(), " to ", shape, ": more than one -1");
      inferred = static_cast<int64_t>(i);
    } else {
      check(shape[i] >= 0, "reshape: ", x.shape(), " to ", shape, ": negative extent");
      known *= shape[i];
    }
  }
  if (inferred >= 0) {
    check(known > 0 && x.numel() % known == 0, "reshape: cannot infer -1 in ", shape, " for ",
          x.numel(), " elements of ", x.shape());
    shape[inferred] = x.numel() / known;
  }
  check(shape_numel(shape) == x.numel(), "reshape: ", x.shape(), " (", x.numel(), " elements) to ",
        shape, " (", shape_numel(shape), " elements)");
  Tensor out = x.detach();
  out.impl()->shape = shape;
  record("reshape", {x}, out, [from = x.shape()](const Tensor& g) -> std::vector<Tensor> {
    return {reshape(g, from)};
  });
  return out;
}

Tensor permute(const Tensor& x, const std::vector<int64_t>& dims) {
  check_defined("permute", x);
  check(static_cast<int64_t>(dims.size()) == x.dim(), "permute: ", dims.size(), " dims for shape ",
        x.shape());
  std::vector<int64_t> axes(dims.size()), inverse(dims.size(), -1);
  Shape out_shape(dims.size());
  for (size_t k = 0; k < dims.size(); ++k) {
    axes[k] = normalize_axis("permute", dims[k], x.shape());
    check(inverse[axes[k]] < 0, "permute: axis ", dims[k], " repeated in a permutation of ", x.shape());
    inverse[axes[k]] = static_cast<int64_t>(k);
    out_shape[k] = x.size(axes[k]);
  }
  Tensor out = Tensor::empty(out_shape, x.dtype(), x.device());
  dispatch::kernel<PermuteKernel>(kernels::permute, x.device())(x, axes, out);
  record("permute", {x}, out, [inverse](const Tensor& g) -> std::vector<Tensor> { return {permute(g, inverse)}; });
  return out;
}

Tensor transpose(const Tensor& x, int64_t axis0, int64_t axis1) {
  check_defined("transpose", x);
  std::vector<int64_t> dims(static_cast<size_t>(x.dim()));
  for (size_t k = 0; k < dims.size(); ++k) dims[k] = static_cast<int64_t>(k);
  std::swap(dims[normalize_axis("transpose", axis0, x.shape())], dims[normalize_axis("transpose", axis1, x.shape())]);
  return permute(x, dims);
}

Tensor slice(const Tensor& x, int64_t axis, int64_t start, int64_t end) {
  check_defined("slice", x);
  axis = normalize_axis("slice", axis, x.shape());
  check(0 <= start && start <= end && end <= x.size(axis), "slice: range [", start, ", ", end, ") on axis ", axis,
        " of shape ", x.shape());
  Shape out_shape = x.shape();
  out_shape[axis] = end - start;
  Tensor out = Tensor::empty(out_shape, x.dtype(), x.device());
  axis_copy(x, start, out, 0, end - start, axis);
  record("slice", {x}, out, [shape = x.shape(), axis, start](const Tensor& g) -> std::vector<Tensor> {
    Tensor grad_in = Tensor::zeros(shape, g.dtype(), g.device());
    axis_copy(g, 0, grad_in, start, g.size(axis), axis);
    return {grad_in};
  });
  return out;
}

Tensor concat(const std::vector<Tensor>& tensors, int64_t axis) {
  check(!tensors.empty(), "concat: no tensors given");
  const Tensor& first = tensors.front();
  check_defined("concat", first);
  axis = normalize_axis("concat", axis, first.shape());
  Shape out_shape = first.shape();
  out_shape[axis] = 0;
  for (const Tensor& t : tensors) {
    check_compatible("concat", {first, t});
    Shape expected = first.shape(), got = t.shape();
    check(got.size() == expected.size(), "concat: shapes ", expected, " and ", got,
          " differ in rank");
    expected[axis] = got[axis];
    check(got == expected, "concat: shapes ", first.shape(), " and ", got,
          " differ outside axis ", axis);
    out_shape[axis] += got[axis];
  }
  Tensor out = Tensor::empty(out_shape, first.dtype(), first.device());
  std::vector<int64_t> extents;
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    axis_copy(t, 0, out, offset, t.size(axis), axis);
    offset += t.size(axis);
    extents.push_back(t.size(axis));
  }
  record("concat", tensors, out, [extents, axis](const Tensor& g) -> std::vector<Tensor> {
    std::vector<Tensor> grads;
    int64_t start = 0;
    for (int64_t extent : extents) {
      grads.push_back(slice(g, axis, start, start + extent));
      start += extent;
    }
    return grads;
  });
  return out;
}

}  // namespace hkt
