#include <cmath>
#include <limits>

#include "tests/gradcheck.h"

using namespace hkt;
using hkt::testing::gradcheck;
using hkt::testing::max_abs_diff;
using hkt::testing::random_tensor;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Plain-loop masked_fill: the mask read through broadcasting to x's shape.
std::vector<double> masked_fill_reference(const Tensor& x, const Tensor& mask, double value) {
  auto v = x.to_vector<double>(), m = mask.to_vector<double>();
  const Shape &shape = x.shape(), &mask_shape = mask.shape();
  std::vector<double> out(v.size());
  for (int64_t index = 0; index < x.numel(); ++index) {
    int64_t rest = index, mask_index = 0, stride = 1;
    for (size_t k = 0; k < shape.size(); ++k) {
      const int64_t coordinate = rest % shape[shape.size() - 1 - k];
      rest /= shape[shape.size() - 1 - k];
      if (k < mask_shape.size()) {
        const int64_t extent = mask_shape[mask_shape.size() - 1 - k];
        mask_index += (extent == 1 ? 0 : coordinate) * stride;
        stride *= extent;
      }
    }
    out[index] = m[mask_index] != 0.0 ? value : v[index];
  }
  return out;
}

// Entries are 0 or 1 (about half each), any dtype.
Tensor random_mask(const Shape& shape, uint64_t seed, DType dtype) {
  Generator generator(seed);
  std::vector<double> values(static_cast<size_t>(shape_numel(shape)));
  for (double& v : values) v = generator.uniform() < 0.5 ? 1.0 : 0.0;
  return Tensor::from_doubles(values, shape, dtype);
}

struct Case {
  Shape x, mask;
  DType mask_dtype;
};
const std::vector<Case> kCases = {
    {{3, 4}, {3, 4}, DType::Int32},    {{3, 4}, {1, 4}, DType::Float32}, {{3, 4}, {4}, DType::Int64},
    {{3, 4}, {3, 1}, DType::Float64},  {{3, 4}, {}, DType::Int32},       {{2, 5, 5}, {2, 1, 5}, DType::Int64},
    {{1}, {1}, DType::Int32},          {{2, 3, 4}, {3, 1}, DType::Float32},
};

}  // namespace

TEST_CASE("masked_fill matches a plain-loop reference for any mask dtype and broadcast") {
  for (const Case& c : kCases)
    for (double value : {2.5, -kInf, 0.0}) {
      INFO(shape_str(c.x) << " mask " << shape_str(c.mask) << " " << dtype_name(c.mask_dtype) << " value " << value);
      Tensor x = random_tensor(c.x, 61), mask = random_mask(c.mask, 62, c.mask_dtype);
      CHECK(max_abs_diff(masked_fill(x, mask, value), masked_fill_reference(x, mask, value)) == 0);
    }
}

TEST_CASE("masked_fill: gradient passes where the mask is zero, zero where filled") {
  for (const Case& c : kCases) {
    INFO(shape_str(c.x) << " mask " << shape_str(c.mask));
    Tensor mask = random_mask(c.mask, 63, c.mask_dtype);
    gradcheck([&](const std::vector<Tensor>& in) { return masked_fill(in[0], mask, 2.5); }, {random_tensor(c.x, 64)});
  }
  Tensor x = random_tensor({2, 3}, 65), mask = Tensor::from_vector<int32_t>({1, 0, 0, 0, 1, 1}, {2, 3});
  x.requires_grad_(true);
  masked_fill(x, mask, -kInf).backward(Tensor::full({2, 3}, 3.0, DType::Float64));
  CHECK(max_abs_diff(x.grad(), std::vector<double>{0, 3, 3, 3, 0, 0}) == 0);
}

TEST_CASE("masked_fill: a [B, 1, T] key mask over [B, T, T] scores, then softmax") {
  const int64_t B = 3, T = 4;
  // Batch 0 has no padding, batch 1 pads its last key, batch 2 pads every key.
  Tensor key_mask = Tensor::from_vector<int64_t>({0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1}, {B, 1, T});
  Tensor scores = random_tensor({B, T, T}, 66);
  Tensor filled = masked_fill(scores, key_mask, -kInf);
  auto f = filled.to_vector<double>(), s = scores.to_vector<double>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 0; j < T; ++j) {
        const int64_t at = (b * T + i) * T + j;
        const bool padded = (b == 1 && j == T - 1) || b == 2;
        CHECK(f[at] == (padded ? -kInf : s[at]));
      }
  auto weights = softmax(filled, -1).to_vector<double>();
  for (int64_t i = 0; i < T; ++i) {
    CHECK(weights[(1 * T + i) * T + T - 1] == 0.0);
    for (int64_t j = 0; j < T; ++j) CHECK(weights[(2 * T + i) * T + j] == 0.0);
  }
  gradcheck([&](const std::vector<Tensor>& in) { return softmax(masked_fill(in[0], key_mask, -kInf), -1); },
            {scores});
}

TEST_CASE("masked_fill rejects a mask that does not broadcast, naming both shapes") {
  Tensor x = Tensor::zeros({4, 3});
  REQUIRE_THROWS_WITH(masked_fill(x, Tensor::zeros({2, 3}), 0.0),
                      "masked_fill: mask [2, 3] does not broadcast to input [4, 3]");
  REQUIRE_THROWS_WITH(masked_fill(x, Tensor::zeros({1, 4, 3}, DType::Int32), 0.0),
                      "masked_fill: mask [1, 4, 3] does not broadcast to input [4, 3]");
  // x's shape is the output's: the mask may not stretch x.
  REQUIRE_THROWS_WITH(masked_fill(Tensor::zeros({1, 3}), Tensor::zeros({4, 3}), 0.0),
                      "masked_fill: mask [4, 3] does not broadcast to input [1, 3]");
  REQUIRE_THROWS_WITH(masked_fill(Tensor::zeros({2}, DType::Int64), Tensor::zeros({2}), 0.0),
                      "masked_fill: expected a float32 or float64 tensor, got int64[2]");
  REQUIRE_THROWS_WITH(masked_fill(x, Tensor(), 0.0), "masked_fill: mask is an undefined tensor");
}

TEST_CASE("masked_fill on an empty tensor gives an empty result") {
  CHECK(masked_fill(Tensor::zeros({0, 3}), Tensor::ones({3}), 1.0).shape() == Shape{0, 3});
}
