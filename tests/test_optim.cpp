#include "engine/threads.h"
#include "tests/gradcheck.h"

using namespace hkt;
using hkt::testing::random_tensor;

namespace {

NamedTensors make_parameters(uint64_t seed) {
  Tensor a = random_tensor({3, 2}, seed), b = random_tensor({4}, seed + 1);
  a.requires_grad_();
  b.requires_grad_();
  return {{"a", a}, {"b", b}};
}

// A quadratic loss Σ (p − 1)² · (index + 1) with a different curvature per element.
void compute_grads(const NamedTensors& parameters) {
  for (const auto& [_, p] : parameters) p.zero_grad();
  Tensor loss = Tensor::scalar(0.0, DType::Float64);
  for (const auto& [_, p] : parameters) {
    std::vector<double> weights(static_cast<size_t>(p.numel()));
    for (size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<double>(i + 1);
    Tensor w = Tensor::from_vector<double>(weights, p.shape());
    loss = add(loss, sum(mul(pow(add(p, -1.0), 2.0), w)));
  }
  loss.backward();
}

}  // namespace

TEST_CASE("SGD with momentum and weight decay follows PyTorch's update") {
  NamedTensors parameters = make_parameters(1);
  std::vector<double> p = parameters[0].second.to_vector<double>(), buf(p.size());
  SGD sgd(parameters, {.lr = 0.05, .momentum = 0.9, .weight_decay = 0.1});
  for (int step = 0; step < 3; ++step) {
    compute_grads(parameters);
    auto g = parameters[0].second.grad().to_vector<double>();
    for (size_t i = 0; i < p.size(); ++i) {
      double d = g[i] + 0.1 * p[i];
      buf[i] = step == 0 ? d : 0.9 * buf[i] + d;
      p[i] -= 0.05 * buf[i];
    }
    sgd.step();
  }
  auto got = parameters[0].second.to_vector<double>();
  for (size_t i = 0; i < p.size(); ++i) CHECK(got[i] == Approx(p[i]).epsilon(1e-12));
}

TEST_CASE("AdamW follows the decoupled-weight-decay update and lowers the loss") {
  NamedTensors parameters = make_parameters(2);
  std::vector<double> p = parameters[1].second.to_vector<double>(), m(p.size()), v(p.size());
  AdamWOptions options{.lr = 0.01, .beta1 = 0.9, .beta2 = 0.99, .eps = 1e-8, .weight_decay = 0.05};
  AdamW adamw(parameters, options);
  for (int step = 1; step <= 5; ++step) {
    compute_grads(parameters);
    auto g = parameters[1].second.grad().to_vector<double>();
    for (size_t i = 0; i < p.size(); ++i) {
      p[i] -= 0.01 * 0.05 * p[i];
      m[i] = 0.9 * m[i] + 0.1 * g[i];
      v[i] = 0.99 * v[i] + 0.01 * g[i] * g[i];
      double m_hat = m[i] / (1 - std::pow(0.9, step)), v_hat = v[i] / (1 - std::pow(0.99, step));
      p[i] -= 0.01 * m_hat / (std::sqrt(v_hat) + 1e-8);
    }
    adamw.step();
  }
  auto got = parameters[1].second.to_vector<double>();
  for (size_t i = 0; i < p.size(); ++i) CHECK(got[i] == Approx(p[i]).epsilon(1e-12));
  CHECK(adamw.step_count() == 5);
}

TEST_CASE("optimizer state round-trips: a restored optimizer continues identically") {
  NamedTensors original = make_parameters(3), restored = make_parameters(3);
  AdamW first(original, {.lr = 0.02});
  for (int i = 0; i < 3; ++i) {
    compute_grads(original);
    first.step();
  }
  AdamW second(restored, {.lr = 0.02});
  second.load_state(first.state());
  for (size_t k = 0; k < original.size(); ++k) {
    NoGradGuard no_grad;
    restored[k].second.impl()->storage = original[k].second.clone().impl()->storage;
  }
  compute_grads(original);
  first.step();
  compute_grads(restored);
  second.step();
  for (size_t k = 0; k < original.size(); ++k)
    CHECK(original[k].second.to_vector<double>() == restored[k].second.to_vector<double>());
  NamedTensors missing = first.state();
  missing.pop_back();
  REQUIRE_THROWS_WITH(second.load_state(missing), "optimizer state 'optim.exp_avg_sq.b' is missing");
}

TEST_CASE("clip_grad_norm scales to the maximum norm and reports non-finite gradients") {
  NamedTensors parameters = make_parameters(4);
  compute_grads(parameters);
  double before = grad_norm(parameters);
  CHECK(clip_grad_norm(parameters, before * 2) == Approx(before));
  CHECK(grad_norm(parameters) == Approx(before));  // under the limit: untouched
  CHECK(clip_grad_norm(parameters, 0.5) == Approx(before));
  CHECK(grad_norm(parameters) == Approx(0.5).epsilon(1e-5));

  parameters[1].second.set_grad(Tensor::full({4}, NAN, DType::Float64));
  REQUIRE_THROWS_WITH(clip_grad_norm(parameters, 1.0), "clip_grad_norm: the gradient of 'b' [4] holds NaN or Inf");
}

TEST_CASE("clip_grad_norm with the norm already measured scales exactly as the one-call form") {
  NamedTensors measured = make_parameters(4), direct = make_parameters(4);
  compute_grads(measured);
  compute_grads(direct);
  const double norm = grad_norm(measured);
  CHECK(clip_grad_norm(measured, 0.5, norm) == norm);
  CHECK(clip_grad_norm(direct, 0.5) == Approx(norm));
  for (size_t i = 0; i < measured.size(); ++i)
    CHECK(measured[i].second.grad().to_vector<double>() == direct[i].second.grad().to_vector<double>());
  REQUIRE_THROWS_WITH(clip_grad_norm(measured, 0.5, NAN),
                      "clip_grad_norm: the given norm must be finite and non-negative, got nan");
  REQUIRE_THROWS_WITH(clip_grad_norm(measured, 0.0, norm), "clip_grad_norm: max_norm must be positive, got 0");
}

TEST_CASE("grad_norm sums squares in double, the same for any thread count, float32 and float64") {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    // One gradient long enough to be split over threads, one short.
    Tensor big = random_tensor({70000}, 3, dtype).requires_grad_(true);
    Tensor small = random_tensor({5}, 4, dtype).requires_grad_(true);
    big.set_grad(random_tensor({70000}, 5, dtype));
    small.set_grad(random_tensor({5}, 6, dtype));
    const NamedTensors parameters{{"big", big}, {"small", small}};
    double expected = 0;
    for (const Tensor& g : {big.grad(), small.grad()})
      for (double x : g.to_vector<double>()) expected += x * x;
    const int threads = num_threads();
    set_num_threads(1);
    const double one = grad_norm(parameters);
    set_num_threads(2);
    const double two = grad_norm(parameters);
    set_num_threads(threads);
    CHECK(one == two);
    CHECK(one == Approx(std::sqrt(expected)).epsilon(1e-12));
  }
}

TEST_CASE("optimizers reject parameters that are not trainable leaves") {
  Tensor frozen = Tensor::ones({2});
  REQUIRE_THROWS_WITH(AdamW({{"frozen", frozen}}, {}),
                      "optimizer: parameter 'frozen' must be a leaf tensor that requires grad");
}
