#pragma once
// Test helpers: a float64 finite-difference gradient check (as PyTorch's
// gradcheck and ggml's gradient mode) and small tensor comparisons.
//
// gradcheck(f, inputs) forms loss = Σ f(inputs) ⊙ w with fixed random weights
// w (so every output element matters with a different weight), takes the
// analytic gradient by backward(), and compares every coordinate of every
// floating input (a sample of them for large inputs) with the central
// difference (loss(x + ε) − loss(x − ε)) / 2ε.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <functional>
#include <vector>

#include "hkt.h"

namespace hkt::testing {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-7;
  double rtol = 1e-5;
  int64_t max_coordinates = 400;  // per input; larger inputs are sampled
  uint64_t seed = 1234;
};

inline double weighted_loss(const Tensor& output, const Tensor& weights) {
  return sum(mul(output, weights)).item();
}

inline void gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& f, std::vector<Tensor> inputs,
                      GradcheckOptions options = {}) {
  for (Tensor& input : inputs)
    if (is_floating(input.dtype())) {
      REQUIRE(input.dtype() == DType::Float64);
      input.requires_grad_(true);
      input.zero_grad();  // callers may reuse the same leaves across checks
    }
  Generator generator(options.seed);
  Tensor output = f(inputs);
  Tensor weights = randn(output.shape(), generator, DType::Float64);
  sum(mul(output, weights)).backward();

  for (size_t which = 0; which < inputs.size(); ++which) {
    Tensor& input = inputs[which];
    if (!is_floating(input.dtype())) continue;
    Tensor analytic = input.grad();
    std::vector<double> analytic_values =
        analytic.defined() ? analytic.to_vector<double>() : std::vector<double>(input.numel(), 0.0);
    double* data = input.data<double>();
    const int64_t n = input.numel();
    const int64_t step = n > options.max_coordinates ? n / options.max_coordinates + 1 : 1;
    NoGradGuard no_grad;
    for (int64_t i = 0; i < n; i += step) {
      const double saved = data[i];
      data[i] = saved + options.eps;
      double plus = weighted_loss(f(inputs), weights);
      data[i] = saved - options.eps;
      double minus = weighted_loss(f(inputs), weights);
      data[i] = saved;
      double numeric = (plus - minus) / (2 * options.eps);
      double error = std::abs(numeric - analytic_values[i]);
      INFO("input " << which << " " << input.str() << " coordinate " << i << ": analytic " << analytic_values[i]
                    << " numeric " << numeric);
      CHECK(error <= options.atol + options.rtol * std::abs(numeric));
    }
  }
}

// The same check for the parameters of a float64 module: d loss / d p at
// `per_parameter` random coordinates of every parameter.
inline void gradcheck_module(Module& module, const std::function<Tensor()>& loss_fn, int per_parameter = 2,
                             GradcheckOptions options = {}) {
  module.zero_grad();
  loss_fn().backward();
  Generator pick(options.seed);
  NoGradGuard no_grad;
  for (auto& [name, parameter] : module.named_parameters()) {
    REQUIRE(parameter.dtype() == DType::Float64);
    Tensor analytic = parameter.grad();
    double* data = parameter.data<double>();
    for (int sample = 0; sample < per_parameter; ++sample) {
      const int64_t i = static_cast<int64_t>(pick.next_u64() % static_cast<uint64_t>(parameter.numel()));
      const double saved = data[i];
      data[i] = saved + options.eps;
      double plus = loss_fn().item();
      data[i] = saved - options.eps;
      double minus = loss_fn().item();
      data[i] = saved;
      double numeric = (plus - minus) / (2 * options.eps);
      double value = analytic.defined() ? analytic.to_vector<double>()[static_cast<size_t>(i)] : 0.0;
      INFO(name << " " << parameter.str() << " coordinate " << i << ": analytic " << value << " numeric " << numeric);
      CHECK(std::abs(numeric - value) <= options.atol + options.rtol * std::abs(numeric));
    }
  }
}

inline Tensor random_tensor(const Shape& shape, uint64_t seed, DType dtype = DType::Float64) {
  Generator generator(seed);
  return randn(shape, generator, dtype);
}

// Max |a - b| over elements; shapes must match.
inline double max_abs_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  double worst = 0;
  for (size_t i = 0; i < va.size(); ++i) worst = std::max(worst, std::abs(va[i] - vb[i]));
  return worst;
}

inline double max_abs_diff(const Tensor& a, const std::vector<double>& expected) {
  auto va = a.to_vector<double>();
  REQUIRE(va.size() == expected.size());
  double worst = 0;
  for (size_t i = 0; i < va.size(); ++i) worst = std::max(worst, std::abs(va[i] - expected[i]));
  return worst;
}

// int64 [B] lengths, as the classifiers and the attention ops take them.
inline Tensor lengths_tensor(const std::vector<int64_t>& lengths) {
  return Tensor::from_vector<int64_t>(lengths, {static_cast<int64_t>(lengths.size())});
}

// [B, T, 1] float64, 1 at positions t < lengths[b] and 0 at the padded ones:
// the composed form (x ⊙ mask) the ops that skip padded rows are tested against.
inline Tensor valid_rows_mask(const std::vector<int64_t>& lengths, int64_t length) {
  const int64_t batch = static_cast<int64_t>(lengths.size());
  std::vector<double> keep(static_cast<size_t>(batch * length), 0.0);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < lengths[b]; ++t) keep[b * length + t] = 1.0;
  return Tensor::from_doubles(keep, {batch, length, 1}, DType::Float64);
}

// max |a − b| / max |b|, the denominator at least 0.01: some gradients are
// exactly 0 in theory (one valid key) and rounding-small in both.
inline double relative_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.defined());
  REQUIRE(b.defined());
  double scale = 0;
  for (double x : b.to_vector<double>()) scale = std::max(scale, std::abs(x));
  return max_abs_diff(a, b) / std::max(scale, 1e-2);
}

// CHECKs max |actual − expected| / max |expected| ≤ tolerance, on the CPU in
// float64, the denominator at least 0.1: gradients that are zero in theory
// (a single key: P = 1, dS = 0) are float32 rounding noise on both sides. A
// NaN in actual fails. Prints both numbers on failure.
inline void check_close(const std::string& what, const Tensor& actual, const Tensor& expected, double tolerance) {
  const auto a = actual.to(Device::cpu()).to(DType::Float64).to_vector<double>();
  const auto e = expected.to(Device::cpu()).to(DType::Float64).to_vector<double>();
  REQUIRE(a.size() == e.size());
  double scale = 0.1, worst = 0;
  for (size_t n = 0; n < e.size(); ++n) {
    scale = std::max(scale, std::abs(e[n]));
    worst = std::max(worst, std::isnan(a[n]) ? INFINITY : std::abs(a[n] - e[n]));
  }
  const double diff = worst / scale;
  INFO(what << ": relative difference " << diff << ", tolerance " << tolerance);
  CHECK(diff <= tolerance);
}

}  // namespace hkt::testing
