// Depthwise causal 1-D convolution (SPEC sections 2 and 4): forward, backward
// and CPU kernels.
#include "ops/conv1d.h"

#include <algorithm>
#include <vector>

#include "engine/dispatch.h"
#include "ops/common.h"
#include "ops/conv1d_rows.h"
#include "ops/mask.h"

namespace hkt {

// ---- CPU kernels ----------------------------------------------------------

namespace {

// The first input position of output m's window: m·s + s − k (SPEC section 2).
inline int64_t window_start(int64_t m, int64_t stride, int64_t k) { return m * stride + stride - k; }

}  // namespace

// rows: the output rows computed per sequence (the masked form), the rest 0;
// null for all of them.
void depthwise_conv1d_rows_cpu(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride,
                               const int64_t* rows, Tensor& out) {
  visit_floating("depthwise_conv1d", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const int64_t B = x.size(0), length = x.size(1), C = x.size(2), k = weight.size(1), T_out = out.size(1);
    const T* px = static_cast<const T*>(x.raw_data());
    const T* pb = bias.defined() ? static_cast<const T*>(bias.raw_data()) : nullptr;
    T* po = static_cast<T*>(out.raw_data());
    const std::vector<T> taps = weight_by_tap(static_cast<const T*>(weight.raw_data()), C, k);
    // Runs of 256 rows as threads come free: the masked rows are quick, and they gather at the ends of sequences.
#pragma omp parallel for schedule(dynamic, 256) if (B * T_out * C * k > HKT_OMP_MIN_WORK)
    for (int64_t row = 0; row < B * T_out; ++row) {
      const int64_t b = row / T_out, m = row % T_out;
      if (rows && m >= rows[b]) std::fill(po + row * C, po + (row + 1) * C, T(0));
      else conv_row(px + b * length * C, length, window_start(m, stride, k), C, k, taps.data(), pb, po + row * C);
    }
  });
}

void depthwise_conv1d_cpu(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride, Tensor& out) {
  depthwise_conv1d_rows_cpu(x, weight, bias, stride, nullptr, out);
}
void depthwise_conv1d_masked_cpu(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride,
                                 const Tensor& lengths, Tensor& out) {
  depthwise_conv1d_rows_cpu(x, weight, bias, stride, lengths.data<int64_t>(), out);
}

// One pass over dY gives all three gradients: for output row m and each tap
// r that reads input row t = m·s + s − k + r,
//   dX[b, t, :] += W[:, r] ⊙ dY[b, m, :],   dW[:, r] += dY[b, m, :] ⊙ X[b, t, :],
// and dbias += dY[b, m, :] (contiguous rows of every channel at once: the
// loops vectorise). A sequence is one task: its dX rows (128 KiB at T = 512,
// C = 64, in L2 while it runs) get terms only from its own outputs, m
// ascending, and it sums dW and dbias into its own [k + 1, C] partial, which
// stays in L1; the partials are added in sequence order, so the result does
// not depend on the thread count. dX is zeroed first unless `accumulate`
// (then it holds a gradient summed so far: autograd's take_gradient_sum).
// It replaced two passes (a gather per input row for dX, a sweep for dW)
// that read dY twice and cost an integer division per tap: the six
// convolutions' backward of the HKT step went from 7.6 to 6.2 ms on one
// thread (docs/PERFORMANCE.md, "2026-12-06, Intel again"). rows: as in the
// forward; the masked form's dY rows m ≥ rows[b] are not read.
void depthwise_conv1d_backward_rows_cpu(const Tensor& x, const Tensor& weight, const Tensor& grad_out, int64_t stride,
                                        const int64_t* rows, Tensor& grad_x, Tensor& grad_weight, Tensor& grad_bias,
                                        bool accumulate) {
  visit_floating("depthwise_conv1d_backward", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const int64_t B = x.size(0), length = x.size(1), C = x.size(2), k = weight.size(1), T_out = grad_out.size(1);
    const T* px = static_cast<const T*>(x.raw_data());
    const T* pg = static_cast<const T*>(grad_out.raw_data());
    T* pdx = grad_x.defined() ? static_cast<T*>(grad_x.raw_data()) : nullptr;
    const bool params = grad_weight.defined() || grad_bias.defined();
    const std::vector<T> taps = weight_by_tap(static_cast<const T*>(weight.raw_data()), C, k);
    const int64_t partial_size = (k + 1) * C;  // per sequence: dW as [k, C], then dbias
    const PartialSums<T> partials(params ? B : 0, partial_size);
    const std::vector<int64_t> order = longest_first(rows, B);  // the masked form's work follows its rows
#pragma omp parallel for schedule(dynamic) if (B * T_out * C * k > HKT_OMP_MIN_WORK)
    for (int64_t task = 0; task < B; ++task) {
      const int64_t b = order[task];
      const T* xs = px + b * length * C;
      const T* dys = pg + b * T_out * C;
      T* dxs = pdx ? pdx + b * length * C : nullptr;
      if (dxs && !accumulate) std::fill(dxs, dxs + length * C, T(0));
      T* dw_taps = params ? partials[b] : nullptr;
      for (int64_t m = 0; m < (rows ? rows[b] : T_out); ++m) {
        const T* dy = dys + m * C;
        if (row_is_zero(dy, C)) continue;  // adds nothing anywhere (ops/common.h)
        if (dw_taps) {
          T* dbias = dw_taps + k * C;
          for (int64_t c = 0; c < C; ++c) dbias[c] += dy[c];
        }
        const int64_t t0 = window_start(m, stride, k);
        const int64_t r_end = std::min(k, length - t0);
        for (int64_t r = std::max<int64_t>(0, -t0); r < r_end; ++r) {
          if (dxs) {
            T* dx = dxs + (t0 + r) * C;
            const T* w = taps.data() + r * C;
            for (int64_t c = 0; c < C; ++c) dx[c] += w[c] * dy[c];
          }
          if (dw_taps) {
            T* dw = dw_taps + r * C;
            const T* x_row = xs + (t0 + r) * C;
            for (int64_t c = 0; c < C; ++c) dw[c] += dy[c] * x_row[c];
          }
        }
      }
    }
    if (!params) return;
    const T* total = partials.sum();
    if (grad_weight.defined()) {
      T* pdw = static_cast<T*>(grad_weight.raw_data());
      for (int64_t c = 0; c < C; ++c)
        for (int64_t r = 0; r < k; ++r) pdw[c * k + r] = total[r * C + c];
    }
    if (grad_bias.defined()) std::copy(total + k * C, total + partial_size, static_cast<T*>(grad_bias.raw_data()));
  });
}

void depthwise_conv1d_backward_cpu(const Tensor& x, const Tensor& weight, const Tensor& grad_out, int64_t stride,
                                   Tensor& grad_x, Tensor& grad_weight, Tensor& grad_bias, bool accumulate) {
  depthwise_conv1d_backward_rows_cpu(x, weight, grad_out, stride, nullptr, grad_x, grad_weight, grad_bias, accumulate);
}
void depthwise_conv1d_masked_backward_cpu(const Tensor& x, const Tensor& weight, const Tensor& grad_out,
                                          int64_t stride, const Tensor& lengths, Tensor& grad_x, Tensor& grad_weight,
                                          Tensor& grad_bias, bool accumulate) {
  depthwise_conv1d_backward_rows_cpu(x, weight, grad_out, stride, lengths.data<int64_t>(), grad_x, grad_weight,
                                     grad_bias, accumulate);
}

HKT_REGISTER_KERNEL(kernels::depthwise_conv1d, DeviceType::CPU, depthwise_conv1d_cpu);
HKT_REGISTER_KERNEL(kernels::depthwise_conv1d_backward, DeviceType::CPU, depthwise_conv1d_backward_cpu);
HKT_REGISTER_KERNEL(kernels::depthwise_conv1d_masked, DeviceType::CPU, depthwise_conv1d_masked_cpu);
HKT_REGISTER_KERNEL(kernels::depthwise_conv1d_masked_backward, DeviceType::CPU, depthwise_conv1d_masked_backward_cpu);

// ---- ops ------------------------------------------------------------------

namespace {

// The shape [B, ceil(T/s), C] of the convolution's output, after checking its arguments.
Shape checked_output_shape(const char* op, const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride) {
  check_floating(op, x);
  check_defined(op, weight, "weight");
  check(x.dim() == 3, op, ": input ", x.shape(), " is not 3-D [B, T, C]");
  check(weight.dim() == 2 && weight.size(0) == x.size(2), op, ": input ", x.shape(), " but weight ",
        weight.shape());
  check(weight.size(1) > 0, op, ": weight ", weight.shape(), " has kernel size 0");
  check(stride > 0, op, ": stride ", stride, " must be positive");
  if (bias.defined()) {
    check_compatible(op, {x, weight, bias});
    check(bias.dim() == 1 && bias.size(0) == x.size(2), op, ": weight ", weight.shape(), " but bias ",
          bias.shape());
  } else {
    check_compatible(op, {x, weight});
  }
  return {x.size(0), (x.size(1) + stride - 1) / stride, x.size(2)};
}

// Records the node of both forms; lengths undefined for the plain one.
void record_conv(const char* op, const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride,
                 const Tensor& lengths, Tensor& out) {
  // An undefined bias is no input of the graph node (the graph walk reads every input).
  const bool has_bias = bias.defined();
  std::vector<Tensor> inputs = {x, weight};
  if (has_bias) inputs.push_back(bias);
  record(op, inputs, out,
         [x = x.detach(), weight = weight.detach(), stride, lengths, has_bias, rx = x.requires_grad(),
          rw = weight.requires_grad(), rb = has_bias && bias.requires_grad()](const Tensor& g) -> std::vector<Tensor> {
           // dX adds into the gradient x already has from its other consumers, where autograd hands it over.
           const Tensor sum = rx ? take_gradient_sum(0) : Tensor();
           const bool accumulate = sum.defined();
           Tensor gx = accumulate ? sum : rx ? Tensor::empty(x.shape(), x.dtype(), x.device()) : Tensor();
           Tensor gw = rw ? Tensor::empty(weight.shape(), x.dtype(), x.device()) : Tensor();
           Tensor gb = rb ? Tensor::empty({weight.size(0)}, x.dtype(), x.device()) : Tensor();
           if (lengths.defined())
             dispatch::kernel<DepthwiseConv1dMaskedBackwardKernel>(kernels::depthwise_conv1d_masked_backward,
                                                                   x.device())(x, weight, g, stride, lengths, gx, gw,
                                                                               gb, accumulate);
           else
             dispatch::kernel<DepthwiseConv1dBackwardKernel>(kernels::depthwise_conv1d_backward, x.device())(
                 x, weight, g, stride, gx, gw, gb, accumulate);
           std::vector<Tensor> grads = {gx, gw};
           if (has_bias) grads.push_back(gb);
           return grads;
         });
}

}  // namespace

Tensor depthwise_conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride) {
  const char* op = kernels::depthwise_conv1d;
  Tensor out = Tensor::empty(checked_output_shape(op, x, weight, bias, stride), x.dtype(), x.device());
  dispatch::kernel<DepthwiseConv1dKernel>(op, x.device())(x, weight, bias, stride, out);
  record_conv(op, x, weight, bias, stride, Tensor(), out);
  return out;
}

Tensor depthwise_conv1d_masked(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride,
                               const Tensor& lengths) {
  const char* op = kernels::depthwise_conv1d_masked;
  const Shape shape = checked_output_shape(op, x, weight, bias, stride);
  const Tensor valid = checked_sequence_lengths(op, lengths, shape[0], shape[1]);
  if (x.device().type != DeviceType::CPU) return zero_padded_rows(depthwise_conv1d(x, weight, bias, stride), valid);
  Tensor out = Tensor::empty(shape, x.dtype(), x.device());
  dispatch::kernel<DepthwiseConv1dMaskedKernel>(op, x.device())(x, weight, bias, stride, valid, out);
  record_conv(op, x, weight, bias, stride, valid, out);
  return out;
}

}  // namespace hkt
