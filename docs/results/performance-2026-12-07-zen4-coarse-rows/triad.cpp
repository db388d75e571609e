#include <chrono>
#include <cstdio>
#include <vector>
#include <omp.h>
int main() {
  for (size_t n : {size_t(1) << 20, size_t(1) << 22, size_t(1) << 24}) {
    std::vector<float> a(n, 1), b(n, 2), c(n, 3);
    for (int threads : {1, 2}) {
      omp_set_num_threads(threads);
      double best = 1e9;
      for (int rep = 0; rep < 20; ++rep) {
        auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel for
        for (size_t i = 0; i < n; ++i) c[i] = a[i] * 1.5f + b[i];
        auto t1 = std::chrono::steady_clock::now();
        best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
      }
      std::printf("n %zu MB %.0f threads %d: %.3f ms, %.1f GB/s\n", n, n * 12 / 1e6, threads, best * 1e3, n * 12 / best / 1e9);
    }
  }
}
