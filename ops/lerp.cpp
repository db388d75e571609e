// lerp: forward, backward and CPU kernels (ops/lerp.h).
#include "ops/lerp.h"

#include "engine/dispatch.h"
#include "ops/broadcast.h"
#include "ops/common.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"

namespace hkt {

// ---- CPU kernels ----------------------------------------------------------

namespace {

// Calls fn(first, count, w, w_step) for each row of out: elements
// [first, first + count) of the full-shape tensors, and the weight of the
// row's j-th element at w[j · w_step] (w_step 1: weight varies along the
// row, 0: constant on it).
template <class T, class Fn>
void for_each_weight_row(const Tensor& weight, const Tensor& out, Fn&& fn) {
  const auto strides = broadcast_strides(weight.shape(), out.shape());
  const int64_t length = out.dim() == 0 ? 1 : out.shape().back();
  const int64_t step = out.dim() == 0 ? 0 : strides.back();
  const T* w = weight.data<T>();
  for_each_broadcast_row(out.shape(), strides, strides,
                         [&](int64_t row, int64_t offset, int64_t) { fn(row * length, length, w + offset, step); });
}

void lerp_cpu(const Tensor& start, const Tensor& end, const Tensor& weight, Tensor& out) {
  visit_floating(kernels::lerp, out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T *s = start.data<T>(), *e = end.data<T>();
    T* o = out.data<T>();
    for_each_weight_row<T>(weight, out, [&](int64_t first, int64_t count, const T* w, int64_t step) {
      const T *rs = s + first, *re = e + first;
      T* ro = o + first;
      if (step == 1)  // the two loops the compiler vectorises: weight along the row, or one weight
        for (int64_t j = 0; j < count; ++j) ro[j] = rs[j] + w[j] * (re[j] - rs[j]);
      else
        for (int64_t j = 0; j < count; ++j) ro[j] = rs[j] + w[0] * (re[j] - rs[j]);
    });
  });
}

void lerp_backward_cpu(const Tensor& start, const Tensor& end, const Tensor& weight, const Tensor& grad_out,
                       Tensor& grad_start, Tensor& grad_end, Tensor& grad_weight) {
  visit_floating(kernels::lerp_backward, grad_out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T *s = start.data<T>(), *e = end.data<T>(), *g = grad_out.data<T>();
    T* gs = grad_start.defined() ? grad_start.data<T>() : nullptr;
    T* ge = grad_end.defined() ? grad_end.data<T>() : nullptr;
    T* gw = grad_weight.defined() ? grad_weight.data<T>() : nullptr;
    for_each_weight_row<T>(weight, grad_out, [&](int64_t first, int64_t count, const T* w, int64_t step) {
      const T* rg = g + first;
      // One loop per output, each with the weight's step known: vectorised.
      if (gs && step == 1)
        for (int64_t j = 0; j < count; ++j) gs[first + j] = rg[j] * (T(1) - w[j]);
      else if (gs)
        for (int64_t j = 0; j < count; ++j) gs[first + j] = rg[j] * (T(1) - w[0]);
      if (ge && step == 1)
        for (int64_t j = 0; j < count; ++j) ge[first + j] = rg[j] * w[j];
      else if (ge)
        for (int64_t j = 0; j < count; ++j) ge[first + j] = rg[j] * w[0];
      if (gw)
        for (int64_t j = 0; j < count; ++j) gw[first + j] = rg[j] * (e[first + j] - s[first + j]);
    });
  });
}

}  // namespace

HKT_REGISTER_KERNEL(kernels::lerp, DeviceType::CPU, lerp_cpu);
HKT_REGISTER_KERNEL(kernels::lerp_backward, DeviceType::CPU, lerp_backward_cpu);

// ---- op -------------------------------------------------------------------

Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight) {
  const char* op = kernels::lerp;
  check_defined(op, start, "start");
  check_defined(op, end, "end");
  check_defined(op, weight, "weight");
  for (const Tensor* t : {&start, &end, &weight}) check_floating(op, *t);
  check_compatible(op, {start, end, weight});
  check(start.shape() == end.shape(), op, ": start ", start.shape(), " and end ", end.shape(),
        " differ (they must have one shape)");
  check(broadcast_shapes(op, weight.shape(), start.shape()) == start.shape(), op, ": weight ",
        weight.shape(), " does not broadcast to start's shape ", start.shape());
  Tensor out = Tensor::empty(start.shape(), start.dtype(), start.device());
  dispatch::kernel<LerpKernel>(op, start.device())(start, end, weight, out);
  record(op, {start, end, weight}, out,
         [s = start.detach(), e = end.detach(), w = weight.detach(), rs = start.requires_grad(),
          re = end.requires_grad(), rw = weight.requires_grad()](const Tensor& g) -> std::vector<Tensor> {
           auto full = [&](bool wanted) { return wanted ? Tensor::empty(s.shape(), s.dtype(), s.device()) : Tensor(); };
           Tensor grad_start = full(rs), grad_end = full(re), grad_weight = full(rw);
           dispatch::kernel<LerpBackwardKernel>(kernels::lerp_backward, s.device())(s, e, w, g, grad_start, grad_end,
                                                                                   grad_weight);
           return {grad_start, grad_end, rw ? sum_to(grad_weight, w.shape()) : Tensor()};
         });
  return out;
}

}  // namespace hkt
