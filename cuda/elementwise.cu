// CUDA kernels of the elementwise ops (ops/elementwise.h): broadcasting
// binary ops, broadcast_to, and the unary ops with their backward. The scalar
// math is ops/elementwise_math.h, shared with the CPU kernels.
#include "cuda/kernel_util.cuh"
#include "engine/dispatch.h"
#include "ops/broadcast.h"
#include "ops/elementwise.h"
#include "ops/elementwise_math.h"

namespace hkt::cuda {
namespace {

// The op's name for error messages, e.g. "float64 on cuda:0" errors.
template <class Op> const char* name_of();
template <> const char* name_of<math::Add>() { return "add"; }
template <> const char* name_of<math::Sub>() { return "sub"; }
template <> const char* name_of<math::Mul>() { return "mul"; }
template <> const char* name_of<math::Div>() { return "div"; }
template <> const char* name_of<math::Neg>() { return "neg"; }
template <> const char* name_of<math::Exp>() { return "exp"; }
template <> const char* name_of<math::Log>() { return "log"; }
template <> const char* name_of<math::Tanh>() { return "tanh"; }
template <> const char* name_of<math::Sigmoid>() { return "sigmoid"; }
template <> const char* name_of<math::Relu>() { return "relu"; }
template <> const char* name_of<math::Gelu>() { return "gelu"; }
template <> const char* name_of<math::Sqrt>() { return "sqrt"; }
template <> const char* name_of<math::Pow>() { return "pow"; }

template <class Op>
__global__ void binary_kernel(const float* a, const float* b, float* out, int64_t n, StridedView view) {
  HKT_CUDA_LOOP(i, n) {
    int64_t offset_a, offset_b;
    strided_offsets(view, i, offset_a, offset_b);
    out[i] = Op::apply(a[offset_a], b[offset_b]);
  }
}

template <class Op>
void binary_cuda(const Tensor& a, const Tensor& b, Tensor& out) {
  const char* op = name_of<Op>();
  require_float32(op, a);
  require_float32(op, b);
  require_float32(op, out);
  const int64_t n = out.numel();
  if (n == 0) return;
  StridedView view = strided_view(op, out.shape(), broadcast_strides(a.shape(), out.shape()),
                                  broadcast_strides(b.shape(), out.shape()));
  binary_kernel<Op><<<blocks_for(n), kThreads, 0, stream_of(out)>>>(ptr(a), ptr(b), ptr(out), n, view);
  check_launch(op);
}

__global__ void broadcast_kernel(const float* x, float* out, int64_t n, StridedView view) {
  HKT_CUDA_LOOP(i, n) {
    int64_t offset, unused;
    strided_offsets(view, i, offset, unused);
    out[i] = x[offset];
  }
}

void broadcast_cuda(const Tensor& x, Tensor& out) {
  require_float32("broadcast_to", x);
  const int64_t n = out.numel();
  if (n == 0) return;
  auto strides = broadcast_strides(x.shape(), out.shape());
  StridedView view = strided_view("broadcast_to", out.shape(), strides, strides);
  broadcast_kernel<<<blocks_for(n), kThreads, 0, stream_of(out)>>>(ptr(x), ptr(out), n, view);
  check_launch("broadcast_to");
}

template <class Op>
__global__ void unary_kernel(const float* x, float* out, int64_t n, float param) {
  HKT_CUDA_LOOP(i, n) out[i] = Op::forward(x[i], param);
}

template <class Op>
__global__ void unary_backward_kernel(const float* x, const float* y, const float* g, float* grad_in, int64_t n,
                                      float param) {
  HKT_CUDA_LOOP(i, n) grad_in[i] = Op::backward(x[i], y[i], g[i], param);
}

template <class Op>
void unary_cuda(const Tensor& x, double param, Tensor& out) {
  require_float32(name_of<Op>(), x);
  const int64_t n = out.numel();
  if (n == 0) return;
  unary_kernel<Op><<<blocks_for(n), kThreads, 0, stream_of(out)>>>(ptr(x), ptr(out), n, static_cast<float>(param));
  check_launch(name_of<Op>());
}

template <class Op>
void unary_backward_cuda(const Tensor& x, const Tensor& y, const Tensor& grad_out, double param, Tensor& grad_in) {
  require_float32(name_of<Op>(), x);
  require_float32(name_of<Op>(), grad_out);
  const int64_t n = grad_in.numel();
  if (n == 0) return;
  unary_backward_kernel<Op><<<blocks_for(n), kThreads, 0, stream_of(grad_in)>>>(
      ptr(x), ptr(y), ptr(grad_out), ptr(grad_in), n, static_cast<float>(param));
  check_launch(name_of<Op>());
}

}  // namespace

HKT_REGISTER_KERNEL(kernels::add, DeviceType::CUDA, binary_cuda<math::Add>);
HKT_REGISTER_KERNEL(kernels::sub, DeviceType::CUDA, binary_cuda<math::Sub>);
HKT_REGISTER_KERNEL(kernels::mul, DeviceType::CUDA, binary_cuda<math::Mul>);
HKT_REGISTER_KERNEL(kernels::div, DeviceType::CUDA, binary_cuda<math::Div>);
HKT_REGISTER_KERNEL(kernels::broadcast_to, DeviceType::CUDA, broadcast_cuda);

#define HKT_REGISTER_UNARY_CUDA(name, Op)                                          \
  HKT_REGISTER_KERNEL(kernels::name, DeviceType::CUDA, unary_cuda<math::Op>); \
  HKT_REGISTER_KERNEL(kernels::name##_backward, DeviceType::CUDA, unary_backward_cuda<math::Op>)
HKT_REGISTER_UNARY_CUDA(neg, Neg);
HKT_REGISTER_UNARY_CUDA(exp, Exp);
HKT_REGISTER_UNARY_CUDA(log, Log);
HKT_REGISTER_UNARY_CUDA(tanh, Tanh);
HKT_REGISTER_UNARY_CUDA(sigmoid, Sigmoid);
HKT_REGISTER_UNARY_CUDA(relu, Relu);
HKT_REGISTER_UNARY_CUDA(gelu, Gelu);
HKT_REGISTER_UNARY_CUDA(sqrt, Sqrt);
HKT_REGISTER_UNARY_CUDA(pow, Pow);

}  // namespace hkt::cuda
