#pragma once
// Elementwise ops. Binary ops broadcast as NumPy and PyTorch do (shapes are
// aligned at the right; an extent of 1 stretches).
#include "engine/tensor.h"

namespace hkt {

Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);

Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor gelu(const Tensor& x);  // exact (erf) GELU
// gelu of x [B, T, C] with the rows of padded positions, t ≥ lengths[b], set
// to 0 and passed no gradient, at no cost there (the feed-forward of the
// models' fused blocks: fc2's GEMM then skips those rows). lengths: integers
// [B], each in [0, T]. On other devices than the CPU, gelu then masked_fill.
Tensor gelu_masked(const Tensor& x, const Tensor& lengths);
Tensor sqrt(const Tensor& x);
Tensor pow(const Tensor& x, double exponent);

// A scalar operand becomes a 0-d tensor of x's dtype and device.
Tensor add(const Tensor& a, double b);
Tensor mul(const Tensor& a, double b);

// Copies x to `shape` by broadcasting; the backward sums back (sum_to).
Tensor broadcast_to(const Tensor& x, const Shape& shape);
Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b);

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator-(const Tensor& x) { return neg(x); }
inline Tensor operator+(const Tensor& a, double b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, double b) { return add(a, -b); }
inline Tensor operator*(const Tensor& a, double b) { return mul(a, b); }
inline Tensor operator*(double a, const Tensor& b) { return mul(b, a); }
inline Tensor operator/(const Tensor& a, double b) { return mul(a, 1.0 / b); }

// ---- kernel names and signatures (shared by the CPU and CUDA registrations) ----

namespace kernels {  // the names they register under, declared once (ops/, cuda/ and the lookups use them)
inline constexpr const char* add = "add";
inline constexpr const char* sub = "sub";
inline constexpr const char* mul = "mul";
inline constexpr const char* div = "div";
inline constexpr const char* broadcast_to = "broadcast_to";
inline constexpr const char* neg = "neg";
inline constexpr const char* neg_backward = "neg_backward";
inline constexpr const char* exp = "exp";
inline constexpr const char* exp_backward = "exp_backward";
inline constexpr const char* log = "log";
inline constexpr const char* log_backward = "log_backward";
inline constexpr const char* tanh = "tanh";
inline constexpr const char* tanh_backward = "tanh_backward";
inline constexpr const char* sigmoid = "sigmoid";
inline constexpr const char* sigmoid_backward = "sigmoid_backward";
inline constexpr const char* relu = "relu";
inline constexpr const char* relu_backward = "relu_backward";
inline constexpr const char* gelu = "gelu";
inline constexpr const char* gelu_backward = "gelu_backward";
inline constexpr const char* gelu_masked = "gelu_masked";  // CPU only
inline constexpr const char* gelu_masked_backward = "gelu_masked_backward";
inline constexpr const char* sqrt = "sqrt";
inline constexpr const char* sqrt_backward = "sqrt_backward";
inline constexpr const char* pow = "pow";
inline constexpr const char* pow_backward = "pow_backward";
}  // namespace kernels

using BinaryKernel = void(const Tensor& a, const Tensor& b, Tensor& out);
using UnaryKernel = void(const Tensor& x, double param, Tensor& out);
using UnaryBackwardKernel = void(const Tensor& x, const Tensor& y, const Tensor& grad_out, double param,
                                 Tensor& grad_in);
using BroadcastKernel = void(const Tensor& x, Tensor& out);
// x, out, grad_out, grad_in [B, T, C]; lengths int64 [B] on the CPU.
using GeluMaskedKernel = void(const Tensor& x, const Tensor& lengths, Tensor& out);
using GeluMaskedBackwardKernel = void(const Tensor& x, const Tensor& lengths, const Tensor& grad_out, Tensor& grad_in);

}  // namespace hkt
