// The fused attention op (ops/attention.h) against its composed reference
// (ops/attention_reference.h: gemm → masked_fill → softmax → matmul): forward
// and every gradient, float64 and float32, edge lengths, padding, causality,
// thread count, errors.
#include <cmath>

#include "ops/attention_reference.h"
#include "tests/attention_test_util.h"
#include "tests/gradcheck.h"

using namespace hkt;
using hkt::testing::gradcheck;
using hkt::testing::lengths_tensor;
using hkt::testing::random_tensor;
using hkt::testing::relative_diff;
using hkt::testing::ThreadScope;
using hkt::testing::TileScope;

namespace {

struct Result {
  Tensor out, grad_q, grad_k, grad_v;
};

// Output and the gradients of Σ out ⊙ weights, for fresh leaves.
template <class F>
Result run(F&& f, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& weights) {
  Tensor lq = q.detach().clone(), lk = k.detach().clone(), lv = v.detach().clone();
  lq.requires_grad_(true);
  lk.requires_grad_(true);
  lv.requires_grad_(true);
  Tensor out = f(lq, lk, lv);
  sum(mul(out, weights)).backward();
  return {out.detach(), lq.grad(), lk.grad(), lv.grad()};
}

void compare_with_reference(int64_t length, int64_t head_dim, bool causal, const std::vector<int64_t>& lengths,
                            DType dtype, double tolerance) {
  const Shape shape{2, 2, length, head_dim};
  Tensor q = random_tensor(shape, 1, dtype), k = random_tensor(shape, 2, dtype), v = random_tensor(shape, 3, dtype);
  Tensor weights = random_tensor(shape, 4, dtype);
  Tensor lengths_t = lengths_tensor(lengths);
  Result fused =
      run([&](auto& a, auto& b, auto& c) { return attention(a, b, c, lengths_t, causal); }, q, k, v, weights);
  // The reference in float64 on the same values: a float32 case measures the
  // fused kernel's rounding alone (see tests/test_multiscale_attention.cpp).
  const auto wide = [](const Tensor& t) { return t.to(DType::Float64); };
  Result expected = run([&](auto& a, auto& b, auto& c) { return attention_reference(a, b, c, lengths_t, causal); },
                        wide(q), wide(k), wide(v), wide(weights));
  INFO("T " << length << " dh " << head_dim << (causal ? " causal" : " bidirectional") << " lengths " << lengths[0]
            << ", " << lengths[1] << " " << dtype_name(dtype) << " tile " << attention_cpu_tile());
  CHECK(relative_diff(fused.out, expected.out) <= tolerance);
  CHECK(relative_diff(fused.grad_q, expected.grad_q) <= tolerance);
  CHECK(relative_diff(fused.grad_k, expected.grad_k) <= tolerance);
  CHECK(relative_diff(fused.grad_v, expected.grad_v) <= tolerance);
}


bool bitwise_equal(const Tensor& a, const Tensor& b) { return a.to_vector<double>() == b.to_vector<double>(); }

}  // namespace

TEST_CASE("attention equals gemm → masked_fill → softmax → matmul, forward and gradients") {
  for (int64_t tile : {8, 64, 128}) {
    TileScope scope(tile);
    for (int64_t length : {1, 7, 37, 70, 130})
      for (bool causal : {false, true}) {
        // Full length, a single valid key, and a length that ends inside a tile.
        const std::vector<std::vector<int64_t>> cases = {
            {length, length}, {1, length}, {length, std::max<int64_t>(1, length - 5)}};
        for (const auto& lengths : cases) {
          compare_with_reference(length, 8, causal, lengths, DType::Float64, 1e-10);
          compare_with_reference(length, 4, causal, lengths, DType::Float32, 1e-4);
        }
      }
  }
}

TEST_CASE("attention passes a float64 finite-difference gradient check") {
  TileScope scope(8);
  for (bool causal : {false, true}) {
    Tensor lengths = lengths_tensor({11, 6});
    gradcheck([&](const std::vector<Tensor>& in) { return attention(in[0], in[1], in[2], lengths, causal); },
              {random_tensor({2, 2, 11, 4}, 5), random_tensor({2, 2, 11, 4}, 6), random_tensor({2, 2, 11, 4}, 7)});
  }
}

TEST_CASE("causal attention: output i has exactly zero gradient from every later position") {
  TileScope scope(8);
  const int64_t length = 21;
  const Shape shape{2, 2, length, 4};
  Tensor lengths = lengths_tensor({length, 17});
  for (int64_t i : {0, 5, 8, 15, 20}) {
    Tensor q = random_tensor(shape, 1).requires_grad_(true), k = random_tensor(shape, 2).requires_grad_(true),
           v = random_tensor(shape, 3).requires_grad_(true);
    Tensor row = slice(attention(q, k, v, lengths, true), 2, i, i + 1);
    sum(mul(row, random_tensor(row.shape(), 9))).backward();
    for (const Tensor& input : {q, k, v}) {
      auto grad = input.grad().to_vector<double>();
      bool later_zero = true, earlier_nonzero = false;
      for (int64_t bh = 0; bh < 4; ++bh)
        for (int64_t p = 0; p < length; ++p)
          for (int64_t d = 0; d < 4; ++d) {
            const double g = grad[static_cast<size_t>((bh * length + p) * 4 + d)];
            if (p > i)
              later_zero = later_zero && g == 0.0;
            else
              earlier_nonzero = earlier_nonzero || g != 0.0;
          }
      INFO("output row " << i);
      CHECK(later_zero);
      if (i > 0) CHECK(earlier_nonzero);  // row 0 sees only key 0: its q and k gradients vanish
    }
  }
}

TEST_CASE("attention does not depend on the thread count (bitwise)") {
  const Shape shape{2, 2, 130, 8};
  Tensor q = random_tensor(shape, 1, DType::Float32), k = random_tensor(shape, 2, DType::Float32),
         v = random_tensor(shape, 3, DType::Float32), weights = random_tensor(shape, 4, DType::Float32);
  Tensor lengths = lengths_tensor({130, 77});
  for (bool causal : {false, true}) {
    auto f = [&](auto& a, auto& b, auto& c) { return attention(a, b, c, lengths, causal); };
    Result one, two;
    {
      ThreadScope threads(1);
      one = run(f, q, k, v, weights);
    }
    {
      ThreadScope threads(2);
      two = run(f, q, k, v, weights);
    }
    CHECK(bitwise_equal(one.out, two.out));
    CHECK(bitwise_equal(one.grad_q, two.grad_q));
    CHECK(bitwise_equal(one.grad_k, two.grad_k));
    CHECK(bitwise_equal(one.grad_v, two.grad_v));
  }
}

TEST_CASE("attention errors name the op and the shapes") {
  Tensor q = random_tensor({2, 2, 5, 4}, 1), k = random_tensor({2, 2, 5, 4}, 2), v = random_tensor({2, 2, 5, 4}, 3);
  Tensor lengths = lengths_tensor({5, 3});
  CHECK_THROWS_WITH(attention(q, random_tensor({2, 2, 6, 4}, 2), v, lengths, false),
                    Catch::Contains("attention") && Catch::Contains("[2, 2, 6, 4]"));
  CHECK_THROWS_WITH(
      attention(random_tensor({2, 5, 4}, 1), random_tensor({2, 5, 4}, 2), random_tensor({2, 5, 4}, 3), lengths, false),
      Catch::Contains("attention") && Catch::Contains("[B, H, T, dh]"));
  CHECK_THROWS_WITH(attention(q, k, v.to(DType::Float32), lengths, false),
                    Catch::Contains("attention") && Catch::Contains("dtypes differ"));
  CHECK_THROWS_WITH(attention(q, k, v, lengths_tensor({5, 0}), false),
                    Catch::Contains("attention: length 0 of example 1 is outside [1, 5]"));
  CHECK_THROWS_WITH(attention(q, k, v, lengths_tensor({6, 5}), true),
                    Catch::Contains("attention: length 6 of example 0 is outside [1, 5]"));
  CHECK_THROWS_WITH(attention(q, k, v, lengths_tensor({5, 5, 5}), false),
                    Catch::Contains("attention: lengths") && Catch::Contains("batch 2"));
  CHECK_THROWS_WITH(attention(q, k, v, Tensor::from_doubles({5, 5}, {2}, DType::Float32), false),
                    Catch::Contains("int32 or int64"));
  CHECK_THROWS_WITH(set_attention_cpu_tile(12), Catch::Contains("tile 12"));
  CHECK_THROWS_WITH(set_attention_cpu_tile(256), Catch::Contains("tile 256"));
}

TEST_CASE("the CPU tile: 128 bidirectionally and 64 causally unless set; 0 restores that") {
  CHECK(attention_cpu_tile(false) == 128);
  CHECK(attention_cpu_tile(true) == 64);
  {
    TileScope scope(32);
    CHECK(attention_cpu_tile(false) == 32);
    CHECK(attention_cpu_tile(true) == 32);
  }
  CHECK(attention_cpu_tile(false) == 128);
  CHECK(attention_cpu_tile(true) == 64);
}
