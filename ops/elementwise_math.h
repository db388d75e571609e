#pragma once
// The scalar math of the elementwise ops, shared by the CPU kernels and the
// CUDA kernels (hence HKT_HOST_DEVICE). Unary ops give forward(x, p) and the
// local derivative as backward(x, y, g, p) = g · dy/dx, with y = forward(x, p)
// and p the op's scalar parameter (the exponent of pow; unused by the others).
#include <cmath>

#ifdef __CUDACC__
#define HKT_HOST_DEVICE __host__ __device__
#else
#define HKT_HOST_DEVICE
#endif

namespace hkt::math {

struct Add { template <class T> HKT_HOST_DEVICE static T apply(T a, T b) { return a + b; } };
struct Sub { template <class T> HKT_HOST_DEVICE static T apply(T a, T b) { return a - b; } };
struct Mul { template <class T> HKT_HOST_DEVICE static T apply(T a, T b) { return a * b; } };
struct Div { template <class T> HKT_HOST_DEVICE static T apply(T a, T b) { return a / b; } };

struct Neg {
  template <class T> HKT_HOST_DEVICE static T forward(T x, T) { return -x; }
  template <class T> HKT_HOST_DEVICE static T backward(T, T, T g, T) { return -g; }
};
struct Exp {
  template <class T> HKT_HOST_DEVICE static T forward(T x, T) { return std::exp(x); }
  template <class T> HKT_HOST_DEVICE static T backward(T, T y, T g, T) { return g * y; }
};
struct Log {
  template <class T> HKT_HOST_DEVICE static T forward(T x, T) { return std::log(x); }
  template <class T> HKT_HOST_DEVICE static T backward(T x, T, T g, T) { return g / x; }
};
struct Tanh {
  template <class T> HKT_HOST_DEVICE static T forward(T x, T) { return std::tanh(x); }
  template <class T> HKT_HOST_DEVICE static T backward(T, T y, T g, T) { return g * (T(1) - y * y); }
};
struct Sigmoid {
  // Split by sign so that exp never overflows.
  template <class T> HKT_HOST_DEVICE static T forward(T x, T) {
    if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
    T e = std::exp(x);
    return e / (T(1) + e);
  }
  template <class T> HKT_HOST_DEVICE static T backward(T, T y, T g, T) { return g * y * (T(1) - y); }
};
struct Relu {
  template <class T> HKT_HOST_DEVICE static T forward(T x, T) { return x > T(0) ? x : T(0); }
  template <class T> HKT_HOST_DEVICE static T backward(T x, T, T g, T) { return x > T(0) ? g : T(0); }
};
// Exact GELU: x Φ(x) with Φ the standard normal CDF (SPEC section 2).
struct Gelu {
  template <class T> HKT_HOST_DEVICE static T forward(T x, T) {
    return T(0.5) * x * (T(1) + std::erf(x * T(0.70710678118654752440)));
  }
  template <class T> HKT_HOST_DEVICE static T backward(T x, T, T g, T) {
    T cdf = T(0.5) * (T(1) + std::erf(x * T(0.70710678118654752440)));
    T pdf = T(0.39894228040143267794) * std::exp(T(-0.5) * x * x);
    return g * (cdf + x * pdf);
  }
};
struct Sqrt {
  template <class T> HKT_HOST_DEVICE static T forward(T x, T) { return std::sqrt(x); }
  template <class T> HKT_HOST_DEVICE static T backward(T, T y, T g, T) { return g * T(0.5) / y; }
};
struct Pow {
  template <class T> HKT_HOST_DEVICE static T forward(T x, T p) { return std::pow(x, p); }
  template <class T> HKT_HOST_DEVICE static T backward(T x, T, T g, T p) {
    return p == T(0) ? T(0) : g * p * std::pow(x, p - T(1));
  }
};

}  // namespace hkt::math
