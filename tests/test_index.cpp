#include <omp.h>

#include <cmath>

#include "tests/gradcheck.h"

using namespace hkt;
using hkt::testing::gradcheck;
using hkt::testing::max_abs_diff;
using hkt::testing::random_tensor;

namespace {

// Plain-loop gather along `axis`; index −1 gives 0.
std::vector<double> reference_gather(const Tensor& x, int64_t axis, const std::vector<int64_t>& index) {
  auto vx = x.to_vector<double>();
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < axis; ++k) outer *= x.size(k);
  for (int64_t k = axis + 1; k < x.dim(); ++k) inner *= x.size(k);
  std::vector<double> out;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t source : index)
      for (int64_t j = 0; j < inner; ++j)
        out.push_back(source < 0 ? 0.0 : vx[(o * x.size(axis) + source) * inner + j]);
  return out;
}

Tensor index_tensor(const std::vector<int64_t>& values, DType dtype = DType::Int64) {
  return Tensor::from_doubles(std::vector<double>(values.begin(), values.end()), {static_cast<int64_t>(values.size())},
                              dtype);
}

int64_t power(int64_t base, int64_t exponent) {
  int64_t result = 1;
  for (int64_t k = 0; k < exponent; ++k) result *= base;
  return result;
}

struct SelectCase {
  Shape shape;
  int64_t axis;
  std::vector<int64_t> index;
};

const SelectCase kSelectCases[] = {
    {{5}, 0, {4, 0, 0, 2}},        {{4, 3}, 0, {3, 1, 3}},       {{4, 3}, 1, {2, 2, 2, 0, 1}},
    {{2, 3, 4}, 1, {1}},           {{2, 3, 4}, -1, {3, 0, 3}},   {{2, 3, 4}, 0, {1, 0, 1, 1}},
    {{1, 1, 1}, 2, {0, 0}},        {{3, 1}, 1, {0}},             {{3, 2}, 0, {}},
};

}  // namespace

TEST_CASE("index_select matches a plain-loop gather") {
  for (const SelectCase& c : kSelectCases)
    for (DType dtype : {DType::Float32, DType::Float64, DType::Int64})
      for (DType index_dtype : {DType::Int32, DType::Int64}) {
        INFO(shape_str(c.shape) << " axis " << c.axis << " " << dtype_name(dtype) << " index "
                                << dtype_name(index_dtype));
        Tensor x = random_tensor(c.shape, 1).to(DType::Float64);
        if (dtype != DType::Float64) x = mul(x, 10.0).to(dtype);
        Tensor out = index_select(x, c.axis, index_tensor(c.index, index_dtype));
        Shape expected_shape = c.shape;
        const int64_t axis = c.axis < 0 ? c.axis + x.dim() : c.axis;
        expected_shape[axis] = static_cast<int64_t>(c.index.size());
        CHECK(out.shape() == expected_shape);
        CHECK(out.dtype() == dtype);
        CHECK(max_abs_diff(out, reference_gather(x, axis, c.index)) == 0);
      }
}

TEST_CASE("index_select: gradients with repeated indices on every axis") {
  for (const SelectCase& c : kSelectCases) {
    INFO(shape_str(c.shape) << " axis " << c.axis);
    Tensor index = index_tensor(c.index);
    gradcheck([&](const std::vector<Tensor>& in) { return index_select(in[0], c.axis, index); },
              {random_tensor(c.shape, 2)});
  }
}

TEST_CASE("index_add sums repeated indices in a fixed order, whatever the thread count") {
  Tensor x = random_tensor({3, 50, 300}, 3, DType::Float32).requires_grad_(true);
  std::vector<int64_t> values;
  for (int64_t p = 0; p < 400; ++p) values.push_back((p * 7) % 50 == 3 ? 3 : (p * 13) % 50);
  Tensor index = index_tensor(values);
  Tensor weights = random_tensor({3, 400, 300}, 4, DType::Float32);
  std::vector<std::vector<float>> grads;
  const int threads = omp_get_max_threads();
  for (int n : {1, 2, 4}) {
    omp_set_num_threads(n);
    x.zero_grad();
    sum(mul(index_select(x, 1, index), weights)).backward();
    grads.push_back(x.grad().to_vector<float>());
  }
  omp_set_num_threads(threads);
  CHECK(grads[0] == grads[1]);
  CHECK(grads[0] == grads[2]);
}

TEST_CASE("embedding gathers rows and accumulates the gradient of repeated tokens") {
  Tensor weight = random_tensor({6, 4}, 5);
  for (DType token_dtype : {DType::Int32, DType::Int64}) {
    Tensor tokens = Tensor::from_doubles({1, 5, 1, 0, 1, 3}, {2, 3}, token_dtype);
    Tensor out = embedding(weight, tokens);
    REQUIRE(out.shape() == Shape{2, 3, 4});
    CHECK(max_abs_diff(out, reference_gather(weight, 0, {1, 5, 1, 0, 1, 3})) == 0);

    Tensor w = weight.detach().requires_grad_(true);
    sum(embedding(w, tokens)).backward();
    // Row 1 is used three times, rows 0, 3, 5 once, rows 2 and 4 never.
    std::vector<double> expected;
    for (double count : {1, 3, 0, 1, 0, 1})
      for (int j = 0; j < 4; ++j) expected.push_back(count);
    CHECK(max_abs_diff(w.grad(), expected) == 0);
  }
  Tensor tokens = Tensor::from_doubles({2, 2, 0, 5, 2}, {5}, DType::Int64);
  gradcheck([&](const std::vector<Tensor>& in) { return embedding(in[0], tokens); }, {weight});
  Tensor one = Tensor::from_doubles({0}, {1, 1}, DType::Int32);
  gradcheck([&](const std::vector<Tensor>& in) { return embedding(in[0], one); }, {random_tensor({1, 1}, 6)});
}

TEST_CASE("level_length is T_l = ceil(T_{l-1} / s) applied l times") {
  for (int64_t stride : {1, 2, 3})
    for (int64_t T : {0, 1, 2, 3, 5, 7, 8, 9, 16, 17, 512, 1000}) {
      int64_t expected = T;
      for (int64_t level = 0; level <= 12; ++level) {
        INFO("T " << T << " s " << stride << " level " << level);
        CHECK(level_length(T, level, stride) == expected);
        expected = static_cast<int64_t>(std::ceil(static_cast<double>(expected) / static_cast<double>(stride)));
      }
    }
  CHECK(level_length(1000, 1000000000, 2) == 1);
}

TEST_CASE("index maps follow SPEC section 3 and the causal map never looks ahead") {
  for (int64_t stride : {2, 3})
    for (int64_t T : {1, 2, 3, 5, 7, 8, 9, 16, 17, 27, 30})
      for (int64_t level = 0; level <= 3; ++level) {
        INFO("T " << T << " s " << stride << " level " << level);
        const int64_t block = power(stride, level), T_l = level_length(T, level, stride);
        Tensor q_bidirectional = query_index_map(T, level, stride, false);
        Tensor q_causal = query_index_map(T, level, stride, true);
        Tensor k = key_index_map(T, level, stride);
        REQUIRE(q_bidirectional.shape() == Shape{T});
        REQUIRE(q_causal.dtype() == DType::Int64);
        auto qb = q_bidirectional.to_vector<int64_t>(), qc = q_causal.to_vector<int64_t>(),
             vk = k.to_vector<int64_t>();
        for (int64_t i = 0; i < T; ++i) {
          CHECK(qb[i] == i / block);
          CHECK(vk[i] == i / block);
          CHECK(qc[i] == (i + 1) / block - 1);
          CHECK(vk[i] < T_l);
          CHECK(qb[i] < T_l);
          CHECK(qc[i] >= -1);
          // Block q_c(i) covers fine positions q_c(i)·s^l … (q_c(i)+1)·s^l − 1, all at or before i.
          CHECK((qc[i] + 1) * block - 1 <= i);
          // ... and it is the last such block: the next one ends after i.
          CHECK((qc[i] + 2) * block - 1 > i);
        }
        // Every coarse key is used, so upsampling by k covers level l.
        CHECK(vk.back() == T_l - 1);
      }
  CHECK(query_index_map(5, 40, 2, true).to_vector<int64_t>() == std::vector<int64_t>(5, -1));
  CHECK(key_index_map(5, 40, 2).to_vector<int64_t>() == std::vector<int64_t>(5, 0));
}

TEST_CASE("upsample by an index map: forward, zeros for -1, gradient") {
  for (int64_t axis : {0, 1, 2}) {
    Shape shape = {3, 4, 2};
    const int64_t T = 9;
    shape[axis] = level_length(T, 1, 2);
    for (bool causal : {false, true}) {
      INFO("axis " << axis << (causal ? " causal" : " bidirectional"));
      Tensor map = query_index_map(T, 1, 2, causal);
      Tensor x = random_tensor(shape, 7);
      Tensor out = upsample(x, axis, map);
      Shape out_shape = shape;
      out_shape[axis] = T;
      REQUIRE(out.shape() == out_shape);
      CHECK(max_abs_diff(out, reference_gather(x, axis, map.to_vector<int64_t>())) == 0);
      gradcheck([&](const std::vector<Tensor>& in) { return upsample(in[0], axis, map); }, {x});
    }
  }
  // T = 1 at level 2, stride 3: the causal map is all −1, so out and gradient are zero.
  Tensor x = random_tensor({1, 2}, 8).requires_grad_(true);
  Tensor out = upsample(x, 0, query_index_map(1, 2, 3, true));
  CHECK(max_abs_diff(out, std::vector<double>(2, 0.0)) == 0);
  sum(out).backward();
  CHECK(max_abs_diff(x.grad(), std::vector<double>(2, 0.0)) == 0);
}

TEST_CASE("index ops reject bad input with the op, the value and the extent named") {
  Tensor x = Tensor::zeros({2, 5});
  REQUIRE_THROWS_WITH(index_select(x, 1, index_tensor({0, 5})),
                      "index_select: index 5 out of range for axis 1 of extent 5 in [2, 5]");
  REQUIRE_THROWS_WITH(index_select(x, 0, index_tensor({-1})),
                      "index_select: index -1 out of range for axis 0 of extent 2 in [2, 5]");
  REQUIRE_THROWS_WITH(index_select(x, 2, index_tensor({0})), "index_select: axis 2 out of range for shape [2, 5]");
  REQUIRE_THROWS_WITH(index_select(x, 0, Tensor::zeros({2})),
                      "index_select: expected an int32 or int64 index tensor, got float32[2]");
  REQUIRE_THROWS_WITH(index_select(x, 0, Tensor::zeros({1, 1}, DType::Int64)),
                      "index_select: index int64[1, 1] is not 1-D");
  REQUIRE_THROWS_WITH(embedding(Tensor::zeros({10, 4}), Tensor::from_doubles({3, 12}, {2}, DType::Int32)),
                      "embedding: token 12 out of range for weight [10, 4]");
  REQUIRE_THROWS_WITH(embedding(Tensor::zeros({10}), Tensor::zeros({2}, DType::Int32)),
                      "embedding: weight [10] is not 2-D [vocab, d]");
  REQUIRE_THROWS_WITH(upsample(x, 1, index_tensor({-2})),
                      "upsample: index map value -2 out of range for axis 1 of extent 5 in [2, 5]");
  REQUIRE_THROWS_WITH(upsample(x, 0, index_tensor({2})),
                      "upsample: index map value 2 out of range for axis 0 of extent 2 in [2, 5]");
  REQUIRE_THROWS_WITH(query_index_map(8, 1, 0, false), "query_index_map: stride 0 must be at least 1");
  REQUIRE_THROWS_WITH(key_index_map(8, -1, 2), "key_index_map: level -1 is negative");
  REQUIRE_THROWS_WITH(level_length(-3, 1, 2), "level_length: sequence length -3 is negative");
}
