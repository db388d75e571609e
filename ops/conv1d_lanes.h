#pragma once
// The hybrid head's mix (ops/hybrid_mix.cpp) a vector of channels at a time:
// GCC vector types of 64 bytes (one zmm with AVX-512, two ymm with AVX2,
// four xmm otherwise) and the taps a template constant, so a row's work is
// straight-line vector code. conv_row's loops ran a short channel loop per
// tap and per term, and at C = 64 their overhead was most of the mix's
// backward (about 550 cycles a row for about 70 vector operations of work).
// The strided convolutions (3 taps) gained nothing from the same rows, so
// ops/conv1d.cpp keeps its loops (docs/PERFORMANCE.md).
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

// Everything here is inlined whole, so no vector crosses a call: GCC's note
// that returning a 64-byte vector without AVX-512 changes the ABI does not
// apply. It is reported where templates are instantiated, at the end of the
// including file, so the pragma cannot be popped; only ops/hybrid_mix.cpp
// includes this header.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace hkt::lanes {

template <class T>
struct Line {
  static constexpr int64_t kWidth = 64 / static_cast<int64_t>(sizeof(T));  // channels per vector
  typedef T V __attribute__((vector_size(64)));
};
template <class T>
using Vec = typename Line<T>::V;

template <class T>
[[gnu::always_inline]] inline Vec<T> load(const T* p) {
  Vec<T> v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class T>
[[gnu::always_inline]] inline void store(T* p, const Vec<T>& v) {
  std::memcpy(p, &v, sizeof v);
}
template <class T>
[[gnu::always_inline]] inline Vec<T> splat(T x) {
  return Vec<T>{} + x;
}

// The taps the vector kernels are instantiated for; wider kernels take the
// row-at-a-time loops.
constexpr int kMaxTaps = 8;

// Whether the lane kernels serve a problem: whole vectors of channels, at
// most kMaxTaps taps.
template <class T>
bool fits(int64_t C, int64_t k) {
  return C % Line<T>::kWidth == 0 && k >= 1 && k <= kMaxTaps;
}

// conv_row's sum (ops/conv1d_rows.h) for channels [c0, c0 + width): the
// bias, then the taps whose input row t0 + r lies in [0, length), r
// ascending. x is one sequence's [length, C] rows; bias may be null.
template <class T, int K>
[[gnu::always_inline]] inline Vec<T> conv_sum(const T* x, int64_t length, int64_t t0, int64_t C, int64_t c0,
                                              const T* taps, const T* bias) {
  Vec<T> sum = bias ? load(bias + c0) : Vec<T>{};
#pragma GCC unroll 8
  for (int r = 0; r < K; ++r)
    if (t0 + r >= 0 && t0 + r < length) sum += load(taps + r * C + c0) * load(x + (t0 + r) * C + c0);
  return sum;
}

// Calls f(std::integral_constant<int, k>{}) for the run-time k in 1 … kMaxTaps
// (fits), nothing otherwise.
template <class F>
void with_taps(int64_t k, F&& f) {
  [&]<int... R>(std::integer_sequence<int, R...>) {
    (void)((k == R + 1 ? (f(std::integral_constant<int, R + 1>{}), true) : false) || ...);
  }(std::make_integer_sequence<int, kMaxTaps>{});
}

}  // namespace hkt::lanes
