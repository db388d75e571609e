#include <cmath>

#include "tests/gradcheck.h"

using namespace hkt;
using hkt::testing::gradcheck;
using hkt::testing::max_abs_diff;
using hkt::testing::random_tensor;

TEST_CASE("dropout in eval mode or with p = 0 returns x and draws nothing") {
  Tensor x = random_tensor({3, 4}, 51);
  Generator generator(7);
  CHECK(dropout(x, 0.5, generator, /*training=*/false).impl() == x.impl());
  CHECK(dropout(x, 0.0, generator, /*training=*/true).impl() == x.impl());
  CHECK(generator.next_u64() == Generator(7).next_u64());
}

TEST_CASE("dropout keeps where uniform() >= p, in row-major order, and scales by 1/(1-p)") {
  for (double p : {0.1, 0.5, 0.9}) {
    INFO("p = " << p);
    Tensor x = random_tensor({4, 5, 3}, 52);
    Generator generator(8), stream(8);
    auto y = dropout(x, p, generator, true).to_vector<double>();
    auto v = x.to_vector<double>();
    for (size_t i = 0; i < v.size(); ++i) {
      const bool keep = stream.uniform() >= p;
      CHECK(y[i] == (keep ? v[i] * (1.0 / (1.0 - p)) : 0.0));
    }
    CHECK(generator.next_u64() == stream.next_u64());  // exactly one draw per element
  }
}

TEST_CASE("dropout: the kept fraction is 1 - p on a large tensor and the mean is preserved") {
  const int64_t n = 1 << 20;
  const double p = 0.3;
  Generator generator(9);
  auto y = dropout(Tensor::ones({n}), p, generator, true).to_vector<double>();
  int64_t kept = 0, wrongly_scaled = 0;
  double total = 0;
  for (double v : y) {
    kept += v != 0.0;
    wrongly_scaled += v != 0.0 && std::abs(v - 1.0 / (1.0 - p)) > 1e-6;
    total += v;
  }
  CHECK(wrongly_scaled == 0);
  // A binomial count: standard deviation sqrt(n p (1 − p)); allow 5 of them.
  const double sd = std::sqrt(n * p * (1 - p));
  CHECK(std::abs(static_cast<double>(kept) - n * (1 - p)) < 5 * sd);
  CHECK(std::abs(total / n - 1.0) < 5 * sd / n / (1 - p));
}

TEST_CASE("dropout: the same seed gives the same mask, another seed another") {
  Tensor x = random_tensor({64, 33}, 53, DType::Float32);
  Generator a(10), b(10), c(11);
  Tensor ya = dropout(x, 0.5, a, true), yb = dropout(x, 0.5, b, true), yc = dropout(x, 0.5, c, true);
  CHECK(max_abs_diff(ya, yb) == 0);
  CHECK(max_abs_diff(ya, yc) > 0);
  // The generator moved on: a second call draws a new mask.
  CHECK(max_abs_diff(dropout(x, 0.5, a, true), ya) > 0);
}

TEST_CASE("dropout: gradient is g * mask / (1 - p)") {
  for (Shape shape : {Shape{1}, Shape{7}, Shape{3, 5}, Shape{2, 1, 4}}) {
    INFO(shape_str(shape));
    // A fresh generator per call: every evaluation of f sees the same mask.
    gradcheck(
        [](const std::vector<Tensor>& in) {
          Generator generator(12);
          return dropout(in[0], 0.4, generator, true);
        },
        {random_tensor(shape, 54)});
  }
  Tensor x = random_tensor({10}, 55);
  x.requires_grad_(true);
  Generator generator(13);
  Tensor y = dropout(x, 0.25, generator, true);
  sum(y).backward();
  auto values = y.to_vector<double>(), grads = x.grad().to_vector<double>();
  for (size_t i = 0; i < values.size(); ++i) CHECK(grads[i] == (values[i] == 0.0 ? 0.0 : 1.0 / 0.75));
}

TEST_CASE("dropout rejects bad input with the op named") {
  Generator generator(14);
  Tensor x = Tensor::zeros({2, 3});
  REQUIRE_THROWS_WITH(dropout(x, 1.0, generator, true), "dropout: p must be in [0, 1), got 1");
  REQUIRE_THROWS_WITH(dropout(x, -0.1, generator, false), "dropout: p must be in [0, 1), got -0.1");
  REQUIRE_THROWS_WITH(dropout(Tensor::zeros({2}, DType::Int32), 0.5, generator, true),
                      "dropout: expected a float32 or float64 tensor, got int32[2]");
}
