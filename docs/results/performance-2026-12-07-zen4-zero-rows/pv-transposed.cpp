// P·V of one forward tile (128 query rows × dh = 16, depth 128 keys) as the kernel computes it, one
// vector wide, against (P·V)ᵀ = Vᵀ·Pᵀ as gemm_few_rows computes dVᵀ: is the narrow product slow here?
// g++ -O2 -std=c++20 -mavx512f -mavx2 -mfma -I. docs/results/performance-2026-12-07-zen4-zero-rows/pv-transposed.cpp
#include <chrono>
#include <cstdio>
#include <vector>
#include <algorithm>
#include "ops/attention_simd.h"
using namespace hkt::attention_cpu;
int main() {
  const int rows = 128, keys = 128, dh = 16;
  std::vector<float> P(rows * keys), Pt(keys * rows), V(keys * 64), O(rows * dh), Ot(dh * rows);
  for (size_t i = 0; i < P.size(); ++i) P[i] = (i % 7) * 0.1f;
  for (int i = 0; i < rows; ++i) for (int k = 0; k < keys; ++k) Pt[k * rows + i] = P[i * keys + k];
  for (size_t i = 0; i < V.size(); ++i) V[i] = (i % 5) * 0.2f;
  const int64_t rs = 64;  // V rows 64 floats apart (BTHD, 4 heads)
  for (int trial = 0; trial < 3; ++trial) {
    double best[2] = {1e9, 1e9};
    for (int rep = 0; rep < 200; ++rep) {
      auto t0 = std::chrono::steady_clock::now();
      for (int it = 0; it < 100; ++it)
        gemm<Avx512>(rows, dh, keys, {P.data(), keys, 1}, V.data(), rs, O.data(), dh, 1.0f, true);
      auto t1 = std::chrono::steady_clock::now();
      for (int it = 0; it < 100; ++it)
        gemm_few_rows<Avx512>(dh, rows, keys, {V.data(), 1, rs}, Pt.data(), rows, Ot.data(), rows, 1.0f);
      auto t2 = std::chrono::steady_clock::now();
      best[0] = std::min(best[0], std::chrono::duration<double>(t1 - t0).count() / 100);
      best[1] = std::min(best[1], std::chrono::duration<double>(t2 - t1).count() / 100);
    }
    const double flops = 2.0 * rows * keys * dh;
    std::printf("one vector wide %.2f us %.1f GFLOP/s   few rows %.2f us %.1f GFLOP/s  ratio %.2f\n", best[0] * 1e6,
                flops / best[0] * 1e-9, best[1] * 1e6, flops / best[1] * 1e-9, best[0] / best[1]);
  }
  // same result?
  double diff = 0;
  for (int i = 0; i < rows; ++i) for (int d = 0; d < dh; ++d) diff = std::max(diff, (double)std::abs(O[i * dh + d] - Ot[d * rows + i]));
  std::printf("max diff %g\n", diff);
}
