// softmax / log_softmax: forward, fused backward and CPU kernels. x is seen
// as [outer, extent, inner] around the axis; a "row" is one (outer, inner)
// pair, its `extent` elements `inner` apart. Each row is handled by one
// thread in a fixed order, so results do not depend on the thread count.
#include "ops/softmax.h"

#include <cmath>
#include <limits>
#include <string>

#include "engine/dispatch.h"
#include "ops/common.h"

namespace hkt {

// ---- CPU kernels ----------------------------------------------------------

namespace {

// Offset of row `row`'s first element in a tensor seen as [outer, extent, inner].
inline int64_t row_start(int64_t row, AxisSplit split) {
  return (row / split.inner) * split.extent * split.inner + row % split.inner;
}

// The row maximum; a NaN wins so that it is not hidden behind -inf entries.
template <class T>
T row_max(const T* in, int64_t extent, int64_t stride) {
  T best = -std::numeric_limits<T>::infinity();
  for (int64_t k = 0; k < extent; ++k) {
    const T v = in[k * stride];
    if (v > best || v != v) best = v;
    if (best != best) break;
  }
  return best;
}

}  // namespace

// y = exp(x - m) / Σ exp(x - m)            with m = max(x) over the row
// log y = x - (m + log Σ exp(x - m))       (log-sum-exp)
// An all -inf row (m = -inf) gives y = 0, log y = -inf; see softmax.h.
template <bool Log>
void softmax_cpu(const Tensor& x, AxisSplit split, Tensor& out) {
  visit_floating(Log ? "log_softmax" : "softmax", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x.raw_data());
    T* po = static_cast<T*>(out.raw_data());
    const int64_t rows = split.outer * split.inner, extent = split.extent, stride = split.inner;
    constexpr T minus_inf = -std::numeric_limits<T>::infinity();
#pragma omp parallel for if (rows * extent > HKT_OMP_MIN_WORK)
    for (int64_t row = 0; row < rows; ++row) {
      const T* in = px + row_start(row, split);
      T* y = po + row_start(row, split);
      const T m = row_max(in, extent, stride);
      if (m == minus_inf) {
        for (int64_t k = 0; k < extent; ++k) y[k * stride] = Log ? minus_inf : T(0);
        continue;
      }
      T total = 0;
      for (int64_t k = 0; k < extent; ++k) total += std::exp(in[k * stride] - m);
      if constexpr (Log) {
        const T log_sum_exp = m + std::log(total);
        for (int64_t k = 0; k < extent; ++k) y[k * stride] = in[k * stride] - log_sum_exp;
      } else {
        const T scale = T(1) / total;
        for (int64_t k = 0; k < extent; ++k) y[k * stride] = std::exp(in[k * stride] - m) * scale;
      }
    }
  });
}

// softmax:      dx = y ⊙ (g − Σ g⊙y)
// log_softmax:  dx = g − exp(y) Σ g
// A fully masked row gives dx = 0: for softmax because y = 0 there; for
// log_softmax by the explicit test (a valid row has max y ≥ -log(extent)).
template <bool Log>
void softmax_backward_cpu(const Tensor& y, const Tensor& grad_out, AxisSplit split, Tensor& grad_in) {
  visit_floating(Log ? "log_softmax_backward" : "softmax_backward", y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* py = static_cast<const T*>(y.raw_data());
    const T* pg = static_cast<const T*>(grad_out.raw_data());
    T* pi = static_cast<T*>(grad_in.raw_data());
    const int64_t rows = split.outer * split.inner, extent = split.extent, stride = split.inner;
    constexpr T minus_inf = -std::numeric_limits<T>::infinity();
#pragma omp parallel for if (rows * extent > HKT_OMP_MIN_WORK)
    for (int64_t row = 0; row < rows; ++row) {
      const int64_t start = row_start(row, split);
      const T* yr = py + start;
      const T* g = pg + start;
      T* dx = pi + start;
      if constexpr (Log) {
        T grad_total = 0;
        bool masked = true;
        for (int64_t k = 0; k < extent; ++k) {
          grad_total += g[k * stride];
          masked = masked && yr[k * stride] == minus_inf;
        }
        for (int64_t k = 0; k < extent; ++k)
          dx[k * stride] = masked ? T(0) : g[k * stride] - std::exp(yr[k * stride]) * grad_total;
      } else {
        T dot = 0;
        for (int64_t k = 0; k < extent; ++k) dot += g[k * stride] * yr[k * stride];
        for (int64_t k = 0; k < extent; ++k) dx[k * stride] = yr[k * stride] * (g[k * stride] - dot);
      }
    }
  });
}

HKT_REGISTER_KERNEL(kernels::softmax, DeviceType::CPU, softmax_cpu<false>);
HKT_REGISTER_KERNEL(kernels::softmax_backward, DeviceType::CPU, softmax_backward_cpu<false>);
HKT_REGISTER_KERNEL(kernels::log_softmax, DeviceType::CPU, softmax_cpu<true>);
HKT_REGISTER_KERNEL(kernels::log_softmax_backward, DeviceType::CPU, softmax_backward_cpu<true>);

// ---- ops ------------------------------------------------------------------

namespace {

// op: softmax or log_softmax, backward_op its backward (kernel names, ops/softmax.h).
Tensor softmax_along(const char* op, const char* backward_op, const Tensor& x, int64_t axis) {
  check_floating(op, x);
  axis = normalize_axis(op, axis, x.shape());
  const AxisSplit split = split_at_axis(x.shape(), axis);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  dispatch::kernel<SoftmaxKernel>(op, x.device())(x, split, out);
  record(op, {x}, out, [backward_op, y = out.detach(), split](const Tensor& g) -> std::vector<Tensor> {
    Tensor grad_in = Tensor::empty(y.shape(), y.dtype(), y.device());
    dispatch::kernel<SoftmaxBackwardKernel>(backward_op, y.device())(y, g, split, grad_in);
    return {grad_in};
  });
  return out;
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t axis) { return softmax_along(kernels::softmax, kernels::softmax_backward, x, axis); }
Tensor log_softmax(const Tensor& x, int64_t axis) { return softmax_along(kernels::log_softmax, kernels::log_softmax_backward, x, axis); }

}  // namespace hkt
