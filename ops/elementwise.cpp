// Elementwise ops: forward, backward and CPU kernels. Scalar math lives in
// elementwise_math.h so that the CUDA kernels share it.
#include "ops/elementwise.h"

#include <algorithm>
#include <type_traits>

#include "engine/dispatch.h"
#include "engine/tensor_ops.h"
#include "ops/attention_cpu.h"
#include "ops/broadcast.h"
#include "ops/common.h"
#include "ops/elementwise_math.h"
#include "ops/mask.h"
#include "ops/reduce.h"

namespace hkt {

std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> strides(out.size(), 0);
  int64_t stride = 1;
  for (int64_t i = static_cast<int64_t>(in.size()) - 1, j = static_cast<int64_t>(out.size()) - 1; i >= 0; --i, --j) {
    strides[j] = in[i] == 1 ? 0 : stride;
    stride *= in[i];
  }
  return strides;
}

Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()));
  for (size_t k = 0; k < out.size(); ++k) {
    int64_t ea = k < a.size() ? a[a.size() - 1 - k] : 1;
    int64_t eb = k < b.size() ? b[b.size() - 1 - k] : 1;
    check(ea == eb || ea == 1 || eb == 1, op, ": shapes ", a, " and ", b,
          " cannot be broadcast together");
    out[out.size() - 1 - k] = ea == 1 ? eb : ea;
  }
  return out;
}

// ---- CPU kernels ----------------------------------------------------------

template <class Op>
void binary_cpu(const Tensor& a, const Tensor& b, Tensor& out) {
  visit_floating("binary", out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* pa = static_cast<const T*>(a.raw_data());
    const T* pb = static_cast<const T*>(b.raw_data());
    T* po = static_cast<T*>(out.raw_data());
    auto sa = broadcast_strides(a.shape(), out.shape()), sb = broadcast_strides(b.shape(), out.shape());
    const int64_t length = out.dim() == 0 ? 1 : out.shape().back();
    const int64_t step_a = out.dim() == 0 ? 0 : sa.back(), step_b = out.dim() == 0 ? 0 : sb.back();
    if (a.shape() == out.shape() && b.shape() == out.shape()) {  // no broadcast: one flat loop the compiler vectorises
      const int64_t n = out.numel();
#pragma omp parallel for if (n > HKT_OMP_MIN_WORK)
      for (int64_t i = 0; i < n; ++i) po[i] = Op::apply(pa[i], pb[i]);
      return;
    }
    // The common row patterns (both contiguous, or one operand constant along
    // the row: a bias, a per-row scale) get loops with unit or zero steps.
    for_each_broadcast_row(out.shape(), sa, sb, [&](int64_t row, int64_t offset_a, int64_t offset_b) {
      T* o = po + row * length;
      const T* ra = pa + offset_a;
      const T* rb = pb + offset_b;
      if (step_a == 1 && step_b == 1) {
        for (int64_t j = 0; j < length; ++j) o[j] = Op::apply(ra[j], rb[j]);
      } else if (step_a == 1 && step_b == 0) {
        const T vb = rb[0];
        for (int64_t j = 0; j < length; ++j) o[j] = Op::apply(ra[j], vb);
      } else if (step_a == 0 && step_b == 1) {
        const T va = ra[0];
        for (int64_t j = 0; j < length; ++j) o[j] = Op::apply(va, rb[j]);
      } else {
        for (int64_t j = 0; j < length; ++j) o[j] = Op::apply(ra[j * step_a], rb[j * step_b]);
      }
    });
  });
}

void broadcast_cpu(const Tensor& x, Tensor& out) {
  visit_floating("broadcast_to", out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x.raw_data());
    T* po = static_cast<T*>(out.raw_data());
    auto sx = broadcast_strides(x.shape(), out.shape());
    const int64_t length = out.dim() == 0 ? 1 : out.shape().back();
    const int64_t step = out.dim() == 0 ? 0 : sx.back();
    for_each_broadcast_row(out.shape(), sx, sx, [&](int64_t row, int64_t offset, int64_t) {
      for (int64_t j = 0; j < length; ++j) po[row * length + j] = px[offset + j * step];
    });
  });
}

// GELU in float32 runs on the widest vector path (ops/attention_cpu.h): libm's
// scalar erff was a tenth of a training step. Chunks keep threads apart.
template <class Fn>
void in_chunks(int64_t n, Fn&& fn) {
  constexpr int64_t kChunk = 4096;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for if (n > HKT_OMP_MIN_WORK)
  for (int64_t c = 0; c < chunks; ++c) fn(c * kChunk, std::min(n, (c + 1) * kChunk) - c * kChunk);
}

template <class Op>
void unary_cpu(const Tensor& x, double param, Tensor& out) {
  if constexpr (std::is_same_v<Op, math::Gelu>) {
    if (out.dtype() == DType::Float32) {
      const auto gelu = attention_cpu::widest_path().gelu;
      const float* px = x.data<float>();
      float* po = out.data<float>();
      return in_chunks(out.numel(), [&](int64_t start, int64_t count) { gelu(px + start, po + start, count); });
    }
  }
  visit_floating("unary", out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x.raw_data());
    T* po = static_cast<T*>(out.raw_data());
    const int64_t n = out.numel();
    const T p = static_cast<T>(param);
#pragma omp parallel for if (n > HKT_OMP_MIN_WORK)
    for (int64_t i = 0; i < n; ++i) po[i] = Op::forward(px[i], p);
  });
}

template <class Op>
void unary_backward_cpu(const Tensor& x, const Tensor& y, const Tensor& grad_out, double param, Tensor& grad_in) {
  if constexpr (std::is_same_v<Op, math::Gelu>) {
    if (grad_in.dtype() == DType::Float32) {
      const auto gelu_backward = attention_cpu::widest_path().gelu_backward;
      const float *px = x.data<float>(), *pg = grad_out.data<float>();
      float* pi = grad_in.data<float>();
      return in_chunks(grad_in.numel(), [&](int64_t start, int64_t count) {
        gelu_backward(px + start, pg + start, pi + start, count);
      });
    }
  }
  visit_floating("unary_backward", grad_in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x.raw_data());
    const T* py = static_cast<const T*>(y.raw_data());
    const T* pg = static_cast<const T*>(grad_out.raw_data());
    T* pi = static_cast<T*>(grad_in.raw_data());
    const int64_t n = grad_in.numel();
    const T p = static_cast<T>(param);
#pragma omp parallel for if (n > HKT_OMP_MIN_WORK)
    for (int64_t i = 0; i < n; ++i) pi[i] = Op::backward(px[i], py[i], pg[i], p);
  });
}

HKT_REGISTER_KERNEL(kernels::add, DeviceType::CPU, binary_cpu<math::Add>);
HKT_REGISTER_KERNEL(kernels::sub, DeviceType::CPU, binary_cpu<math::Sub>);
HKT_REGISTER_KERNEL(kernels::mul, DeviceType::CPU, binary_cpu<math::Mul>);
HKT_REGISTER_KERNEL(kernels::div, DeviceType::CPU, binary_cpu<math::Div>);
HKT_REGISTER_KERNEL(kernels::broadcast_to, DeviceType::CPU, broadcast_cpu);

#define HKT_REGISTER_UNARY(name, Op)                                               \
  HKT_REGISTER_KERNEL(kernels::name, DeviceType::CPU, unary_cpu<math::Op>); \
  HKT_REGISTER_KERNEL(kernels::name##_backward, DeviceType::CPU, unary_backward_cpu<math::Op>)
HKT_REGISTER_UNARY(neg, Neg);
HKT_REGISTER_UNARY(exp, Exp);
HKT_REGISTER_UNARY(log, Log);
HKT_REGISTER_UNARY(tanh, Tanh);
HKT_REGISTER_UNARY(sigmoid, Sigmoid);
HKT_REGISTER_UNARY(relu, Relu);
HKT_REGISTER_UNARY(gelu, Gelu);
HKT_REGISTER_UNARY(sqrt, Sqrt);
HKT_REGISTER_UNARY(pow, Pow);

// gelu_masked: per sequence of x [B, T, C], GELU (or its backward) over the
// contiguous rows t < lengths[b], zeros over the rest. A sequence per task,
// longest first, taken as threads come free: valid lengths differ.
template <bool Backward>
void gelu_masked_rows_cpu(const Tensor& x, const Tensor& lengths, const Tensor& grad_out, Tensor& result) {
  const int64_t batch = x.size(0), per_sequence = x.size(1) * x.size(2), width = x.size(2);
  const int64_t* valid = lengths.data<int64_t>();
  const std::vector<int64_t> order = longest_first(valid, batch);
  visit_floating(Backward ? kernels::gelu_masked_backward : kernels::gelu_masked, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    const T* pg = Backward ? grad_out.data<T>() : nullptr;
    T* pr = result.data<T>();
#pragma omp parallel for schedule(dynamic) if (x.numel() > HKT_OMP_MIN_WORK)
    for (int64_t task = 0; task < batch; ++task) {
      const int64_t b = order[task];
      const int64_t offset = b * per_sequence, count = valid[b] * width;
      if constexpr (std::is_same_v<T, float>) {
        const attention_cpu::Path& path = attention_cpu::widest_path();
        if (Backward) path.gelu_backward(px + offset, pg + offset, pr + offset, count);
        else path.gelu(px + offset, pr + offset, count);
      } else {
        for (int64_t i = offset; i < offset + count; ++i)
          pr[i] = Backward ? math::Gelu::backward(px[i], T(0), pg[i], T(0)) : math::Gelu::forward(px[i], T(0));
      }
      std::fill(pr + offset + count, pr + offset + per_sequence, T(0));
    }
  });
}

void gelu_masked_cpu(const Tensor& x, const Tensor& lengths, Tensor& out) {
  gelu_masked_rows_cpu<false>(x, lengths, Tensor(), out);
}
void gelu_masked_backward_cpu(const Tensor& x, const Tensor& lengths, const Tensor& grad_out, Tensor& grad_in) {
  gelu_masked_rows_cpu<true>(x, lengths, grad_out, grad_in);
}

HKT_REGISTER_KERNEL(kernels::gelu_masked, DeviceType::CPU, gelu_masked_cpu);
HKT_REGISTER_KERNEL(kernels::gelu_masked_backward, DeviceType::CPU, gelu_masked_backward_cpu);

// ---- ops ------------------------------------------------------------------

namespace {

Tensor binary(const char* op, const Tensor& a, const Tensor& b) {
  check_floating(op, a);
  check_floating(op, b);
  check_compatible(op, {a, b});
  Tensor out = Tensor::empty(broadcast_shapes(op, a.shape(), b.shape()), a.dtype(), a.device());
  dispatch::kernel<BinaryKernel>(op, a.device())(a, b, out);
  return out;
}

// The local derivatives of a binary op, before summing over broadcast axes.
// local_grads(g, need_a, need_b) makes only the ones asked for: a mask
// multiplied in (x ⊙ valid_rows) would otherwise cost a full-size product
// for a gradient nobody reads.
Tensor binary_with_grad(const char* op, const Tensor& a, const Tensor& b,
                        std::function<std::pair<Tensor, Tensor>(const Tensor& g, bool need_a, bool need_b)> local_grads) {
  Tensor out = binary(op, a, b);
  record(op, {a, b}, out, [local_grads, shape_a = a.shape(), shape_b = b.shape(), ra = a.requires_grad(),
                           rb = b.requires_grad()](const Tensor& g) -> std::vector<Tensor> {
    auto [ga, gb] = local_grads(g, ra, rb);
    return {ra ? sum_to(ga, shape_a) : Tensor(), rb ? sum_to(gb, shape_b) : Tensor()};
  });
  return out;
}

// op and backward_op: the kernel names (ops/elementwise.h), op also the node's name.
Tensor unary(const char* op, const char* backward_op, const Tensor& x, double param = 0.0) {
  check_floating(op, x);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  dispatch::kernel<UnaryKernel>(op, x.device())(x, param, out);
  record(op, {x}, out, [backward_op, x = x.detach(), y = out.detach(), param](const Tensor& g) -> std::vector<Tensor> {
    Tensor grad_in = Tensor::empty(x.shape(), x.dtype(), x.device());
    dispatch::kernel<UnaryBackwardKernel>(backward_op, x.device())(x, y, g, param, grad_in);
    return {grad_in};
  });
  return out;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  return binary_with_grad(kernels::add, a, b, [](const Tensor& g, bool, bool) { return std::pair{g, g}; });
}
Tensor sub(const Tensor& a, const Tensor& b) {
  return binary_with_grad(kernels::sub, a, b,
                          [](const Tensor& g, bool, bool need_b) { return std::pair{g, need_b ? neg(g) : Tensor()}; });
}
Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor da = a.detach(), db = b.detach();
  return binary_with_grad(kernels::mul, a, b, [da, db](const Tensor& g, bool need_a, bool need_b) {
    return std::pair{need_a ? mul(g, db) : Tensor(), need_b ? mul(g, da) : Tensor()};
  });
}
Tensor div(const Tensor& a, const Tensor& b) {
  Tensor da = a.detach(), db = b.detach();
  return binary_with_grad(kernels::div, a, b, [da, db](const Tensor& g, bool need_a, bool need_b) {
    Tensor ga = div(g, db);
    return std::pair{need_a ? ga : Tensor(), need_b ? neg(div(mul(ga, da), db)) : Tensor()};
  });
}

Tensor add(const Tensor& a, double b) {
  check_defined("add", a);
  return add(a, Tensor::scalar(b, a.dtype(), a.device()));
}
Tensor mul(const Tensor& a, double b) {
  check_defined("mul", a);
  return mul(a, Tensor::scalar(b, a.dtype(), a.device()));
}

Tensor neg(const Tensor& x) { return unary(kernels::neg, kernels::neg_backward, x); }
Tensor exp(const Tensor& x) { return unary(kernels::exp, kernels::exp_backward, x); }
Tensor log(const Tensor& x) { return unary(kernels::log, kernels::log_backward, x); }
Tensor tanh(const Tensor& x) { return unary(kernels::tanh, kernels::tanh_backward, x); }
Tensor sigmoid(const Tensor& x) { return unary(kernels::sigmoid, kernels::sigmoid_backward, x); }
Tensor relu(const Tensor& x) { return unary(kernels::relu, kernels::relu_backward, x); }
Tensor gelu(const Tensor& x) { return unary(kernels::gelu, kernels::gelu_backward, x); }

Tensor gelu_masked(const Tensor& x, const Tensor& lengths) {
  const char* op = kernels::gelu_masked;
  check_floating(op, x);
  check(x.dim() == 3, op, ": input ", x.shape(), " is not 3-D [B, T, C]");
  const Tensor valid = checked_sequence_lengths(op, lengths, x.size(0), x.size(1));
  if (x.device().type != DeviceType::CPU) return zero_padded_rows(gelu(x), valid);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  dispatch::kernel<GeluMaskedKernel>(op, x.device())(x, valid, out);
  record(op, {x}, out, [x = x.detach(), valid](const Tensor& g) -> std::vector<Tensor> {
    Tensor grad_in = Tensor::empty(x.shape(), x.dtype(), x.device());
    dispatch::kernel<GeluMaskedBackwardKernel>(kernels::gelu_masked_backward, x.device())(x, valid, g, grad_in);
    return {grad_in};
  });
  return out;
}
Tensor sqrt(const Tensor& x) { return unary(kernels::sqrt, kernels::sqrt_backward, x); }
Tensor pow(const Tensor& x, double exponent) { return unary(kernels::pow, kernels::pow_backward, x, exponent); }

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  check_floating("broadcast_to", x);
  check(broadcast_shapes("broadcast_to", x.shape(), shape) == shape, "broadcast_to: ", x.shape(),
        " cannot be broadcast to ", shape);
  Tensor out = Tensor::empty(shape, x.dtype(), x.device());
  dispatch::kernel<BroadcastKernel>(kernels::broadcast_to, x.device())(x, out);
  record("broadcast_to", {x}, out, [shape_x = x.shape()](const Tensor& g) -> std::vector<Tensor> {
    return {sum_to(g, shape_x)};
  });
  return out;
}

// backward() sums the gradients of a tensor used more than once with add
// (engine/tensor_ops.h).
const bool tensor_ops_registered = [] {
  tensor_ops().add = static_cast<Tensor (*)(const Tensor&, const Tensor&)>(add);
  return true;
}();

}  // namespace hkt
