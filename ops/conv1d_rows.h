#pragma once
// What the depthwise convolution's CPU kernels share (ops/conv1d.cpp,
// ops/hybrid_mix.cpp): the weight laid out by tap, and one output row.
#include <algorithm>
#include <cstdint>
#include <vector>

namespace hkt {

// weight [C, k] as [k, C], so that the channel loops read each tap's weights contiguously.
template <class T>
std::vector<T> weight_by_tap(const T* weight, int64_t channels, int64_t k) {
  std::vector<T> taps(static_cast<size_t>(k * channels));
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t r = 0; r < k; ++r) taps[r * channels + c] = weight[c * k + r];
  return taps;
}

// y[c] = bias[c] + Σ_r taps[r, c] · x[t0 + r, c] over the taps whose input row
// lies in [0, length), r ascending; x is one sequence's [length, C] rows and
// bias may be null.
template <class T>
void conv_row(const T* x, int64_t length, int64_t t0, int64_t C, int64_t k, const T* taps, const T* bias, T* y) {
  for (int64_t c = 0; c < C; ++c) y[c] = bias ? bias[c] : T(0);
  for (int64_t r = std::max<int64_t>(0, -t0); r < std::min(k, length - t0); ++r) {
    const T* x_row = x + (t0 + r) * C;
    const T* w = taps + r * C;
    for (int64_t c = 0; c < C; ++c) y[c] += w[c] * x_row[c];
  }
}

}  // namespace hkt
