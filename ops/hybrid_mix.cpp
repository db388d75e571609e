// The hybrid head's mix (ops/hybrid_mix.h): forward, backward and CPU kernels.
#include "ops/hybrid_mix.h"

#include <algorithm>
#include <vector>

#include "engine/dispatch.h"
#include "ops/common.h"
#include "ops/conv1d.h"
#include "ops/conv1d_lanes.h"
#include "ops/conv1d_rows.h"
#include "ops/lerp.h"
#include "ops/mask.h"

namespace hkt {

// ---- CPU kernels ----------------------------------------------------------

namespace {

// Row t of the mix, y = c + β ⊙ (A − c) with c = conv_row's sum in its order
// (lanes::conv_sum): a vector of channels at a time, the K taps unrolled. v
// is the sequence's [length, C].
template <class T, int K>
void mix_row_lanes(const T* v, int64_t t, const T* a, const T* taps, const T* beta, const T* bias, int64_t C, T* y) {
  for (int64_t c0 = 0; c0 < C; c0 += lanes::Line<T>::kWidth) {
    const lanes::Vec<T> conv = lanes::conv_sum<T, K>(v, t + 1, t - K + 1, C, c0, taps, bias);
    lanes::store(y + c0, conv + lanes::load(beta + c0) * (lanes::load(a + c0) - conv));  // lerp's formula
  }
}

// The backward's terms of row t (hybrid_mix_backward_cpu) the same way; g,
// a and da are the row's, v and dv the sequence's, dw_taps [K, C], dbias and
// dbeta [C] the sequence's partial.
template <class T, int K>
void mix_backward_row_lanes(const T* v, int64_t t, const T* g, const T* a, const T* taps, const T* beta,
                            const T* bias, int64_t C, bool accumulate, T* da, T* dv, T* dw_taps, T* dbias,
                            T* dbeta) {
  using V = lanes::Vec<T>;
  for (int64_t c0 = 0; c0 < C; c0 += lanes::Line<T>::kWidth) {
    const V grad = lanes::load(g + c0), gate = lanes::load(beta + c0);
    const V conv = lanes::conv_sum<T, K>(v, t + 1, t - K + 1, C, c0, taps, bias);
    if (da) lanes::store(da + c0, grad * gate);
    lanes::store(dbeta + c0, lanes::load(dbeta + c0) + grad * (lanes::load(a + c0) - conv));
    const V conv_grad = grad * (lanes::splat(T(1)) - gate);
    lanes::store(dbias + c0, lanes::load(dbias + c0) + conv_grad);
#pragma GCC unroll 8
    for (int r = 0; r < K; ++r) {
      const int64_t source = t - K + 1 + r;
      if (source < 0) continue;
      if (dv) {  // row t is first reached at its last tap: written, not added, unless accumulating
        T* row = dv + source * C + c0;
        const V term = lanes::load(taps + r * C + c0) * conv_grad;
        lanes::store(row, r == K - 1 && !accumulate ? term : lanes::load(row) + term);
      }
      T* dw = dw_taps + r * C + c0;
      lanes::store(dw, lanes::load(dw) + conv_grad * lanes::load(v + source * C + c0));
    }
  }
}

void hybrid_mix_cpu(const Tensor& attended, const Tensor& values, const Tensor& weight, const Tensor& bias,
                    const Tensor& gates, const Tensor& lengths, Tensor& out) {
  visit_floating(kernels::hybrid_mix, out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const int64_t B = values.size(0), length = values.size(1), C = values.size(2), k = weight.size(1);
    const T *pa = attended.data<T>(), *pv = values.data<T>(), *beta = gates.data<T>();
    const T* pb = bias.defined() ? bias.data<T>() : nullptr;
    T* po = out.data<T>();
    const std::vector<T> taps = weight_by_tap(weight.data<T>(), C, k);
    const int64_t* valid = lengths.defined() ? lengths.data<int64_t>() : nullptr;
    decltype(&mix_row_lanes<T, 1>) row_kernel = nullptr;
    if (lanes::fits<T>(C, k))
      lanes::with_taps(k, [&](auto taps_constant) { row_kernel = &mix_row_lanes<T, decltype(taps_constant)::value>; });
    // Runs of 256 rows as threads come free: padded rows are quick, and they gather at the ends of sequences.
#pragma omp parallel for schedule(dynamic, 256) if (B * length * C * k > HKT_OMP_MIN_WORK)
    for (int64_t row = 0; row < B * length; ++row) {
      const int64_t b = row / length, t = row % length;
      T* y = po + row * C;
      if (valid && t >= valid[b]) {  // a padded position: 0
        std::fill(y, y + C, T(0));
        continue;
      }
      if (row_kernel) {
        row_kernel(pv + b * length * C, t, pa + row * C, taps.data(), beta, pb, C, y);
        continue;
      }
      conv_row(pv + b * length * C, length, t - k + 1, C, k, taps.data(), pb, y);  // the causal window ends at t
      const T* a = pa + row * C;
      for (int64_t c = 0; c < C; ++c) y[c] = y[c] + beta[c] * (a[c] - y[c]);  // lerp's formula
    }
  });
}

// A sequence per task, dealt round the threads one at a time (schedule(static,
// 1)): a batch sorted by length (the benchmark's) then splits evenly, where
// contiguous halves gave one thread 1.4× the other's valid rows. Per row t: the convolution recomputed (c), dA = β ⊙ g,
// dβ += g ⊙ (A − c), dc = (1 − β) ⊙ g, dbias += dc, and per tap r reading
// t' = t − k + 1 + r: dV[t'] += W[:, r] ⊙ dc and dW[:, r] += dc ⊙ V[t'].
// dV rows get terms only from their own sequence, t ascending (row t' first
// from t = t'); dW, dbias and dβ go to the sequence's [k + 2, C] partial (in
// L1), added in sequence order: the result does not depend on the thread count.
// A row whose g is 0, or a padded one (lengths: its output is constant 0),
// only writes its zeros. Whole vectors of channels and up to kMaxTaps taps
// take mix_backward_row_lanes, the same terms in the same order.
void hybrid_mix_backward_cpu(const Tensor& attended, const Tensor& values, const Tensor& weight, const Tensor& bias,
                             const Tensor& gates, const Tensor& lengths, const Tensor& grad_out,
                             Tensor& grad_attended, Tensor& grad_values,
                             Tensor& grad_weight, Tensor& grad_bias, Tensor& grad_gates, bool accumulate) {
  visit_floating(kernels::hybrid_mix_backward, grad_out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const int64_t B = values.size(0), length = values.size(1), C = values.size(2), k = weight.size(1);
    const T *pa = attended.data<T>(), *pv = values.data<T>(), *beta = gates.data<T>(), *pg = grad_out.data<T>();
    const T* pb = bias.defined() ? bias.data<T>() : nullptr;
    T* pda = grad_attended.defined() ? grad_attended.data<T>() : nullptr;
    T* pdv = grad_values.defined() ? grad_values.data<T>() : nullptr;
    const std::vector<T> taps = weight_by_tap(weight.data<T>(), C, k);
    const int64_t* lengths_of = lengths.defined() ? lengths.data<int64_t>() : nullptr;
    const int64_t partial_size = (k + 2) * C;  // per sequence: dW as [k, C], dbias, dβ
    const PartialSums<T> partials(B, partial_size);
    decltype(&mix_backward_row_lanes<T, 1>) row_kernel = nullptr;
    if (lanes::fits<T>(C, k))
      lanes::with_taps(k, [&](auto taps_constant) {
        row_kernel = &mix_backward_row_lanes<T, decltype(taps_constant)::value>;
      });
#pragma omp parallel if (B * length * C * k > HKT_OMP_MIN_WORK)
    {
      std::vector<T> conv(static_cast<size_t>(C));  // this thread's row of the convolution, then of its gradient
#pragma omp for schedule(static, 1)
      for (int64_t b = 0; b < B; ++b) {
        const T* vs = pv + b * length * C;
        T* dvs = pdv ? pdv + b * length * C : nullptr;
        T* dw_taps = partials[b];
        T* dbias = dw_taps + k * C;
        T* dbeta = dbias + C;
        const int64_t valid = lengths_of ? lengths_of[b] : length;
        for (int64_t t = 0; t < length; ++t) {
          const int64_t row = b * length + t;
          const T *g = pg + row * C, *a = pa + row * C;
          if (t >= valid || row_is_zero(g, C)) {  // dA = 0 and no other term; only a dV row written first here needs its 0
            if (pda) std::fill(pda + row * C, pda + (row + 1) * C, T(0));
            if (dvs && !accumulate) std::fill(dvs + t * C, dvs + (t + 1) * C, T(0));
            continue;
          }
          if (row_kernel) {
            row_kernel(vs, t, g, a, taps.data(), beta, pb, C, accumulate, pda ? pda + row * C : nullptr, dvs,
                       dw_taps, dbias, dbeta);
            continue;
          }
          conv_row(vs, length, t - k + 1, C, k, taps.data(), pb, conv.data());
          if (pda)
            for (int64_t c = 0; c < C; ++c) pda[row * C + c] = g[c] * beta[c];
          for (int64_t c = 0; c < C; ++c) {
            dbeta[c] += g[c] * (a[c] - conv[c]);
            conv[c] = g[c] * (T(1) - beta[c]);  // now the convolution's output gradient
            dbias[c] += conv[c];
          }
          for (int64_t r = std::max<int64_t>(0, k - 1 - t); r < k; ++r) {
            const int64_t source = t - k + 1 + r;
            if (dvs) {
              T* dv = dvs + source * C;
              const T* w = taps.data() + r * C;
              // Row t is first reached here, at its last tap (t ascending): written, not added, unless
              // accumulating, so dV needs no zeroing pass.
              if (r == k - 1 && !accumulate)
                for (int64_t c = 0; c < C; ++c) dv[c] = w[c] * conv[c];
              else
                for (int64_t c = 0; c < C; ++c) dv[c] += w[c] * conv[c];
            }
            T* dw = dw_taps + r * C;
            const T* v = vs + source * C;
            for (int64_t c = 0; c < C; ++c) dw[c] += conv[c] * v[c];
          }
        }
      }
    }
    const T* total = partials.sum();
    if (grad_weight.defined()) {
      T* pdw = grad_weight.data<T>();
      for (int64_t c = 0; c < C; ++c)
        for (int64_t r = 0; r < k; ++r) pdw[c * k + r] = total[r * C + c];
    }
    if (grad_bias.defined()) std::copy(total + k * C, total + (k + 1) * C, grad_bias.data<T>());
    if (grad_gates.defined()) std::copy(total + (k + 1) * C, total + partial_size, grad_gates.data<T>());
  });
}

}  // namespace

HKT_REGISTER_KERNEL(kernels::hybrid_mix, DeviceType::CPU, hybrid_mix_cpu);
HKT_REGISTER_KERNEL(kernels::hybrid_mix_backward, DeviceType::CPU, hybrid_mix_backward_cpu);

// ---- op -------------------------------------------------------------------

Tensor hybrid_mix(const Tensor& attended, const Tensor& values, const Tensor& weight, const Tensor& bias,
                  const Tensor& gates, const Tensor& lengths) {
  const char* op = kernels::hybrid_mix;
  check_defined(op, attended, "attended");
  check_defined(op, values, "values");
  check_defined(op, weight, "weight");
  check_defined(op, gates, "gates");
  for (const Tensor* t : {&attended, &values, &weight, &gates}) check_floating(op, *t);
  check(values.dim() == 3, op, ": values ", values.shape(), " is not 3-D [B, T, C]");
  check(attended.shape() == values.shape(), op, ": attended ", attended.shape(), " and values ",
        values.shape(), " differ (they must have one shape)");
  const int64_t C = values.size(2);
  check(weight.dim() == 2 && weight.size(0) == C && weight.size(1) > 0, op, ": values ", values.shape(),
        " but weight ", weight.shape(), " (expected [C, k], k > 0)");
  check(gates.shape() == Shape{C}, op, ": values ", values.shape(), " but gates ",
        gates.shape(), " (expected one per channel, [C])");
  const bool has_bias = bias.defined();
  if (has_bias) {
    check_floating(op, bias);
    check(bias.shape() == Shape{C}, op, ": values ", values.shape(), " but bias ", bias.shape());
    check_compatible(op, {attended, values, weight, bias, gates});
  } else {
    check_compatible(op, {attended, values, weight, gates});
  }
  const Tensor valid = lengths.defined() ? checked_sequence_lengths(op, lengths, values.size(0), values.size(1))
                                         : Tensor();
  if (values.device().type != DeviceType::CPU) {
    Tensor mixed = lerp(depthwise_conv1d(values, weight, bias, 1), attended, gates);
    return valid.defined() ? zero_padded_rows(mixed, valid) : mixed;
  }

  Tensor out = Tensor::empty(values.shape(), values.dtype(), values.device());
  dispatch::kernel<HybridMixKernel>(op, values.device())(attended, values, weight, bias, gates, valid, out);
  // An undefined bias is no input of the graph node (the graph walk reads every input).
  std::vector<Tensor> inputs = {attended, values, weight, gates};
  if (has_bias) inputs.push_back(bias);
  record(op, inputs, out,
         [a = attended.detach(), v = values.detach(), w = weight.detach(), conv_bias = has_bias ? bias.detach() : Tensor(),
          beta = gates.detach(), valid, ra = attended.requires_grad(), rv = values.requires_grad(),
          rw = weight.requires_grad(), rb = has_bias && bias.requires_grad(),
          rg = gates.requires_grad()](const Tensor& g) -> std::vector<Tensor> {
           auto wanted = [&](bool flag, const Shape& shape) {
             return flag ? Tensor::empty(shape, v.dtype(), v.device()) : Tensor();
           };
           // dV adds into the gradient the values already have (the attention's dV), where autograd hands it over.
           const Tensor sum = rv ? take_gradient_sum(1) : Tensor();
           Tensor ga = wanted(ra, v.shape()), gv = sum.defined() ? sum : wanted(rv, v.shape());
           Tensor gw = wanted(rw, w.shape()), gb = wanted(rb, {w.size(0)}), gg = wanted(rg, beta.shape());
           dispatch::kernel<HybridMixBackwardKernel>(kernels::hybrid_mix_backward, v.device())(
               a, v, w, conv_bias, beta, valid, g, ga, gv, gw, gb, gg, sum.defined());
           std::vector<Tensor> grads = {ga, gv, gw, gg};
           if (conv_bias.defined()) grads.push_back(gb);
           return grads;
         });
  return out;
}

}  // namespace hkt
