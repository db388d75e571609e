#pragma once
// The CPU-vs-CUDA comparison behind tests/parity_ops.cpp and parity_model.cpp:
// run f on float32 CPU inputs and on copies of them on cuda:0, weight the
// outputs by fixed random weights, backpropagate, and compare the outputs and
// every input gradient within a per-op tolerance.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "hkt.h"
#include "tests/parity_util.h"

namespace hkt::testing {

// Under HKT_PARITY_DRY_RUN=1 (tests/parity_util.h) the CPU stands in for
// CUDA: the results agree trivially, but every test's own code (shapes,
// index values, options) runs, so a broken test is found without a GPU. It
// cannot find a tensor a test leaves on the CPU, so a function under test
// moves every tensor it captures to its inputs' device.
inline Device gpu() { return parity_dry_run() ? Device::cpu() : Device::cuda(0); }

// Largest |a − b| / (1 + |a|): absolute near zero, relative for large values.
inline double max_scaled_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double diff = std::fabs(a[i] - b[i]) / (1.0 + std::fabs(a[i]));
    if (!(diff <= worst)) worst = diff;  // a NaN difference is the worst
  }
  return worst;
}

inline void require_close(const std::string& what, const Tensor& cpu, const Tensor& cuda, double tolerance) {
  REQUIRE(cuda.device() == gpu());
  REQUIRE(cpu.shape() == cuda.shape());
  const double diff = max_scaled_diff(cpu.to_vector<double>(), cuda.to_vector<double>());
  INFO(what << " " << shape_str(cpu.shape()) << ": max |cpu - cuda| / (1 + |cpu|) = " << diff << ", tolerance "
            << tolerance);
  CHECK(diff <= tolerance);
}

using ParityFn = std::function<Tensor(const std::vector<Tensor>&)>;

// inputs live on the CPU; floating ones (float32) get gradients.
inline void check_parity(const std::string& op, const ParityFn& f, const std::vector<Tensor>& inputs,
                         double tolerance = 1e-5) {
  std::vector<Tensor> on_cpu, on_gpu;
  for (const Tensor& input : inputs) {
    Tensor a = input.detach().clone(), b = input.detach().to(gpu());
    if (is_floating(input.dtype())) {
      a.requires_grad_(true);
      b.requires_grad_(true);
    }
    on_cpu.push_back(a);
    on_gpu.push_back(b);
  }
  Tensor out_cpu = f(on_cpu);
  Tensor out_gpu = f(on_gpu);
  require_close(op + " forward", out_cpu, out_gpu, tolerance);
  if (!out_cpu.requires_grad()) return;
  Generator generator(99);
  Tensor weights = randn(out_cpu.shape(), generator);
  sum(mul(out_cpu, weights)).backward();
  sum(mul(out_gpu, weights.to(gpu()))).backward();
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!is_floating(inputs[i].dtype())) continue;
    REQUIRE(on_cpu[i].grad().defined() == on_gpu[i].grad().defined());
    if (on_cpu[i].grad().defined())
      require_close(op + " gradient of input " + std::to_string(i), on_cpu[i].grad(), on_gpu[i].grad(), tolerance);
  }
}

inline Tensor random_tensor(const Shape& shape, uint64_t seed, double low = -2.0, double high = 2.0) {
  Generator generator(seed);
  return rand_uniform(shape, generator, low, high);
}

}  // namespace hkt::testing

// First line of a parity test that can also run as a dry run (see above);
// tests of CUDA-only behaviour use HKT_REQUIRE_CUDA_OR_SKIP() itself.
#define HKT_PARITY_OR_SKIP()                                        \
  do {                                                              \
    if (!::hkt::testing::parity_dry_run()) HKT_REQUIRE_CUDA_OR_SKIP(); \
  } while (0)
