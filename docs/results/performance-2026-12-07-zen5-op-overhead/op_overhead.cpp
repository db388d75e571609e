// The fixed cost of an op on a tiny tensor (4 × 8 × 16 floats), where the
// kernel's work is negligible: what the library spends per call on checks,
// dispatch, allocation and the graph. Built against a build's libhkt.so:
//   g++ -O2 -std=c++20 -I<repo> op_overhead.cpp -L<build> -lhkt -Wl,-rpath,<build>
#include <chrono>
#include <cstdio>

#include "hkt.h"

using namespace hkt;

int main() {
  Generator generator(1);
  Tensor x = randn({4, 8, 16}, generator);
  x.requires_grad_(true);
  Tensor w = randn({16, 16}, generator);
  w.requires_grad_(true);
  Tensor b = Tensor::zeros({16});
  b.requires_grad_(true);
  Tensor ln_w = Tensor::ones({16});
  ln_w.requires_grad_(true);
  const int calls = 20000;
  auto per_call_us = [&](auto&& body) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) body();
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / calls;
  };
  for (int round = 0; round < 3; ++round) {
    const double add_us = per_call_us([&] { (void)add(x, x); });
    const double linear_us = per_call_us([&] { (void)linear(x, w, b); });
    const double layer_norm_us = per_call_us([&] { (void)layer_norm(x, ln_w, b, 1e-5); });
    const double step_us = per_call_us([&] { sum(linear(x, w, b)).backward(); });
    std::printf("add %.2f us, linear %.2f us, layer_norm %.2f us, linear + sum + backward %.2f us\n", add_us,
                linear_us, layer_norm_us, step_us);
  }
}
