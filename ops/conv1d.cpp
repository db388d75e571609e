// Depthwise causal 1-D convolution (SPEC sections 2 and 4): forward, backward
// and CPU kernels.
#include "ops/conv1d.h"

#include <algorithm>
#include <vector>

#include "engine/dispatch.h"
#include "ops/common.h"

namespace hkt {

// ---- CPU kernels ----------------------------------------------------------

namespace {

// The first input position of output m's window: m·s + s − k (SPEC section 2).
inline int64_t window_start(int64_t m, int64_t stride, int64_t k) { return m * stride + stride - k; }

// weight [C, k] as [k, C], so that the channel loops read it contiguously.
template <class T>
std::vector<T> weight_by_tap(const T* weight, int64_t channels, int64_t k) {
  std::vector<T> taps(static_cast<size_t>(k * channels));
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t r = 0; r < k; ++r) taps[r * channels + c] = weight[c * k + r];
  return taps;
}

}  // namespace

void depthwise_conv1d_cpu(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride, Tensor& out) {
  visit_floating("depthwise_conv1d", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const int64_t B = x.size(0), length = x.size(1), C = x.size(2), k = weight.size(1), T_out = out.size(1);
    const T* px = static_cast<const T*>(x.raw_data());
    const T* pb = bias.defined() ? static_cast<const T*>(bias.raw_data()) : nullptr;
    T* po = static_cast<T*>(out.raw_data());
    const std::vector<T> taps = weight_by_tap(static_cast<const T*>(weight.raw_data()), C, k);
#pragma omp parallel for if (B * T_out * C * k > HKT_OMP_MIN_WORK)
    for (int64_t row = 0; row < B * T_out; ++row) {
      const int64_t b = row / T_out, m = row % T_out;
      T* y = po + row * C;
      for (int64_t c = 0; c < C; ++c) y[c] = pb ? pb[c] : T(0);
      for (int64_t r = 0; r < k; ++r) {
        const int64_t t = window_start(m, stride, k) + r;
        if (t < 0 || t >= length) continue;
        const T* x_row = px + (b * length + t) * C;
        const T* w = taps.data() + r * C;
        for (int64_t c = 0; c < C; ++c) y[c] += w[c] * x_row[c];
      }
    }
  });
}

// dX[b, t, c] = Σ_r W[c, r] · dY[b, m, c] over the taps r whose output m has
// t = m·s + s − k + r: each input row gathers its terms (r ascending), so no
// two threads write one element.
// dW[c, r] = Σ_{b,m} dY[b, m, c] · X[b, m·s + s − k + r, c] and dbias[c] =
// Σ_{b,m} dY[b, m, c]: the (b, m) rows are cut into chunks of a fixed size,
// each chunk sums its rows into its own [k + 1, C] partial (contiguous rows of
// every channel at once: the loops vectorise and the partial stays in L1), and
// the partials are added in chunk order. The result does not depend on the
// thread count.
void depthwise_conv1d_backward_cpu(const Tensor& x, const Tensor& weight, const Tensor& grad_out, int64_t stride,
                                   Tensor& grad_x, Tensor& grad_weight, Tensor& grad_bias) {
  visit_floating("depthwise_conv1d_backward", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const int64_t B = x.size(0), length = x.size(1), C = x.size(2), k = weight.size(1), T_out = grad_out.size(1);
    const T* px = static_cast<const T*>(x.raw_data());
    const T* pg = static_cast<const T*>(grad_out.raw_data());
    const bool parallel = B * T_out * C * k > HKT_OMP_MIN_WORK;

    if (grad_x.defined()) {
      const std::vector<T> taps = weight_by_tap(static_cast<const T*>(weight.raw_data()), C, k);
      T* pdx = static_cast<T*>(grad_x.raw_data());
#pragma omp parallel for if (parallel)
      for (int64_t row = 0; row < B * length; ++row) {
        const int64_t b = row / length, t = row % length;
        T* dx = pdx + row * C;
        for (int64_t c = 0; c < C; ++c) dx[c] = T(0);
        for (int64_t r = 0; r < k; ++r) {
          const int64_t shifted = t - window_start(0, stride, k) - r;  // = m·s for the output m reading t at tap r
          if (shifted < 0 || shifted % stride != 0 || shifted / stride >= T_out) continue;
          const T* dy = pg + (b * T_out + shifted / stride) * C;
          const T* w = taps.data() + r * C;
          for (int64_t c = 0; c < C; ++c) dx[c] += w[c] * dy[c];
        }
      }
    }

    if (!grad_weight.defined() && !grad_bias.defined()) return;
    constexpr int64_t kChunkRows = 256;
    const int64_t rows = B * T_out, chunks = (rows + kChunkRows - 1) / kChunkRows, partial_size = (k + 1) * C;
    std::vector<T> partials(static_cast<size_t>(chunks * partial_size), T(0));  // per chunk: dW as [k, C], then dbias
#pragma omp parallel for if (parallel)
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      T* dw_taps = partials.data() + chunk * partial_size;
      T* dbias = dw_taps + k * C;
      for (int64_t row = chunk * kChunkRows; row < std::min(rows, (chunk + 1) * kChunkRows); ++row) {
        const int64_t b = row / T_out, m = row % T_out;
        const T* dy = pg + row * C;
        for (int64_t c = 0; c < C; ++c) dbias[c] += dy[c];
        for (int64_t r = 0; r < k; ++r) {
          const int64_t t = window_start(m, stride, k) + r;
          if (t < 0 || t >= length) continue;
          const T* x_row = px + (b * length + t) * C;
          T* dw = dw_taps + r * C;
          for (int64_t c = 0; c < C; ++c) dw[c] += dy[c] * x_row[c];
        }
      }
    }
    for (int64_t chunk = 1; chunk < chunks; ++chunk)
      for (int64_t e = 0; e < partial_size; ++e) partials[e] += partials[chunk * partial_size + e];
    if (grad_weight.defined()) {
      T* pdw = static_cast<T*>(grad_weight.raw_data());
      for (int64_t c = 0; c < C; ++c)
        for (int64_t r = 0; r < k; ++r) pdw[c * k + r] = partials[r * C + c];
    }
    if (grad_bias.defined())
      std::copy(partials.begin() + k * C, partials.begin() + partial_size, static_cast<T*>(grad_bias.raw_data()));
  });
}

HKT_REGISTER_KERNEL(kernels::depthwise_conv1d, DeviceType::CPU, depthwise_conv1d_cpu);
HKT_REGISTER_KERNEL(kernels::depthwise_conv1d_backward, DeviceType::CPU, depthwise_conv1d_backward_cpu);

// ---- op -------------------------------------------------------------------

Tensor depthwise_conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride) {
  const char* op = kernels::depthwise_conv1d;
  check_floating(op, x);
  check_defined(op, weight, "weight");
  check(x.dim() == 3, op, ": input ", shape_str(x.shape()), " is not 3-D [B, T, C]");
  check(weight.dim() == 2 && weight.size(0) == x.size(2), op, ": input ", shape_str(x.shape()), " but weight ",
        shape_str(weight.shape()));
  check(weight.size(1) > 0, op, ": weight ", shape_str(weight.shape()), " has kernel size 0");
  check(stride > 0, op, ": stride ", stride, " must be positive");
  if (bias.defined()) {
    check_compatible(op, {x, weight, bias});
    check(bias.dim() == 1 && bias.size(0) == x.size(2), op, ": weight ", shape_str(weight.shape()), " but bias ",
          shape_str(bias.shape()));
  } else {
    check_compatible(op, {x, weight});
  }
  const int64_t T_out = (x.size(1) + stride - 1) / stride;
  Tensor out = Tensor::empty({x.size(0), T_out, x.size(2)}, x.dtype(), x.device());
  dispatch::kernel<DepthwiseConv1dKernel>(op, x.device())(x, weight, bias, stride, out);

  // An undefined bias is no input of the graph node (the graph walk reads every input).
  const bool has_bias = bias.defined();
  std::vector<Tensor> inputs = {x, weight};
  if (has_bias) inputs.push_back(bias);
  record(op, inputs, out,
         [x = x.detach(), weight = weight.detach(), stride, has_bias, rx = x.requires_grad(),
          rw = weight.requires_grad(), rb = has_bias && bias.requires_grad()](const Tensor& g) -> std::vector<Tensor> {
           Tensor gx = rx ? Tensor::empty(x.shape(), x.dtype(), x.device()) : Tensor();
           Tensor gw = rw ? Tensor::empty(weight.shape(), x.dtype(), x.device()) : Tensor();
           Tensor gb = rb ? Tensor::empty({weight.size(0)}, x.dtype(), x.device()) : Tensor();
           dispatch::kernel<DepthwiseConv1dBackwardKernel>(kernels::depthwise_conv1d_backward, x.device())(x, weight, g,
                                                                                                   stride, gx, gw, gb);
           std::vector<Tensor> grads = {gx, gw};
           if (has_bias) grads.push_back(gb);
           return grads;
         });
  return out;
}

}  // namespace hkt
