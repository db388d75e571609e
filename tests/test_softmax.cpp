#include <cmath>
#include <limits>

#include "tests/gradcheck.h"

using namespace hkt;
using hkt::testing::gradcheck;
using hkt::testing::max_abs_diff;
using hkt::testing::random_tensor;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Plain-loop softmax / log_softmax along `axis`, in double, the obvious way
// (max subtracted; an all -inf row gives 0 / -inf as softmax.h documents).
std::vector<double> softmax_reference(const Tensor& x, int64_t axis, bool log) {
  auto v = x.to_vector<double>();
  const Shape& shape = x.shape();
  if (axis < 0) axis += x.dim();
  int64_t outer = 1, extent = shape[axis], inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= shape[i];
  for (int64_t i = axis + 1; i < x.dim(); ++i) inner *= shape[i];
  std::vector<double> out(v.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return (o * extent + k) * inner + i; };
      double m = -kInf;
      for (int64_t k = 0; k < extent; ++k) m = std::max(m, v[at(k)]);
      if (m == -kInf) {
        for (int64_t k = 0; k < extent; ++k) out[at(k)] = log ? -kInf : 0.0;
        continue;
      }
      double total = 0;
      for (int64_t k = 0; k < extent; ++k) total += std::exp(v[at(k)] - m);
      for (int64_t k = 0; k < extent; ++k)
        out[at(k)] = log ? v[at(k)] - m - std::log(total) : std::exp(v[at(k)] - m) / total;
    }
  return out;
}

struct Case {
  Shape shape;
  int64_t axis;
};
const std::vector<Case> kCases = {
    {{5}, 0},       {{3, 4}, 0},    {{3, 4}, 1},  {{3, 4}, -1}, {{2, 3, 4}, 0}, {{2, 3, 4}, 1},
    {{2, 3, 4}, 2}, {{4, 1}, 1},    {{1, 1}, 0},  {{1, 6}, 1},  {{2, 1, 3}, 1},
};

}  // namespace

TEST_CASE("softmax and log_softmax match a plain-loop reference") {
  for (const Case& c : kCases) {
    INFO(shape_str(c.shape) << " axis " << c.axis);
    Tensor x = random_tensor(c.shape, 11);
    CHECK(max_abs_diff(softmax(x, c.axis), softmax_reference(x, c.axis, false)) < 1e-15);
    CHECK(max_abs_diff(log_softmax(x, c.axis), softmax_reference(x, c.axis, true)) < 1e-14);
  }
}

TEST_CASE("softmax rows sum to one, also on many threads in float32") {
  Tensor x = random_tensor({64, 1024}, 12, DType::Float32);
  for (int64_t axis : {0, 1}) {
    Tensor y = softmax(x, axis);
    CHECK(max_abs_diff(y, softmax_reference(x, axis, false)) < 1e-6);
    CHECK(max_abs_diff(log_softmax(x, axis), softmax_reference(x, axis, true)) < 1e-4);
    Tensor totals = sum(y, axis);
    CHECK(max_abs_diff(totals, Tensor::ones(totals.shape())) < 1e-5);
  }
}

TEST_CASE("softmax and log_softmax: gradients over shapes and axes") {
  for (const Case& c : kCases) {
    INFO(shape_str(c.shape) << " axis " << c.axis);
    Tensor x = random_tensor(c.shape, 13);
    gradcheck([&](const std::vector<Tensor>& in) { return softmax(in[0], c.axis); }, {x});
    gradcheck([&](const std::vector<Tensor>& in) { return log_softmax(in[0], c.axis); }, {x});
  }
}

TEST_CASE("softmax is stable for large inputs") {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    Tensor x = Tensor::from_doubles({1000, -1000, 0, 1000, 1000, -1000}, {2, 3}, dtype);
    auto y = softmax(x, 1).to_vector<double>();
    auto log_y = log_softmax(x, 1).to_vector<double>();
    for (double v : y) CHECK(std::isfinite(v));
    CHECK(y[0] == 1.0);
    CHECK(y[1] == 0.0);
    CHECK(y[3] == 0.5);
    CHECK(y[4] == 0.5);
    CHECK(log_y[0] == 0.0);
    CHECK(log_y[1] == -2000.0);
    CHECK(log_y[2] == -1000.0);
    // m + log Σ exp(x − m) rounds at the scale of 1000: an ulp is 6e-5 in float32.
    const double tolerance = dtype == DType::Float32 ? 1e-4 : 1e-12;
    CHECK(std::abs(log_y[3] - std::log(0.5)) < tolerance);
    CHECK(std::abs(log_y[5] - (-2000.0 - std::log(2.0))) < 2 * tolerance);
  }
  Tensor large = Tensor::from_doubles({1000, 999, -1000, 1000, 1000.5, -1000}, {2, 3}, DType::Float64);
  gradcheck([](const std::vector<Tensor>& in) { return softmax(in[0], 1); }, {large});
  // Outputs near -2000 cost the finite difference about 1e-7 of rounding.
  gradcheck([](const std::vector<Tensor>& in) { return log_softmax(in[0], 1); }, {large}, {.atol = 1e-6});
}

TEST_CASE("softmax: -inf entries (masked keys) get weight and gradient zero") {
  // Row 0 partly masked, row 1 free; the mask enters as a constant bias.
  Tensor bias = Tensor::from_doubles({0, -kInf, 0, -kInf, 0, 0, 0, 0}, {2, 4}, DType::Float64);
  Tensor x = random_tensor({2, 4}, 14);
  Tensor masked = add(x, bias);
  auto y = softmax(masked, 1).to_vector<double>();
  CHECK(y[1] == 0.0);
  CHECK(y[3] == 0.0);
  CHECK(std::abs(y[0] + y[2] - 1.0) < 1e-15);
  CHECK(max_abs_diff(softmax(masked, 1), softmax_reference(masked, 1, false)) < 1e-15);
  CHECK(max_abs_diff(log_softmax(masked, 1), softmax_reference(masked, 1, true)) < 1e-14);
  gradcheck([&](const std::vector<Tensor>& in) { return softmax(add(in[0], bias), 1); }, {x});
  // log_softmax of a masked entry is -inf; check the finite entries only.
  gradcheck([&](const std::vector<Tensor>& in) { return slice(log_softmax(add(in[0], bias), 1), 0, 1, 2); }, {x});
}

TEST_CASE("softmax: a fully masked row gives zeros and a zero gradient, not NaN") {
  for (bool log : {false, true}) {
    INFO((log ? "log_softmax" : "softmax"));
    Tensor x = Tensor::from_doubles({-kInf, -kInf, -kInf, 0.5, -1, 2}, {2, 3}, DType::Float64);
    x.requires_grad_(true);
    Tensor y = log ? log_softmax(x, 1) : softmax(x, 1);
    auto values = y.to_vector<double>();
    for (int k = 0; k < 3; ++k) CHECK(values[k] == (log ? -kInf : 0.0));
    CHECK(max_abs_diff(y, softmax_reference(x, 1, log)) < 1e-15);
    y.backward(Tensor::from_doubles({1, 2, 3, 0.5, -1, 0.25}, {2, 3}, DType::Float64));
    auto grad = x.grad().to_vector<double>();
    for (int k = 0; k < 3; ++k) CHECK(grad[k] == 0.0);
    for (int k = 3; k < 6; ++k) CHECK(std::isfinite(grad[k]));
  }
  Tensor bias = Tensor::from_doubles({-kInf, -kInf, -kInf, 0, 0, 0}, {2, 3}, DType::Float64);
  gradcheck([&](const std::vector<Tensor>& in) { return softmax(add(in[0], bias), 1); },
            {random_tensor({2, 3}, 15)});
  // Masked along axis 0 as well: column 1 is fully masked.
  Tensor column_bias = Tensor::from_doubles({0, -kInf, 0, -kInf}, {2, 2}, DType::Float64);
  Tensor column_masked = add(random_tensor({2, 2}, 16), column_bias);
  CHECK(max_abs_diff(softmax(column_masked, 0), softmax_reference(column_masked, 0, false)) < 1e-15);
}

TEST_CASE("softmax rejects bad input with the op and shapes named") {
  REQUIRE_THROWS_WITH(softmax(Tensor::zeros({3, 4}), 2), "softmax: axis 2 out of range for shape [3, 4]");
  REQUIRE_THROWS_WITH(log_softmax(Tensor::zeros({3, 4}), -3), "log_softmax: axis -3 out of range for shape [3, 4]");
  REQUIRE_THROWS_WITH(log_softmax(Tensor::zeros({2}, DType::Int64), 0),
                      "log_softmax: expected a float32 or float64 tensor, got int64[2]");
  REQUIRE_THROWS_WITH(softmax(Tensor(), 0), "softmax: input is an undefined tensor");
}

TEST_CASE("softmax on an empty tensor gives an empty result") {
  CHECK(softmax(Tensor::zeros({0, 3}), 1).shape() == Shape{0, 3});
  CHECK(log_softmax(Tensor::zeros({2, 0}), 1).numel() == 0);
}
