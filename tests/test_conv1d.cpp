#include <omp.h>

#include <cmath>

#include "ops/mask.h"
#include "tests/gradcheck.h"

using namespace hkt;
using hkt::testing::gradcheck;
using hkt::testing::max_abs_diff;
using hkt::testing::random_tensor;

namespace {

// Plain loops of SPEC section 2: Y[b, m, c] = bias[c] + Σ_r W[c, r] X[b, m·s + s − k + r, c].
std::vector<double> reference_conv(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t s) {
  auto vx = x.to_vector<double>(), vw = weight.to_vector<double>();
  std::vector<double> vb = bias.defined() ? bias.to_vector<double>() : std::vector<double>(x.size(2), 0.0);
  const int64_t B = x.size(0), T = x.size(1), C = x.size(2), k = weight.size(1), T_out = (T + s - 1) / s;
  std::vector<double> out;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t m = 0; m < T_out; ++m)
      for (int64_t c = 0; c < C; ++c) {
        double total = vb[c];
        for (int64_t r = 0; r < k; ++r) {
          int64_t t = m * s + s - k + r;
          if (t >= 0 && t < T) total += vw[c * k + r] * vx[(b * T + t) * C + c];
        }
        out.push_back(total);
      }
  return out;
}

struct ConvCase {
  int64_t B, T, C, k, stride;
};

const ConvCase kCases[] = {
    {1, 7, 3, 3, 2},  // T not divisible by s
    {2, 1, 2, 3, 2},  // T = 1
    {1, 2, 2, 5, 1},  // k > T
    {2, 7, 2, 1, 3},  // k < s
    {2, 6, 1, 3, 1},  // C = 1, stride 1
    {2, 10, 3, 4, 3}, {1, 5, 2, 2, 2}, {2, 8, 4, 5, 1}, {1, 9, 2, 3, 3}, {1, 1, 1, 1, 1},
    // Wider rows, for hybrid_mix's lane kernels (ops/conv1d_lanes.h: whole vectors of 16 floats or 8
    // doubles, 1 … 8 taps) and the convolutions alike; 9 taps take the mix's loops again.
    {2, 9, 16, 3, 2}, {1, 4, 16, 7, 1}, {2, 11, 32, 8, 3}, {2, 7, 16, 1, 1}, {2, 7, 16, 5, 1}, {1, 6, 16, 9, 2},
};

}  // namespace

TEST_CASE("depthwise_conv1d matches the plain loops of SPEC section 2") {
  for (DType dtype : {DType::Float32, DType::Float64})
    for (const ConvCase& c : kCases) {
      INFO(dtype_name(dtype) << " B " << c.B << " T " << c.T << " C " << c.C << " k " << c.k << " s " << c.stride);
      Tensor x = random_tensor({c.B, c.T, c.C}, 1, dtype), w = random_tensor({c.C, c.k}, 2, dtype),
             bias = random_tensor({c.C}, 3, dtype);
      const double tolerance = dtype == DType::Float32 ? 1e-5 : 1e-13;
      Tensor y = depthwise_conv1d(x, w, bias, c.stride);
      CHECK(y.shape() == Shape{c.B, (c.T + c.stride - 1) / c.stride, c.C});
      CHECK(max_abs_diff(y, reference_conv(x, w, bias, c.stride)) < tolerance);
      CHECK(max_abs_diff(depthwise_conv1d(x, w, Tensor(), c.stride), reference_conv(x, w, Tensor(), c.stride)) <
            tolerance);
    }
}

TEST_CASE("depthwise_conv1d with stride 1 is the causal convolution of SPEC section 4") {
  const int64_t T = 9, C = 3, kc = 5;
  Tensor v = random_tensor({1, T, C}, 4), w = random_tensor({C, kc}, 5), bias = random_tensor({C}, 6);
  auto vv = v.to_vector<double>(), vw = w.to_vector<double>(), vb = bias.to_vector<double>();
  std::vector<double> expected;
  for (int64_t i = 0; i < T; ++i)
    for (int64_t c = 0; c < C; ++c) {
      double total = vb[c];
      for (int64_t r = 0; r < kc; ++r)
        if (i - kc + 1 + r >= 0) total += vw[c * kc + r] * vv[(i - kc + 1 + r) * C + c];
      expected.push_back(total);
    }
  CHECK(max_abs_diff(depthwise_conv1d(v, w, bias, 1), expected) < 1e-13);
}

TEST_CASE("depthwise_conv1d: gradients for edge shapes and strides") {
  for (const ConvCase& c : kCases) {
    INFO("B " << c.B << " T " << c.T << " C " << c.C << " k " << c.k << " s " << c.stride);
    Tensor x = random_tensor({c.B, c.T, c.C}, 7), w = random_tensor({c.C, c.k}, 8), bias = random_tensor({c.C}, 9);
    const int64_t s = c.stride;
    gradcheck([s](const std::vector<Tensor>& in) { return depthwise_conv1d(in[0], in[1], in[2], s); }, {x, w, bias});
    gradcheck([s](const std::vector<Tensor>& in) { return depthwise_conv1d(in[0], in[1], Tensor(), s); }, {x, w});
  }
}

TEST_CASE("depthwise_conv1d output m depends on no input after (m+1)·s − 1") {
  for (const ConvCase& c : kCases) {
    INFO("B " << c.B << " T " << c.T << " C " << c.C << " k " << c.k << " s " << c.stride);
    Tensor x = random_tensor({c.B, c.T, c.C}, 10), w = random_tensor({c.C, c.k}, 11), bias = random_tensor({c.C}, 12);
    auto before = depthwise_conv1d(x, w, bias, c.stride).to_vector<double>();
    const int64_t T_out = (c.T + c.stride - 1) / c.stride;
    for (int64_t t = 0; t < c.T; ++t) {
      Tensor perturbed = x.clone();
      double* data = perturbed.data<double>();
      for (int64_t b = 0; b < c.B; ++b)
        for (int64_t ch = 0; ch < c.C; ++ch) data[(b * c.T + t) * c.C + ch] += 1.0;
      auto after = depthwise_conv1d(perturbed, w, bias, c.stride).to_vector<double>();
      for (int64_t b = 0; b < c.B; ++b)
        for (int64_t m = 0; m < T_out && (m + 1) * c.stride - 1 < t; ++m)
          for (int64_t ch = 0; ch < c.C; ++ch) {
            const size_t at = static_cast<size_t>((b * T_out + m) * c.C + ch);
            CHECK(after[at] == before[at]);
          }
    }
  }
}

TEST_CASE("depthwise_conv1d gradients do not depend on the thread count") {
  Tensor x = random_tensor({4, 300, 64}, 13, DType::Float32).requires_grad_(true);
  Tensor w = random_tensor({64, 3}, 14, DType::Float32).requires_grad_(true);
  Tensor bias = random_tensor({64}, 15, DType::Float32).requires_grad_(true);
  Tensor weights = random_tensor({4, 150, 64}, 16, DType::Float32);
  std::vector<std::vector<float>> grads;
  const int threads = omp_get_max_threads();
  for (int n : {1, 2, 4}) {
    omp_set_num_threads(n);
    for (const Tensor& t : {x, w, bias}) t.zero_grad();
    sum(mul(depthwise_conv1d(x, w, bias, 2), weights)).backward();
    std::vector<float> all;
    for (const Tensor& t : {x, w, bias})
      for (float v : t.grad().to_vector<float>()) all.push_back(v);
    grads.push_back(all);
  }
  omp_set_num_threads(threads);
  CHECK(grads[0] == grads[1]);
  CHECK(grads[0] == grads[2]);
}

TEST_CASE("the masked convolution and the mix with lengths give the same values and gradients for any thread count") {
  // Lengths out of order: the kernels deal sequences out longest first (longest_first) and must still
  // sum the per-sequence partials in batch order.
  const int64_t B = 6, T = 64, C = 32;
  const Tensor lengths = Tensor::from_vector(std::vector<int64_t>{40, 64, 0, 17, 64, 3}, {B});
  const Tensor coarse_rows = Tensor::from_vector(std::vector<int64_t>{20, 32, 0, 9, 31, 2}, {B});
  const Tensor x = random_tensor({B, T, C}, 50, DType::Float32), a = random_tensor({B, T, C}, 51, DType::Float32);
  const Tensor w = random_tensor({C, 3}, 52, DType::Float32), wc = random_tensor({C, 5}, 53, DType::Float32);
  const Tensor bias = random_tensor({C}, 54, DType::Float32), gates = sigmoid(random_tensor({C}, 55, DType::Float32));
  const Tensor down_weights = random_tensor({B, T / 2, C}, 56, DType::Float32);
  const Tensor mix_weights = random_tensor({B, T, C}, 57, DType::Float32);
  const int threads = num_threads();
  auto run = [&](int t) {
    set_num_threads(t);
    std::vector<Tensor> leaves;
    for (const Tensor& leaf : {x, a, w, wc, bias, gates}) leaves.push_back(leaf.detach().clone().requires_grad_(true));
    Tensor down = depthwise_conv1d_masked(leaves[0], leaves[2], leaves[4], 2, coarse_rows);
    Tensor mixed = hybrid_mix(leaves[1], leaves[0], leaves[3], leaves[4], leaves[5], lengths);
    add(sum(mul(down, down_weights)), sum(mul(mixed, mix_weights))).backward();
    std::vector<std::vector<float>> out{down.to_vector<float>(), mixed.to_vector<float>()};
    for (const Tensor& leaf : leaves) out.push_back(leaf.grad().to_vector<float>());
    return out;
  };
  const auto one = run(1), two = run(2), four = run(4);
  set_num_threads(threads);
  CHECK(one == two);
  CHECK(one == four);
}

TEST_CASE("depthwise_conv1d's backward adds dX into the gradient its input already has") {
  // x feeds a linear and a strided convolution (HKT's level inputs): whichever backward runs
  // second adds into the first's gradient (autograd's take_gradient_sum). The order of add's
  // operands decides which runs first; both orders are checked.
  for (bool conv_first : {true, false})
  for (const ConvCase& c : kCases) {
    INFO("B " << c.B << " T " << c.T << " C " << c.C << " k " << c.k << " s " << c.stride << " conv first "
              << conv_first);
    const Tensor x = random_tensor({c.B, c.T, c.C}, 16), w = random_tensor({c.C, c.k}, 17);
    // Scaled by 1/√C: the squared loss's curvature stays the same for every width, and with it the finite
    // differences' error.
    const Tensor proj = mul(random_tensor({c.C, c.C}, 18), 1.0 / std::sqrt(static_cast<double>(c.C)));
    gradcheck(
        [&](const std::vector<Tensor>& in) {
          Tensor h = mul(in[0], 1.5);
          Tensor down = depthwise_conv1d(h, in[1], Tensor(), c.stride);
          Tensor mixed = linear(h, proj);
          return conv_first ? add(sum(down), sum(mul(mixed, mixed))) : add(sum(mul(mixed, mixed)), sum(down));
        },
        {x, w});
  }
}

TEST_CASE("depthwise_conv1d rejects bad input with the op and shapes named") {
  Tensor x = Tensor::zeros({2, 5, 4});
  REQUIRE_THROWS_WITH(depthwise_conv1d(x, Tensor::zeros({3, 3}), Tensor(), 1),
                      "depthwise_conv1d: input [2, 5, 4] but weight [3, 3]");
  REQUIRE_THROWS_WITH(depthwise_conv1d(x, Tensor::zeros({4, 3}), Tensor::zeros({5}), 1),
                      "depthwise_conv1d: weight [4, 3] but bias [5]");
  REQUIRE_THROWS_WITH(depthwise_conv1d(x, Tensor::zeros({4, 3}), Tensor(), 0),
                      "depthwise_conv1d: stride 0 must be positive");
  REQUIRE_THROWS_WITH(depthwise_conv1d(x, Tensor::zeros({4, 3}), Tensor(), -2),
                      "depthwise_conv1d: stride -2 must be positive");
  REQUIRE_THROWS_WITH(depthwise_conv1d(x, Tensor::zeros({4, 0}), Tensor(), 1),
                      "depthwise_conv1d: weight [4, 0] has kernel size 0");
  REQUIRE_THROWS_WITH(depthwise_conv1d(Tensor::zeros({5, 4}), Tensor::zeros({4, 3}), Tensor(), 1),
                      "depthwise_conv1d: input [5, 4] is not 3-D [B, T, C]");
  REQUIRE_THROWS_WITH(depthwise_conv1d(x, Tensor::zeros({4, 3}, DType::Float64), Tensor(), 1),
                      "depthwise_conv1d: dtypes differ: float32[2, 5, 4] on cpu, float64[4, 3] on cpu");
  REQUIRE_THROWS_WITH(depthwise_conv1d(x, Tensor(), Tensor(), 1), "depthwise_conv1d: weight is an undefined tensor");
}

TEST_CASE("depthwise_conv1d_masked is depthwise_conv1d with the rows past lengths 0, in value and gradient") {
  // Output lengths 0, 1, T_out − 1 and T_out; a loss on the masked rows too (they are constant 0: no gradient),
  // and dX added into a gradient x already has (x also feeds a product).
  const int64_t batch = 4, length = 9, channels = 5, k = 3, stride = 2, out_length = 5;
  const std::vector<int64_t> valid = {0, 1, out_length - 1, out_length};
  const Tensor lengths = Tensor::from_vector(valid, {batch});
  const Tensor rows = hkt::testing::valid_rows_mask(valid, out_length);
  const Tensor x = random_tensor({batch, length, channels}, 40), w = random_tensor({channels, k}, 41),
               bias = random_tensor({channels}, 42);
  gradcheck([&](const std::vector<Tensor>& in) { return depthwise_conv1d_masked(in[0], in[1], in[2], stride, lengths); },
            {x, w, bias});
  gradcheck(
      [&](const std::vector<Tensor>& in) {
        return add(sum(depthwise_conv1d_masked(in[0], in[1], Tensor(), stride, lengths)), sum(mul(in[0], in[0])));
      },
      {x, w});
  for (DType dtype : {DType::Float32, DType::Float64}) {
    INFO(dtype_name(dtype));
    std::vector<Tensor> masked_in, composed_in;
    for (const Tensor& t : {x, w, bias}) {
      masked_in.push_back(t.to(dtype).detach().requires_grad_(true));
      composed_in.push_back(t.to(dtype).detach().requires_grad_(true));
    }
    const Tensor g = random_tensor({batch, out_length, channels}, 43, dtype);
    Tensor masked = depthwise_conv1d_masked(masked_in[0], masked_in[1], masked_in[2], stride, lengths);
    Tensor composed = mul(depthwise_conv1d(composed_in[0], composed_in[1], composed_in[2], stride), rows.to(dtype));
    CHECK(max_abs_diff(masked, composed) == 0.0);
    masked.backward(g);
    composed.backward(g);
    const double tolerance = dtype == DType::Float32 ? 1e-5 : 1e-13;  // dW and dbias sum fewer terms
    for (size_t i = 0; i < masked_in.size(); ++i) CHECK(max_abs_diff(masked_in[i].grad(), composed_in[i].grad()) < tolerance);
  }
  REQUIRE_THROWS_WITH(depthwise_conv1d_masked(x, w, bias, stride, Tensor::from_vector(std::vector<int64_t>{1, 2, 6, 0}, {4})),
                      "depthwise_conv1d_masked: length 6 of example 2 is outside [0, 5]");
  REQUIRE_THROWS_WITH(depthwise_conv1d_masked(x, w, bias, stride, Tensor::from_vector(std::vector<int64_t>{1, 2}, {2})),
                      "depthwise_conv1d_masked: lengths int64[2] but batch 4 (expected [4])");
  REQUIRE_THROWS_WITH(depthwise_conv1d_masked(x, Tensor::zeros({3, 3}, DType::Float64), bias, stride, lengths),
                      "depthwise_conv1d_masked: input [4, 9, 5] but weight [3, 3]");
}

// ---- hybrid_mix: the hybrid head's β ⊙ A + (1 − β) ⊙ conv(V) as one op -------------------------

namespace {

// The composition hybrid_mix replaces (ops/hybrid_mix.h).
Tensor composed_mix(const std::vector<Tensor>& in) {
  return lerp(depthwise_conv1d(in[1], in[2], in[3], 1), in[0], in[4]);
}

std::vector<Tensor> mix_inputs(const ConvCase& c, DType dtype) {
  return {random_tensor({c.B, c.T, c.C}, 30, dtype), random_tensor({c.B, c.T, c.C}, 31, dtype),
          random_tensor({c.C, c.k}, 32, dtype), random_tensor({c.C}, 33, dtype),
          sigmoid(random_tensor({c.C}, 34, dtype))};
}

}  // namespace

// kCases' wider rows take the lane kernels (ops/conv1d_lanes.h: whole vectors
// of 16 floats or 8 doubles, 1 … 8 taps), the rest the row-at-a-time loops.
// The first sequence of each case is padded by 3 rows: a tail shorter and
// longer than k − 1 rows.
TEST_CASE("hybrid_mix equals lerp(depthwise_conv1d(V, W, b, 1), A, β) with and without lengths, and passes gradcheck") {
  for (const ConvCase& c : kCases) {
    INFO("B " << c.B << " T " << c.T << " C " << c.C << " k " << c.k);
    std::vector<int64_t> valid(static_cast<size_t>(c.B), c.T);
    valid[0] = std::max<int64_t>(0, c.T - 3);
    const Tensor lengths = Tensor::from_vector(valid, {c.B});
    for (DType dtype : {DType::Float32, DType::Float64}) {
      const std::vector<Tensor> in = mix_inputs(c, dtype);
      const double tolerance = dtype == DType::Float32 ? 1e-6 : 1e-14;
      CHECK(max_abs_diff(hybrid_mix(in[0], in[1], in[2], in[3], in[4]), composed_mix(in).to_vector<double>()) <=
            tolerance);
      CHECK(max_abs_diff(hybrid_mix(in[0], in[1], in[2], Tensor(), in[4]),
                         lerp(depthwise_conv1d(in[1], in[2], Tensor(), 1), in[0], in[4]).to_vector<double>()) <=
            tolerance);
      CHECK(max_abs_diff(hybrid_mix(in[0], in[1], in[2], in[3], in[4], lengths),
                         zero_padded_rows(composed_mix(in), lengths).to_vector<double>()) <= tolerance);
    }
    const std::vector<Tensor> in = mix_inputs(c, DType::Float64);
    gradcheck([](const std::vector<Tensor>& x) { return hybrid_mix(x[0], x[1], x[2], x[3], x[4]); }, in);
    gradcheck([](const std::vector<Tensor>& x) { return hybrid_mix(x[0], x[1], x[2], Tensor(), x[3]); },
              {in[0], in[1], in[2], in[4]});
    gradcheck([&](const std::vector<Tensor>& x) { return hybrid_mix(x[0], x[1], x[2], Tensor(), x[3], lengths); },
              {in[0], in[1], in[2], in[4]});
  }
}

TEST_CASE("hybrid_mix's gradients equal the composition's, V's added to what V already has, for any thread count") {
  // V also feeds another op (the attention, in HKT): both orders of the backward, 1 and 2 threads.
  const ConvCase c{3, 200, 64, 5, 1};
  const std::vector<Tensor> in = mix_inputs(c, DType::Float32);
  const Tensor weights = random_tensor({c.B, c.T, c.C}, 35, DType::Float32);
  const int threads = num_threads();
  for (bool fused : {true, false})
    for (bool mix_first : {true, false}) {
      auto grads = [&](int t) {
        set_num_threads(t);
        std::vector<Tensor> leaves;
        for (const Tensor& x : in) leaves.push_back(x.detach().clone().requires_grad_(true));
        Tensor v = mul(leaves[1], 1.5);  // not a leaf: autograd sums its two gradients
        Tensor mixed = fused ? hybrid_mix(leaves[0], v, leaves[2], leaves[3], leaves[4])
                             : composed_mix({leaves[0], v, leaves[2], leaves[3], leaves[4]});
        Tensor other = mul(v, v);
        Tensor loss = mix_first ? add(sum(mul(mixed, weights)), sum(other)) : add(sum(other), sum(mul(mixed, weights)));
        loss.backward();
        std::vector<Tensor> out;
        for (const Tensor& leaf : leaves) out.push_back(leaf.grad());
        return out;
      };
      const auto one = grads(1), two = grads(2);
      set_num_threads(threads);
      for (size_t i = 0; i < one.size(); ++i) {
        INFO("fused " << fused << ", mix first " << mix_first << ", input " << i);
        CHECK(one[i].to_vector<double>() == two[i].to_vector<double>());
      }
      if (!fused) continue;
      // Against the composition in float64.
      std::vector<Tensor> exact;
      {
        std::vector<Tensor> leaves;
        for (const Tensor& x : in) leaves.push_back(x.to(DType::Float64).detach().requires_grad_(true));
        Tensor v = mul(leaves[1], 1.5);
        Tensor loss = add(sum(mul(composed_mix({leaves[0], v, leaves[2], leaves[3], leaves[4]}),
                                  weights.to(DType::Float64))),
                          sum(mul(v, v)));
        loss.backward();
        for (const Tensor& leaf : leaves) exact.push_back(leaf.grad());
      }
      for (size_t i = 0; i < one.size(); ++i) {
        INFO("input " << i);
        CHECK(hkt::testing::relative_diff(one[i].to(DType::Float64), exact[i]) <= 1e-5);
      }
    }
}

TEST_CASE("hybrid_mix rejects bad input with the op and shapes named") {
  const Tensor a = Tensor::zeros({2, 5, 4}), v = Tensor::zeros({2, 5, 4}), w = Tensor::zeros({4, 3});
  const Tensor b = Tensor::zeros({4}), gates = Tensor::zeros({4});
  CHECK_THROWS_WITH(hybrid_mix(Tensor::zeros({2, 4, 4}), v, w, b, gates),
                    "hybrid_mix: attended [2, 4, 4] and values [2, 5, 4] differ (they must have one shape)");
  CHECK_THROWS_WITH(hybrid_mix(a, v, Tensor::zeros({3, 3}), b, gates),
                    "hybrid_mix: values [2, 5, 4] but weight [3, 3] (expected [C, k], k > 0)");
  CHECK_THROWS_WITH(hybrid_mix(a, v, w, b, Tensor::zeros({2, 4})),
                    "hybrid_mix: values [2, 5, 4] but gates [2, 4] (expected one per channel, [C])");
  CHECK_THROWS_WITH(hybrid_mix(a, v, w, Tensor::zeros({5}), gates), "hybrid_mix: values [2, 5, 4] but bias [5]");
  CHECK_THROWS_WITH(hybrid_mix(Tensor::zeros({5, 4}), Tensor::zeros({5, 4}), w, b, gates),
                    "hybrid_mix: values [5, 4] is not 3-D [B, T, C]");
}

TEST_CASE("depthwise_conv1d and hybrid_mix: output rows whose gradient is zero are skipped, exactly") {
  // A training step's padded positions: each sequence's last rows (and here one row inside) get gradient
  // exactly 0. The backward skips them; the gradients must still be those of finite differences, also
  // with V's gradient added to the one it already has (accumulate) and with dX zeroed first.
  const ConvCase c{3, 12, 4, 3, 1};
  std::vector<double> keep(c.B * c.T * c.C, 1.0);
  const int64_t valid[] = {12, 7, 1};
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t t = 0; t < c.T; ++t)
      if (t >= valid[b] || (b == 0 && t == 4))
        for (int64_t ch = 0; ch < c.C; ++ch) keep[(b * c.T + t) * c.C + ch] = 0.0;
  const Tensor rows = Tensor::from_doubles(keep, {c.B, c.T, c.C}, DType::Float64);
  const std::vector<Tensor> in = mix_inputs(c, DType::Float64);
  gradcheck([&](const std::vector<Tensor>& x) { return mul(hybrid_mix(x[0], x[1], x[2], x[3], x[4]), rows); }, in);
  gradcheck(
      [&](const std::vector<Tensor>& x) {
        Tensor v = mul(x[1], 1.5);  // two consumers: V's gradient is added to
        return add(mul(hybrid_mix(x[0], v, x[2], x[3], x[4]), rows), mul(v, v));
      },
      in);
  for (int64_t stride : {1, 2}) {
    INFO("stride " << stride);
    const int64_t t_out = (c.T + stride - 1) / stride;
    const Tensor out_rows = slice(rows, 1, 0, t_out);
    gradcheck([&](const std::vector<Tensor>& x) { return mul(depthwise_conv1d(x[0], x[1], x[2], stride), out_rows); },
              {in[1], in[2], in[3]});
  }
}

TEST_CASE("hybrid_mix with lengths: padded rows 0 in value and gradient, valid rows as without") {
  // Lengths 12 (none padded), 7 and 0 (all padded); a loss on every row, padded ones too: they are
  // constant 0, so nothing flows from them. Against the composition with the padded rows zeroed.
  const ConvCase c{3, 12, 4, 3, 1};
  const std::vector<int64_t> valid = {12, 7, 0};
  const Tensor lengths = Tensor::from_vector(valid, {c.B});
  const Tensor rows = hkt::testing::valid_rows_mask(valid, c.T);
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const std::vector<Tensor> in = mix_inputs(c, dtype);
    const Tensor masked = hybrid_mix(in[0], in[1], in[2], in[3], in[4], lengths);
    CHECK(max_abs_diff(masked, mul(hybrid_mix(in[0], in[1], in[2], in[3], in[4]), rows.to(dtype))) == 0.0);
  }
  const std::vector<Tensor> in = mix_inputs(c, DType::Float64);
  gradcheck([&](const std::vector<Tensor>& x) { return hybrid_mix(x[0], x[1], x[2], x[3], x[4], lengths); }, in);
  gradcheck(
      [&](const std::vector<Tensor>& x) {
        Tensor v = mul(x[1], 1.5);  // two consumers: V's gradient is added to
        return add(hybrid_mix(x[0], v, x[2], x[3], x[4], lengths), mul(v, v));
      },
      in);
  CHECK_THROWS_WITH(hybrid_mix(in[0], in[1], in[2], in[3], in[4], Tensor::from_vector(std::vector<int64_t>{1, 13, 2}, {3})),
                    "hybrid_mix: length 13 of example 1 is outside [0, 12]");
}
