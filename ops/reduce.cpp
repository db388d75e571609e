// Reductions. Each output element is summed in a fixed order (a long sum in
// fixed chunks, added in chunk order), so results do not depend on the
// thread count.
#include "ops/reduce.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "engine/dispatch.h"
#include "ops/common.h"
#include "ops/elementwise.h"
#include "ops/shape.h"

namespace hkt {

// ---- CPU kernels ----------------------------------------------------------

void sum_cpu(const Tensor& x, AxisSplit split, Tensor& out) {
  visit_floating("sum", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x.raw_data());
    T* po = static_cast<T*>(out.raw_data());
    // Work items are (outer index, block of inner positions, chunk of the
    // extent); each adds its rows into its output block in k order, which
    // keeps the inner loop contiguous (vectorised). A long extent over few
    // items (a bias gradient: Σ over B·T = 16384 rows of 64 values is one
    // block) is cut into fixed chunks so that threads share it; the chunks'
    // partial sums are then added in chunk order. Chunks depend on the sizes
    // only, so the result is the same for any thread count.
    constexpr int64_t kBlock = 256, kChunk = 1024;
    const int64_t blocks = (split.inner + kBlock - 1) / kBlock;
    const int64_t chunks =
        split.outer * blocks < 8 && split.extent >= 2 * kChunk ? (split.extent + kChunk - 1) / kChunk : 1;
    std::vector<T> partial(chunks > 1 ? static_cast<size_t>(split.outer * chunks * split.inner) : 0);
    const int64_t items = split.outer * blocks * chunks;
#pragma omp parallel for if (split.outer * split.extent * split.inner > HKT_OMP_MIN_WORK && items > 1)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t chunk = item % chunks, o = item / chunks / blocks, begin = (item / chunks % blocks) * kBlock;
      const int64_t end = std::min(split.inner, begin + kBlock);
      const int64_t k0 = chunk * kChunk, k1 = chunks > 1 ? std::min(split.extent, k0 + kChunk) : split.extent;
      T* target = chunks > 1 ? partial.data() + (o * chunks + chunk) * split.inner : po + o * split.inner;
      for (int64_t i = begin; i < end; ++i) target[i] = T(0);
      for (int64_t k = k0; k < k1; ++k) {
        const T* row = px + (o * split.extent + k) * split.inner;
        for (int64_t i = begin; i < end; ++i) target[i] += row[i];
      }
    }
    if (chunks > 1)
      for (int64_t o = 0; o < split.outer; ++o) {
        T* target = po + o * split.inner;
        std::copy(partial.data() + o * chunks * split.inner, partial.data() + (o * chunks + 1) * split.inner, target);
        for (int64_t chunk = 1; chunk < chunks; ++chunk) {
          const T* part = partial.data() + (o * chunks + chunk) * split.inner;
          for (int64_t i = 0; i < split.inner; ++i) target[i] += part[i];
        }
      }
  });
}

void max_cpu(const Tensor& x, AxisSplit split, Tensor& out, Tensor& argmax) {
  visit_floating("max", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x.raw_data());
    T* po = static_cast<T*>(out.raw_data());
    int64_t* pa = static_cast<int64_t*>(argmax.raw_data());
    const int64_t outputs = split.outer * split.inner;
#pragma omp parallel for if (outputs * split.extent > HKT_OMP_MIN_WORK)
    for (int64_t index = 0; index < outputs; ++index) {
      int64_t o = index / split.inner, i = index % split.inner;
      const T* slice = px + o * split.extent * split.inner + i;
      T best = slice[0];
      int64_t best_k = 0;
      for (int64_t k = 1; k < split.extent; ++k) {
        // NaN wins, so that a NaN is never hidden by max.
        if (slice[k * split.inner] > best || (slice[k * split.inner] != slice[k * split.inner] && best == best)) {
          best = slice[k * split.inner];
          best_k = k;
        }
      }
      po[index] = best;
      pa[index] = best_k;
    }
  });
}

void max_backward_cpu(const Tensor& grad_out, const Tensor& argmax, AxisSplit split, Tensor& grad_in) {
  visit_floating("max_backward", grad_in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* pg = static_cast<const T*>(grad_out.raw_data());
    const int64_t* pa = static_cast<const int64_t*>(argmax.raw_data());
    T* pi = static_cast<T*>(grad_in.raw_data());
    const int64_t outputs = split.outer * split.inner;
    for (int64_t k = 0; k < grad_in.numel(); ++k) pi[k] = T(0);
    for (int64_t index = 0; index < outputs; ++index) {
      int64_t o = index / split.inner, i = index % split.inner;
      pi[(o * split.extent + pa[index]) * split.inner + i] = pg[index];
    }
  });
}

HKT_REGISTER_KERNEL(kernels::sum, DeviceType::CPU, sum_cpu);
HKT_REGISTER_KERNEL(kernels::max, DeviceType::CPU, max_cpu);
HKT_REGISTER_KERNEL(kernels::max_backward, DeviceType::CPU, max_backward_cpu);

// ---- ops ------------------------------------------------------------------

namespace {

Shape reduced_shape(const Shape& shape, int64_t axis, bool keepdim) {
  Shape out = shape;
  if (keepdim) out[axis] = 1;
  else out.erase(out.begin() + axis);
  return out;
}

Tensor flatten_all(const Tensor& x) { return reshape(x, {x.numel()}); }

}  // namespace

Tensor sum(const Tensor& x, int64_t axis, bool keepdim) {
  check_floating("sum", x);
  axis = normalize_axis("sum", axis, x.shape());
  Tensor out = Tensor::empty(reduced_shape(x.shape(), axis, keepdim), x.dtype(), x.device());
  dispatch::kernel<ReduceKernel>(kernels::sum, x.device())(x, split_at_axis(x.shape(), axis), out);
  record("sum", {x}, out, [shape = x.shape(), axis](const Tensor& g) -> std::vector<Tensor> {
    return {broadcast_to(reshape(g, reduced_shape(shape, axis, true)), shape)};
  });
  return out;
}

Tensor sum(const Tensor& x) {
  check_floating("sum", x);
  return reshape(sum(flatten_all(x), 0), {});
}

Tensor mean(const Tensor& x, int64_t axis, bool keepdim) {
  check_floating("mean", x);
  int64_t extent = x.size(normalize_axis("mean", axis, x.shape()));
  check(extent > 0, "mean: empty axis ", axis, " of shape ", x.shape());
  return mul(sum(x, axis, keepdim), 1.0 / static_cast<double>(extent));
}

Tensor mean(const Tensor& x) {
  check_floating("mean", x);
  check_nonempty("mean", x);
  return mul(sum(x), 1.0 / static_cast<double>(x.numel()));
}

Tensor max(const Tensor& x, int64_t axis, bool keepdim) {
  check_floating("max", x);
  axis = normalize_axis("max", axis, x.shape());
  check(x.size(axis) > 0, "max: empty axis ", axis, " of shape ", x.shape());
  AxisSplit split = split_at_axis(x.shape(), axis);
  Shape out_shape = reduced_shape(x.shape(), axis, keepdim);
  Tensor out = Tensor::empty(out_shape, x.dtype(), x.device());
  Tensor argmax = Tensor::empty(out_shape, DType::Int64, x.device());
  dispatch::kernel<MaxKernel>(kernels::max, x.device())(x, split, out, argmax);
  record("max", {x}, out, [x = x.detach(), argmax, split](const Tensor& g) -> std::vector<Tensor> {
    Tensor grad_in = Tensor::empty(x.shape(), x.dtype(), x.device());
    dispatch::kernel<MaxBackwardKernel>(kernels::max_backward, x.device())(g, argmax, split, grad_in);
    return {grad_in};
  });
  return out;
}

Tensor max(const Tensor& x) {
  check_floating("max", x);
  check_nonempty("max", x);
  return reshape(max(flatten_all(x), 0), {});
}

Tensor sum_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  check(broadcast_shapes("sum_to", shape, x.shape()) == x.shape(), "sum_to: ", x.shape(),
        " is not a broadcast of ", shape);
  // Each run of adjacent stretched axes is one reduction (a bias's gradient from [B, T, N] is
  // one sum over B·T rows, not a sum over B and then one over T): x viewed with runs merged.
  const int64_t extra = x.dim() - static_cast<int64_t>(shape.size());
  Shape merged;
  std::vector<bool> merged_stretched;
  for (int64_t axis = 0; axis < x.dim(); ++axis) {
    const bool stretched = axis < extra || (shape[axis - extra] == 1 && x.size(axis) != 1);
    if (!merged.empty() && merged_stretched.back() == stretched) {
      merged.back() *= x.size(axis);
    } else {
      merged.push_back(x.size(axis));
      merged_stretched.push_back(stretched);
    }
  }
  Tensor reduced = reshape(x, merged);
  for (int64_t axis = 0; axis < static_cast<int64_t>(merged.size()); ++axis)
    if (merged_stretched[axis]) reduced = sum(reduced, axis, /*keepdim=*/true);
  return reshape(reduced, shape);
}

}  // namespace hkt
