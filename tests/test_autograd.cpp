#include "tests/gradcheck.h"

using namespace hkt;
using hkt::testing::max_abs_diff;
using hkt::testing::random_tensor;

TEST_CASE("a tensor used twice accumulates both gradients") {
  Tensor x = Tensor::from_vector<double>({3.0}, {1});
  x.requires_grad_();
  Tensor y = mul(x, x) + x;  // dy/dx = 2x + 1
  y.backward(Tensor::ones({1}, DType::Float64));
  CHECK(x.grad().item() == 7.0);
}

TEST_CASE("diamond graph: two paths from one input meet again") {
  Tensor x = Tensor::from_vector<double>({0.5, -1.0}, {2});
  x.requires_grad_();
  Tensor a = exp(x), b = mul(x, 3.0);
  Tensor loss = sum(mul(a, b));  // d/dx = 3 e^x (x + 1)
  loss.backward();
  auto g = x.grad().to_vector<double>();
  CHECK(g[0] == Approx(3 * std::exp(0.5) * 1.5));
  CHECK(g[1] == Approx(0.0).margin(1e-15));
}

TEST_CASE("gradients accumulate across backward calls until zero_grad") {
  Tensor x = Tensor::from_vector<double>({2.0}, {1});
  x.requires_grad_();
  sum(mul(x, 4.0)).backward();
  sum(mul(x, 4.0)).backward();
  CHECK(x.grad().item() == 8.0);
  x.zero_grad();
  CHECK_FALSE(x.grad().defined());
}

TEST_CASE("no_grad records nothing") {
  Tensor x = random_tensor({3}, 1);
  x.requires_grad_();
  Tensor y;
  {
    NoGradGuard guard;
    y = exp(x);
  }
  CHECK_FALSE(y.requires_grad());
  CHECK(y.is_leaf());
  CHECK(grad_enabled());
  REQUIRE_THROWS_WITH(sum(y).backward(), Catch::Contains("does not require grad"));
}

TEST_CASE("a second backward through a freed graph is a clear error; retain_graph allows it") {
  Tensor x = random_tensor({3}, 2);
  x.requires_grad_();
  Tensor loss = sum(exp(x));
  loss.backward();
  REQUIRE_THROWS_WITH(loss.backward(), Catch::StartsWith("backward: the graph through 'reshape' was already freed"));

  Tensor kept = sum(exp(x));
  x.zero_grad();
  kept.backward(Tensor(), /*retain_graph=*/true);
  auto first = x.grad().to_vector<double>();
  kept.backward();
  auto twice = x.grad().to_vector<double>();
  for (size_t i = 0; i < first.size(); ++i) CHECK(twice[i] == Approx(2 * first[i]));
}

TEST_CASE("a leaf without requires_grad gets no gradient") {
  Tensor x = random_tensor({3}, 3), w = random_tensor({3}, 4);
  x.requires_grad_();
  sum(mul(x, w)).backward();
  CHECK(x.grad().defined());
  CHECK_FALSE(w.grad().defined());
  CHECK(max_abs_diff(x.grad(), w) == 0);
}

TEST_CASE("detach cuts the graph but shares storage") {
  Tensor x = random_tensor({3}, 5);
  x.requires_grad_();
  Tensor d = exp(x).detach();
  CHECK_FALSE(d.requires_grad());
  Tensor loss = sum(mul(exp(x), d));
  loss.backward();
  auto g = x.grad().to_vector<double>(), e = exp(x.detach()).to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] == Approx(e[i] * e[i]));
}

TEST_CASE("backward checks its gradient argument") {
  Tensor x = random_tensor({2, 3}, 6);
  x.requires_grad_();
  Tensor y = exp(x);
  REQUIRE_THROWS_WITH(y.backward(), "backward: an implicit gradient needs a one-element output, got float64[2, 3]; "
                                    "pass a gradient of the same shape");
  REQUIRE_THROWS_WITH(y.backward(Tensor::ones({3}, DType::Float64)),
                      "backward: gradient float64[3] does not match output float64[2, 3]");
}

TEST_CASE("a deep chain does not overflow the stack") {
  Tensor x = Tensor::from_vector<double>({1.0}, {1});
  x.requires_grad_();
  Tensor y = x;
  for (int i = 0; i < 20000; ++i) y = add(y, 0.0);
  sum(y).backward();
  CHECK(x.grad().item() == 1.0);
}

TEST_CASE("integer tensors cannot require grad") {
  Tensor labels = Tensor::zeros({3}, DType::Int64);
  REQUIRE_THROWS_WITH(labels.requires_grad_(), "requires_grad_: only floating tensors can require grad, not int64[3]");
}

TEST_CASE("an undefined optional input in a recorded node is skipped by backward") {
  Tensor x = random_tensor({2}, 7);
  x.requires_grad_();
  Tensor out = exp(x).detach();
  record("optional_input", {x, Tensor()}, out, [](const Tensor& g) -> std::vector<Tensor> { return {g, Tensor()}; });
  sum(out).backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{1.0, 1.0});
}

namespace {

// y = x, recorded with a backward that adds the output's gradient into the
// sum autograd hands over for x, if any; `handed` says whether it did.
Tensor probe(const Tensor& x, bool& handed) {
  Tensor out = x.detach().clone();
  record("probe", {x}, out, [&handed](const Tensor& g) -> std::vector<Tensor> {
    Tensor sum = take_gradient_sum(0);
    handed = sum.defined();
    if (!handed) return {g.clone()};
    double* total = sum.data<double>();
    const double* term = g.data<double>();
    for (int64_t i = 0; i < g.numel(); ++i) total[i] += term[i];
    return {sum};
  });
  return out;
}

}  // namespace

TEST_CASE("take_gradient_sum hands a backward the sum of an input's gradients only when nothing else holds it") {
  Tensor x = Tensor::from_vector<double>({1.0, -2.0}, {2});
  x.requires_grad_();
  bool handed = false;
  SECTION("a sum that mul's backward made, held by autograd alone, is handed over and added to") {
    Tensor a = mul(x, 1.5);
    Tensor u = probe(a, handed);
    sum(mul(a, u)).backward();  // mul's backward runs first; d/dx (1.5x)² = 4.5x
    CHECK(handed);
    CHECK(max_abs_diff(x.grad(), std::vector<double>{4.5, -9.0}) == 0.0);
  }
  SECTION("a sum that add's backward also gave to another input is not handed over") {
    Tensor a = mul(x, 1.5);
    Tensor u = probe(a, handed);
    sum(add(a, u)).backward();  // add hands one tensor to a and to u
    CHECK_FALSE(handed);
    CHECK(max_abs_diff(x.grad(), std::vector<double>{3.0, 3.0}) == 0.0);
  }
  SECTION("a leaf's gradient is the user's and is never handed over") {
    Tensor u = probe(x, handed);
    sum(mul(x, u)).backward();
    CHECK_FALSE(handed);
    CHECK(max_abs_diff(x.grad(), std::vector<double>{2.0, -4.0}) == 0.0);
  }
  SECTION("outside a backward there is nothing to hand over") {
    CHECK_FALSE(take_gradient_sum(0).defined());
  }
}
