#include <cmath>

#include "engine/dispatch.h"
#include "engine/profiler.h"
#include "ops/reduce.h"
#include "tests/gradcheck.h"

using namespace hkt;
using hkt::testing::gradcheck;
using hkt::testing::max_abs_diff;
using hkt::testing::random_tensor;

namespace {

// Plain-loop reference of a broadcast binary op.
std::vector<double> broadcast_reference(const Tensor& a, const Tensor& b, const Shape& out,
                                        double (*op)(double, double)) {
  auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  std::vector<double> result(static_cast<size_t>(shape_numel(out)));
  const size_t rank = out.size();
  for (int64_t index = 0; index < shape_numel(out); ++index) {
    int64_t rest = index, ia = 0, ib = 0, stride_a = 1, stride_b = 1;
    for (size_t k = 0; k < rank; ++k) {
      size_t axis = rank - 1 - k;
      int64_t coordinate = rest % out[axis];
      rest /= out[axis];
      if (k < a.shape().size()) {
        int64_t extent = a.shape()[a.shape().size() - 1 - k];
        ia += (extent == 1 ? 0 : coordinate) * stride_a;
        stride_a *= extent;
      }
      if (k < b.shape().size()) {
        int64_t extent = b.shape()[b.shape().size() - 1 - k];
        ib += (extent == 1 ? 0 : coordinate) * stride_b;
        stride_b *= extent;
      }
    }
    result[index] = op(va[ia], vb[ib]);
  }
  return result;
}

const std::vector<std::pair<Shape, Shape>> kBroadcastCases = {
    {{3}, {3}}, {{2, 3}, {3}}, {{2, 1, 4}, {3, 1}}, {{1}, {5, 2}}, {{}, {2, 3}}, {{4, 1}, {1, 5}}, {{1, 7}, {1, 7}},
};

}  // namespace

TEST_CASE("binary ops match a plain-loop broadcast reference") {
  for (auto [sa, sb] : kBroadcastCases) {
    Tensor a = random_tensor(sa, 1), b = add(random_tensor(sb, 2), 3.0);  // b away from 0 for div
    Shape out = broadcast_shapes("test", sa, sb);
    INFO(shape_str(sa) << " with " << shape_str(sb));
    CHECK(max_abs_diff(add(a, b), broadcast_reference(a, b, out, [](double x, double y) { return x + y; })) == 0);
    CHECK(max_abs_diff(sub(a, b), broadcast_reference(a, b, out, [](double x, double y) { return x - y; })) == 0);
    CHECK(max_abs_diff(mul(a, b), broadcast_reference(a, b, out, [](double x, double y) { return x * y; })) == 0);
    CHECK(max_abs_diff(div(a, b), broadcast_reference(a, b, out, [](double x, double y) { return x / y; })) < 1e-15);
  }
}

TEST_CASE("binary ops: gradients over broadcast shapes") {
  for (auto [sa, sb] : kBroadcastCases) {
    INFO(shape_str(sa) << " with " << shape_str(sb));
    Tensor a = random_tensor(sa, 3), b = add(random_tensor(sb, 4), 3.0).detach();
    gradcheck([](const std::vector<Tensor>& x) { return add(x[0], x[1]); }, {a, b});
    gradcheck([](const std::vector<Tensor>& x) { return sub(x[0], x[1]); }, {a, b});
    gradcheck([](const std::vector<Tensor>& x) { return mul(x[0], x[1]); }, {a, b});
    gradcheck([](const std::vector<Tensor>& x) { return div(x[0], x[1]); }, {a, b});
  }
}

TEST_CASE("unary ops match std:: math and pass gradcheck") {
  struct Case {
    const char* name;
    Tensor (*op)(const Tensor&);
    double (*reference)(double);
    bool positive_only;
  };
  const Case cases[] = {
      {"neg", [](const Tensor& x) { return neg(x); }, [](double x) { return -x; }, false},
      {"exp", [](const Tensor& x) { return exp(x); }, [](double x) { return std::exp(x); }, false},
      {"log", [](const Tensor& x) { return log(x); }, [](double x) { return std::log(x); }, true},
      {"tanh", [](const Tensor& x) { return tanh(x); }, [](double x) { return std::tanh(x); }, false},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, [](double x) { return 1 / (1 + std::exp(-x)); }, false},
      {"relu", [](const Tensor& x) { return relu(x); }, [](double x) { return x > 0 ? x : 0.0; }, false},
      {"gelu", [](const Tensor& x) { return gelu(x); },
       [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, false},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }, [](double x) { return std::sqrt(x); }, true},
      {"pow", [](const Tensor& x) { return pow(x, 2.5); }, [](double x) { return std::pow(x, 2.5); }, true},
  };
  for (const Case& c : cases) {
    for (Shape shape : {Shape{1}, Shape{7}, Shape{3, 5}, Shape{2, 1, 3}}) {
      INFO(c.name << " on " << shape_str(shape));
      Tensor x = random_tensor(shape, 5);
      if (c.positive_only) x = add(exp(x), 0.1);  // keep log/sqrt/pow in their domain
      auto values = x.to_vector<double>();
      std::vector<double> expected;
      for (double v : values) expected.push_back(c.reference(v));
      CHECK(max_abs_diff(c.op(x), expected) < 1e-14);
      gradcheck([&](const std::vector<Tensor>& in) { return c.op(in[0]); }, {x.detach()});
    }
  }
}

TEST_CASE("lerp equals start + weight · (end − start) with a broadcast weight, and passes gradcheck") {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{3, 5}, {3, 5}}, {{2, 3, 4}, {4}}, {{2, 3, 4}, {3, 1}}, {{5}, {}}, {{2, 1, 3}, {1, 1, 1}}, {{4, 70}, {70}}};
  uint64_t seed = 60;
  for (const auto& [shape, weight_shape] : cases) {
    INFO(shape_str(shape) << " with weight " << shape_str(weight_shape));
    Tensor start = random_tensor(shape, seed++), end = random_tensor(shape, seed++);
    Tensor weight = random_tensor(weight_shape, seed++);
    CHECK(max_abs_diff(lerp(start, end, weight), add(start, mul(weight, sub(end, start))).to_vector<double>()) < 1e-14);
    gradcheck([](const std::vector<Tensor>& x) { return lerp(x[0], x[1], x[2]); }, {start, end, weight});
  }
  // Gradients only for the inputs that want them; the others stay undefined.
  Tensor start = random_tensor({2, 3}, 1).requires_grad_(true), end = random_tensor({2, 3}, 2);
  Tensor weight = random_tensor({3}, 3).requires_grad_(true);
  lerp(start, end, weight).backward(Tensor::ones({2, 3}, DType::Float64));
  CHECK(start.grad().defined());
  CHECK(weight.grad().defined());
  CHECK_FALSE(end.grad().defined());
  CHECK(max_abs_diff(start.grad(), sub(Tensor::ones({2, 3}, DType::Float64), broadcast_to(weight, {2, 3})).to_vector<double>()) < 1e-15);

  CHECK_THROWS_WITH(lerp(start, random_tensor({3, 2}, 4), weight),
                    Catch::Contains("lerp: start [2, 3] and end [3, 2] differ"));
  CHECK_THROWS_WITH(lerp(start, end, random_tensor({4, 2, 3}, 5)),
                    Catch::Contains("lerp: weight [4, 2, 3] does not broadcast to start's shape [2, 3]"));
  CHECK_THROWS_WITH(lerp(start, end, random_tensor({2}, 6)), Catch::Contains("cannot be broadcast"));
}

TEST_CASE("sigmoid does not overflow for large inputs") {
  Tensor x = Tensor::from_vector<float>({-1000.f, 1000.f, 0.f}, {3});
  auto y = sigmoid(x).to_vector<double>();
  CHECK(y[0] == 0.0);
  CHECK(y[1] == 1.0);
  CHECK(y[2] == 0.5);
}

TEST_CASE("broadcast_to copies and sums back") {
  Tensor x = random_tensor({3, 1}, 9);
  Tensor y = broadcast_to(x, {2, 3, 4});
  auto vx = x.to_vector<double>(), vy = y.to_vector<double>();
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) CHECK(vy[(i * 3 + j) * 4 + k] == vx[j]);
  gradcheck([](const std::vector<Tensor>& in) { return broadcast_to(in[0], {2, 3, 4}); }, {x});
}

TEST_CASE("elementwise ops reject bad input with the op and shapes named") {
  Tensor a = Tensor::zeros({4, 3}), b = Tensor::zeros({5, 2});
  REQUIRE_THROWS_WITH(add(a, b), "add: shapes [4, 3] and [5, 2] cannot be broadcast together");
  REQUIRE_THROWS_WITH(mul(a, Tensor::zeros({4, 3}, DType::Float64)),
                      "mul: dtypes differ: float32[4, 3] on cpu, float64[4, 3] on cpu");
  REQUIRE_THROWS_WITH(exp(Tensor::zeros({2}, DType::Int64)),
                      "exp: expected a float32 or float64 tensor, got int64[2]");
  REQUIRE_THROWS_WITH(add(Tensor(), a), "add: input is an undefined tensor");
  if (dispatch::device_count(DeviceType::CUDA) == 0)  // a CPU-only build, or a CUDA build on a machine without GPU
    REQUIRE_THROWS_WITH(a.to(Device::cuda(0)),
                        Catch::Contains("cuda:0 is not available") || Catch::Contains("cuda:0: no CUDA device"));
}

TEST_CASE("elementwise ops on empty tensors give empty results") {
  Tensor a = Tensor::zeros({0, 3});
  CHECK(add(a, Tensor::zeros({3})).shape() == Shape{0, 3});
  CHECK(exp(a).numel() == 0);
}

TEST_CASE("binary ops' backward makes only the gradients an input needs") {
  // A mask multiplied in (x ⊙ valid_rows, the models' padding mask) has no
  // gradient to receive: its backward must not pay a full-size product for it.
  auto calls = [](const char* op) {
    for (const auto& entry : profiler::snapshot())
      if (entry.op == op) return entry.calls;
    return int64_t{0};
  };
  Tensor x = random_tensor({3, 5, 4}, 1).requires_grad_();
  Tensor mask = random_tensor({3, 5, 1}, 2), divisor = add(random_tensor({4}, 3), 3.0);
  profiler::reset();
  profiler::enable(true);
  sum(mul(x, mask)).backward();
  const int64_t mul_calls = calls(kernels::mul);
  sum(div(x, divisor)).backward();
  const int64_t div_calls = calls(kernels::div), neg_calls = calls(kernels::neg);
  profiler::enable(false);
  profiler::reset();
  CHECK(mul_calls == 2);  // forward, and the gradient of x only
  CHECK(div_calls == 2);
  CHECK(neg_calls == 0);
  CHECK_FALSE(mask.grad().defined());
  // Both gradients summed: g ⊙ mask from mul, g / divisor from div.
  Tensor expected = add(broadcast_to(mask, x.shape()), div(Tensor::ones(x.shape(), DType::Float64), divisor));
  CHECK(max_abs_diff(x.grad(), expected) < 1e-12);

  // Only the second input asking: its gradient alone, and right.
  Tensor b = random_tensor({4}, 4).requires_grad_(), a = random_tensor({3, 4}, 5);
  sum(mul(a, b)).backward();
  CHECK(max_abs_diff(b.grad(), sum(a, 0)) < 1e-12);
  Tensor c = add(random_tensor({4}, 6), 3.0).detach().requires_grad_();
  sum(div(a, c)).backward();
  Tensor expected_c = neg(div(sum(a, 0), mul(c.detach(), c.detach())));
  CHECK(max_abs_diff(c.grad(), expected_c) < 1e-12);
  sum(sub(a, c)).backward();  // accumulates −3 per element onto c's gradient
  CHECK(max_abs_diff(c.grad(), add(expected_c, -3.0)) < 1e-12);
}

TEST_CASE("gelu_masked is gelu with the padded rows 0, in value and gradient") {
  // Lengths 0, 1, T − 1 and T; a loss on the padded rows too (they are constant 0: no gradient).
  const int64_t batch = 4, length = 9, width = 40;  // 40: whole vectors and a tail on every path
  const std::vector<int64_t> valid = {0, 1, length - 1, length};
  const Tensor lengths = Tensor::from_vector(valid, {batch});
  const Tensor rows = hkt::testing::valid_rows_mask(valid, length);
  const Tensor x = random_tensor({batch, length, width}, 70);
  gradcheck([&](const std::vector<Tensor>& in) { return gelu_masked(in[0], lengths); }, {x});
  // float32 runs the vector GELU (the widest CPU path, as gelu's does): the same values, bitwise.
  const Tensor xf = x.to(DType::Float32).detach().requires_grad_(true);
  const Tensor xr = x.to(DType::Float32).detach().requires_grad_(true);
  const Tensor g = random_tensor({batch, length, width}, 71, DType::Float32);
  Tensor masked = gelu_masked(xf, lengths), composed = mul(gelu(xr), rows.to(DType::Float32));
  CHECK(max_abs_diff(masked, composed) == 0.0);
  masked.backward(g);
  composed.backward(g);
  CHECK(max_abs_diff(xf.grad(), xr.grad()) == 0.0);
  REQUIRE_THROWS_WITH(gelu_masked(Tensor::zeros({2, 3}), lengths), "gelu_masked: input [2, 3] is not 3-D [B, T, C]");
  REQUIRE_THROWS_WITH(gelu_masked(x, Tensor::from_vector(std::vector<int64_t>{1, 2, 10, 0}, {4})),
                      "gelu_masked: length 10 of example 2 is outside [0, 9]");
}
