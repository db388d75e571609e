#include "tests/gradcheck.h"

using namespace hkt;
using hkt::testing::gradcheck;
using hkt::testing::max_abs_diff;
using hkt::testing::random_tensor;

TEST_CASE("reshape shares storage and infers -1") {
  Tensor x = random_tensor({2, 3, 4}, 21);
  Tensor y = reshape(x, {6, -1});
  CHECK(y.shape() == Shape{6, 4});
  CHECK(y.raw_data() == x.raw_data());
  CHECK(y.to_vector<double>() == x.to_vector<double>());
  gradcheck([](const std::vector<Tensor>& in) { return reshape(in[0], {4, 6}); }, {x});
  REQUIRE_THROWS_WITH(reshape(x, {5, 5}), "reshape: [2, 3, 4] (24 elements) to [5, 5] (25 elements)");
  REQUIRE_THROWS_WITH(reshape(x, {-1, -1}), "reshape: [2, 3, 4] to [-1, -1]: more than one -1");
}

TEST_CASE("permute and transpose match index arithmetic") {
  Tensor x = random_tensor({2, 3, 4}, 22);
  Tensor y = permute(x, {2, 0, 1});
  REQUIRE(y.shape() == Shape{4, 2, 3});
  auto vx = x.to_vector<double>(), vy = y.to_vector<double>();
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) CHECK(vy[(k * 2 + i) * 3 + j] == vx[(i * 3 + j) * 4 + k]);
  Tensor t = transpose(x, 0, -1);
  CHECK(t.shape() == Shape{4, 3, 2});
  gradcheck([](const std::vector<Tensor>& in) { return permute(in[0], {2, 0, 1}); }, {x});
  gradcheck([](const std::vector<Tensor>& in) { return transpose(in[0], 1, 2); }, {x});
  gradcheck([](const std::vector<Tensor>& in) { return transpose(in[0], 0, 1); }, {random_tensor({1, 5}, 3)});
  REQUIRE_THROWS_WITH(permute(x, {0, 0, 1}), "permute: axis 0 repeated in a permutation of [2, 3, 4]");
  REQUIRE_THROWS_WITH(permute(x, {0, 1}), "permute: 2 dims for shape [2, 3, 4]");
}

TEST_CASE("permute moves integer tensors too") {
  Tensor x = Tensor::from_vector<int64_t>({0, 1, 2, 3, 4, 5}, {2, 3});
  CHECK(transpose(x, 0, 1).to_vector<int64_t>() == std::vector<int64_t>{0, 3, 1, 4, 2, 5});
}

TEST_CASE("slice and concat") {
  Tensor x = random_tensor({3, 5, 2}, 23);
  Tensor s = slice(x, 1, 1, 4);
  REQUIRE(s.shape() == Shape{3, 3, 2});
  auto vx = x.to_vector<double>(), vs = s.to_vector<double>();
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 2; ++k) CHECK(vs[(i * 3 + j) * 2 + k] == vx[(i * 5 + j + 1) * 2 + k]);
  CHECK(slice(x, 0, 2, 2).numel() == 0);
  for (int64_t axis : {0, 1, 2}) {
    INFO("axis " << axis);
    gradcheck([=](const std::vector<Tensor>& in) { return slice(in[0], axis, 1, in[0].size(axis)); }, {x});
    Tensor a = random_tensor({3, 5, 2}, 24), b = slice(random_tensor({3, 5, 2}, 25), axis, 0, 1).detach();
    Tensor joined = concat({a, b}, axis);
    CHECK(max_abs_diff(slice(joined, axis, 0, a.size(axis)), a) == 0);
    CHECK(max_abs_diff(slice(joined, axis, a.size(axis), joined.size(axis)), b) == 0);
    gradcheck([=](const std::vector<Tensor>& in) { return concat({in[0], in[1], in[0]}, axis); }, {a, b});
  }
  REQUIRE_THROWS_WITH(slice(x, 1, 3, 6), "slice: range [3, 6) on axis 1 of shape [3, 5, 2]");
  REQUIRE_THROWS_WITH(concat({x, random_tensor({3, 4, 3}, 1)}, 1),
                      "concat: shapes [3, 5, 2] and [3, 4, 3] differ outside axis 1");
  REQUIRE_THROWS_WITH(concat({}, 0), "concat: no tensors given");
}

TEST_CASE("cast and clone") {
  Tensor x = random_tensor({3, 2}, 26);
  Tensor f = x.to(DType::Float32);
  CHECK(f.dtype() == DType::Float32);
  CHECK(max_abs_diff(f, x) < 1e-6);
  // Finite differences through float32 are too coarse; check the cast's gradient directly.
  Tensor leaf64 = x.clone().detach();
  leaf64.requires_grad_();
  Tensor weights = random_tensor({3, 2}, 27, DType::Float32);
  sum(mul(leaf64.to(DType::Float32), weights)).backward();
  CHECK(leaf64.grad().dtype() == DType::Float64);
  CHECK(max_abs_diff(leaf64.grad(), weights) == 0);
  gradcheck([](const std::vector<Tensor>& in) { return in[0].clone(); }, {x});
  Tensor c = x.clone();
  CHECK(c.raw_data() != x.raw_data());
  CHECK(Tensor::from_vector<double>({1.7, -2.2}, {2}).to(DType::Int64).to_vector<int64_t>() ==
        std::vector<int64_t>{1, -2});
  Tensor leaf = random_tensor({2}, 1);
  leaf.requires_grad_();
  REQUIRE_THROWS_WITH(leaf.to(DType::Int32),
                      "cast: float64[2] requires grad and cannot be cast to int32 (gradients flow only between "
                      "floating types)");
}
