#pragma once
// A depthwise convolution's weight [C, k] as [k, C], so that the channel loops
// of the CPU kernels read each tap's weights contiguously (ops/conv1d.cpp,
// ops/hybrid_mix.cpp).
#include <cstdint>
#include <vector>

namespace hkt {

template <class T>
std::vector<T> weight_by_tap(const T* weight, int64_t channels, int64_t k) {
  std::vector<T> taps(static_cast<size_t>(k * channels));
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t r = 0; r < k; ++r) taps[r * channels + c] = weight[c * k + r];
  return taps;
}

}  // namespace hkt
