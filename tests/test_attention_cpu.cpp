// The CPU attention paths (ops/attention_cpu.h): every path this build has
// and this CPU runs — "avx512", "avx2" and always "plain" — is checked here,
// so each stays tested on any machine (a path the CPU lacks is reported and
// skipped). The building blocks against plain loops: the micro-kernel GEMM on
// odd sizes in both operand orientations, the vectorised exp and exp2 against
// std::exp and std::exp2.
// Then both fused ops in float32 on each path against the float64 composed
// references, at the head widths the SIMD paths serve, and bitwise
// independence of the thread count.
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <iostream>
#include <limits>
#include <random>

#include "ops/attention_cpu.h"
#include "ops/attention_reference.h"
#include "tests/attention_test_util.h"
#include "tests/gradcheck.h"

using namespace hkt;
using hkt::testing::lengths_tensor;
using hkt::testing::PathScope;
using hkt::testing::random_tensor;
using hkt::testing::relative_diff;
using hkt::testing::ThreadScope;
using hkt::testing::TileScope;

namespace {

std::vector<const attention_cpu::Path*> paths_under_test() {
  static const bool reported = [] {
    std::string names;
    for (const auto* path : attention_cpu::available_paths()) names += std::string(" ") + path->name;
    std::cout << "attention CPU paths tested on this CPU:" << names << "\n";
    if (!attention_cpu::avx512_path() || attention_cpu::available_paths().size() < 3)
      std::cout << "  (paths this build or CPU lacks are skipped: avx512 needs AVX-512F, avx2 needs AVX2 and FMA)\n";
    return true;
  }();
  (void)reported;
  return attention_cpu::available_paths();
}

std::vector<float> random_floats(size_t count, uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> values(count);
  for (float& x : values) x = uniform(generator);
  return values;
}

}  // namespace

TEST_CASE("transposed packing of key and value tiles equals a plain loop, whole W x W blocks and the edges") {
  for (const auto* path : paths_under_test())
    for (int64_t count : {1, 7, 16, 17, 33, 128})
      for (int64_t dh : {1, 8, 16, 24, 32}) {
        INFO(path->name << " count " << count << " dh " << dh);
        const int64_t stride = dh + 3, ld = count + 5;
        const std::vector<float> rows = random_floats(count * stride, 1);
        std::vector<float> packed = random_floats(dh * ld, 2);
        path->pack_transposed(rows.data(), count, dh, stride, ld, packed.data());
        int wrong = 0;
        for (int64_t d = 0; d < dh; ++d)
          for (int64_t c = 0; c < ld; ++c) wrong += packed[d * ld + c] != (c < count ? rows[c * stride + d] : 0.0f);
        CHECK(wrong == 0);
        std::vector<float> unpacked = random_floats(count * stride, 3), expected = unpacked;
        for (int64_t c = 0; c < count; ++c)
          for (int64_t d = 0; d < dh; ++d) expected[c * stride + d] = packed[d * ld + c];
        path->unpack_transposed(packed.data(), count, dh, ld, stride, unpacked.data());
        CHECK(unpacked == expected);  // and the padding between rows untouched
      }
}

TEST_CASE("attention micro-kernel GEMM equals a plain loop on odd sizes, both A orientations, with and without a bias row") {
  for (const auto* path : paths_under_test()) {
    const int64_t width = path->width;
    for (int64_t rows : {1, 7, 63, 65, 130})
      for (int64_t depth : {1, 7, 63, 65, 130})
        for (int64_t cols : {width, 2 * width, 3 * width, 4 * width, 5 * width, 16 * ((width + 15) / 16) * 8})
          for (bool transposed : {false, true})
            for (int mode : {0, 1, 2}) {  // C = αAB, C += αAB, C = αAB + a bias row
              const bool accumulate = mode == 1;
              const std::vector<float> bias = mode == 2 ? random_floats(cols, 4) : std::vector<float>();
              // A is [rows, depth], stored as such or transposed; B [depth, cols] with a wider row.
              const int64_t ldb = cols + 3, ldc = cols + 5;
              std::vector<float> a = random_floats(rows * depth, 1), b = random_floats(depth * ldb, 2);
              std::vector<float> c = random_floats(rows * ldc, 3), expected = c;
              const int64_t a_row = transposed ? 1 : depth, a_col = transposed ? rows : 1;
              const float alpha = 0.75f;
              for (int64_t m = 0; m < rows; ++m)
                for (int64_t n = 0; n < cols; ++n) {
                  double total = 0;
                  for (int64_t k = 0; k < depth; ++k)
                    total += double(a[m * a_row + k * a_col]) * double(b[k * ldb + n]);
                  const double start = accumulate ? expected[m * ldc + n] : bias.empty() ? 0.0 : bias[n];
                  expected[m * ldc + n] = float(start + alpha * total);
                }
              path->gemm(rows, cols, depth, a.data(), a_row, a_col, b.data(), ldb, c.data(), ldc, alpha, accumulate,
                         bias.empty() ? nullptr : bias.data());
              double worst = 0;
              for (int64_t m = 0; m < rows; ++m)
                for (int64_t n = 0; n < ldc; ++n) {
                  const double error = std::abs(double(c[m * ldc + n]) - double(expected[m * ldc + n]));
                  if (n >= cols) CHECK(error == 0);  // columns past cols untouched
                  worst = std::max(worst, error);
                }
              INFO(path->name << " rows " << rows << " cols " << cols << " depth " << depth
                              << (transposed ? " transposed" : "") << (accumulate ? " accumulate" : "")
                              << (bias.empty() ? "" : " bias"));
              CHECK(worst <= 1e-5 * std::sqrt(double(depth)) + 1e-6);
            }
  }
}

namespace {

using VectorMap = void (*)(const float* in, float* out, int64_t count);

// The worst relative error of a path's vectorised function against the
// double-precision one, over `inputs`.
double worst_relative_error(VectorMap fn, double (*exact)(double), const std::vector<float>& inputs) {
  std::vector<float> outputs(inputs.size());
  fn(inputs.data(), outputs.data(), static_cast<int64_t>(inputs.size()));
  double worst = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const double expected = exact(double(inputs[i]));
    worst = std::max(worst, std::abs(double(outputs[i]) - expected) / expected);
  }
  return worst;
}

// Masked and far-below-maximum scores: exactly 0 below `subnormal_from`
// (a subnormal from libm above it, 0 from the SIMD paths), NaN stays NaN,
// and positive inputs past float's range give at least 2^127.
void check_edges(VectorMap fn, float subnormal_from, std::vector<float> edge) {
  const float inf = std::numeric_limits<float>::infinity();
  edge.insert(edge.end(), {-inf, -1e30f, -1000.0f, std::nanf("")});
  edge.insert(edge.end(), 12, -inf);  // a whole vector of masked keys
  std::vector<float> out(edge.size());
  fn(edge.data(), out.data(), static_cast<int64_t>(edge.size()));
  for (size_t i = 0; i < edge.size(); ++i) {
    INFO("input " << edge[i]);
    if (std::isnan(edge[i]))
      CHECK(std::isnan(out[i]));
    else if (edge[i] > 0)
      CHECK(out[i] >= 0x1p127f);  // inf, or 2^127 where the AVX2 exp2 clamps
    else if (edge[i] >= subnormal_from)
      CHECK(out[i] < std::numeric_limits<float>::min());
    else
      CHECK(out[i] == 0.0f);
  }
}

std::vector<float> range_and(float first, float last, float step, std::initializer_list<float> extra) {
  std::vector<float> inputs;
  for (float x = first; x <= last; x += step) inputs.push_back(x);
  inputs.insert(inputs.end(), extra);
  return inputs;
}

}  // namespace

TEST_CASE("the vectorised exp matches std::exp over the range the kernels use, and underflows to exactly 0") {
  for (const auto* path : paths_under_test()) {
    INFO(path->name);
    // Scores minus the row maximum (≤ 0), and slightly above 0.
    const double worst = worst_relative_error(
        path->exp, [](double x) { return std::exp(x); },
        range_and(-87.0f, 10.0f, 0.00731f, {0.0f, -0.0f, 1e-30f, -1e-30f, 1.0f, -1.0f, -87.33f}));
    std::cout << path->name << " exp: worst relative error " << worst << " over [-87, 10]\n";
    CHECK(worst <= 3e-7);  // ≤ 2.5 ulp of float
    check_edges(path->exp, -89.0f, {-89.0f, -88.0f});
  }
}

TEST_CASE("the softmax's vectorised exp2 matches std::exp2, is exactly 1 at 0, and underflows to exactly 0") {
  for (const auto* path : paths_under_test()) {
    INFO(path->name);
    // Base-2 scores minus the row maximum (≤ 0), and slightly above 0 (rounding in the backward's S − lse).
    const double worst = worst_relative_error(
        path->exp2, [](double x) { return std::exp2(x); },
        range_and(-125.9f, 14.0f, 0.01057f,
                  {-0.0f, 1e-30f, -1e-30f, 0.5f, -0.5f, 0.49999997f, -0.50000006f, 1.0f, -1.0f, -126.0f}));
    std::cout << path->name << " exp2: worst relative error " << worst << " over [-126, 14]\n";
    CHECK(worst <= 2e-7);  // ≤ 2 ulp of float (measured 1.0e-7 for the polynomial alone)
    const float zero = 0.0f;
    float one = -1.0f;
    path->exp2(&zero, &one, 1);
    CHECK(one == 1.0f);  // P = 1 exactly at a row's maximum
    check_edges(path->exp2, -150.0f, {-127.5f, -126.5f, 200.0f});
  }
}

TEST_CASE("the vectorised GELU and its backward match x Φ(x) in double to 3e-6 relative for x ≥ −5") {
  for (const auto* path : paths_under_test()) {
    INFO(path->name);
    std::vector<float> x, g;
    for (float v = -12.0f; v <= 12.0f; v += 0.00917f) x.push_back(v);
    for (float v : {0.0f, -0.0f, 1e-20f, -1e-20f, 30.0f, -13.5f}) x.push_back(v);
    x.push_back(0.5f);  // an odd count: the tail runs too
    const std::vector<float> grad = random_floats(x.size(), 9);
    std::vector<float> y(x.size()), dx(x.size());
    path->gelu(x.data(), y.data(), static_cast<int64_t>(x.size()));
    path->gelu_backward(x.data(), grad.data(), dx.data(), static_cast<int64_t>(x.size()));
    double worst = 0, worst_backward = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double xi = x[i], cdf = 0.5 * std::erfc(-xi / std::sqrt(2.0));
      const double pdf = std::exp(-0.5 * xi * xi) / std::sqrt(2.0 * M_PI);
      const double exact = xi * cdf, exact_backward = double(grad[i]) * (cdf + xi * pdf);
      // Relative error where the result is a normal float; the backward's
      // Φ(x) + x φ(x) crosses 0 near x = −0.75, so there it is relative to |grad|.
      // Far in the left tail (x < −5, GELU < 1e-6) the float rounding of −x²/2
      // inside exp dominates: up to ~1e-5 relative on values below 1e-6.
      const double error = std::abs(y[i] - exact) / std::max(std::abs(exact), 1e-300);
      if (std::abs(exact) < 1e-30)
        CHECK(std::abs(y[i]) <= 1e-30);
      else if (xi >= -5.0)
        worst = std::max(worst, error);
      else
        CHECK(error <= 1e-4);
      worst_backward = std::max(worst_backward, std::abs(dx[i] - exact_backward) /
                                                    std::max(std::abs(exact_backward), 0.1 * std::abs(double(grad[i]))));
      if (xi == 0) CHECK(y[i] == 0.0f);
    }
    std::cout << path->name << " gelu: worst relative error " << worst << ", backward " << worst_backward << "\n";
    CHECK(worst <= 3e-6);  // measured 1.7e-6 near x = −5 (ulp of x²/2 inside exp)
    CHECK(worst_backward <= 1e-6);
    // The kernels run 4 vectors per step, then single vectors, then a padded
    // tail: every element must come out the same whichever part computed it.
    const int64_t w = path->width;
    for (int64_t n : {int64_t(1), w - 1, w, w + 3, 3 * w + 5, 4 * w, 5 * w + 1, 9 * w - 1}) {
      if (n < 1) continue;
      std::vector<float> part(n), part_dx(n);
      const int64_t offset = 7;  // unaligned, and other values than the first ones
      path->gelu(x.data() + offset, part.data(), n);
      path->gelu_backward(x.data() + offset, grad.data() + offset, part_dx.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        CHECK(part[i] == y[offset + i]);
        CHECK(part_dx[i] == dx[offset + i]);
      }
    }
    const float nan = std::nanf("");
    float out = 0;
    path->gelu(&nan, &out, 1);
    CHECK(std::isnan(out));
    // A gradient that is 0 over whole vectors (a training step's padded rows) gives exactly 0 there,
    // whichever part of the loop meets it; a vector with one nonzero lane, or a NaN, is computed in full.
    std::vector<float> sparse = grad;
    const int64_t zeros = 9 * w + 5, lone = 5 * w + 2;
    for (int64_t i = 0; i < zeros; ++i) sparse[i] = 0.0f;
    sparse[lone] = grad[lone];
    std::vector<float> sparse_dx(zeros + 1);
    path->gelu_backward(x.data(), sparse.data(), sparse_dx.data(), zeros + 1);
    for (int64_t i = 0; i < zeros + 1; ++i) {
      INFO("element " << i);
      float single = 0;
      path->gelu_backward(x.data() + i, sparse.data() + i, &single, 1);  // the tail, one element
      CHECK(sparse_dx[i] == single);
      if (i != lone && i < zeros) CHECK(sparse_dx[i] == 0.0f);
    }
    CHECK(sparse_dx[lone] == dx[lone]);
    sparse[lone] = nan;
    path->gelu_backward(x.data(), sparse.data(), sparse_dx.data(), zeros);
    CHECK(std::isnan(sparse_dx[lone]));
  }
}

namespace {

// Output and gradients of Σ out ⊙ weights for fresh leaves.
template <class F>
std::vector<Tensor> run(F&& f, const std::vector<Tensor>& inputs, const Tensor& weights) {
  std::vector<Tensor> leaves;
  for (const Tensor& t : inputs) leaves.push_back(t.detach().clone().requires_grad_(true));
  Tensor out = f(leaves);
  sum(mul(out, weights)).backward();
  std::vector<Tensor> results{out.detach()};
  for (const Tensor& leaf : leaves) results.push_back(leaf.grad());
  return results;
}

std::vector<Tensor> cast_all(const std::vector<Tensor>& tensors, DType dtype) {
  std::vector<Tensor> out;
  for (const Tensor& t : tensors) out.push_back(t.to(dtype));
  return out;
}

// inputs: q_0..q_{L-1}, k_0..k_{L-1}, v, level_logits (MHA: q, k, v).
std::vector<Tensor> random_inputs(int64_t batch, int64_t length, int64_t levels, int64_t stride, int64_t head_dim,
                                  bool mha) {
  std::vector<Tensor> q, k;
  uint64_t seed = 7;
  for (int64_t l = 0; l < levels; ++l) {
    const Shape shape{batch, 2, level_length(length, l, stride), head_dim};
    q.push_back(random_tensor(shape, ++seed));
    k.push_back(random_tensor(shape, ++seed));
  }
  std::vector<Tensor> all(q);
  all.insert(all.end(), k.begin(), k.end());
  all.push_back(random_tensor({batch, 2, length, head_dim}, ++seed));
  if (!mha) all.push_back(random_tensor({2, levels}, ++seed));
  return all;
}

std::function<Tensor(const std::vector<Tensor>&)> op(bool mha, bool reference, int64_t levels, int64_t stride,
                                                     bool causal, const Tensor& lengths,
                                                     HeadLayout layout = HeadLayout::BHTD,
                                                     PaddedRows padded = PaddedRows::Attend) {
  return [=](const std::vector<Tensor>& in) {
    if (mha)
      return reference ? attention_reference(in[0], in[1], in[2], lengths, causal)
                       : attention(in[0], in[1], in[2], lengths, causal, layout, padded);
    const std::vector<Tensor> q(in.begin(), in.begin() + levels), k(in.begin() + levels, in.begin() + 2 * levels);
    const Tensor &v = in[2 * levels], &logits = in[2 * levels + 1];
    return reference ? multiscale_attention_reference(q, k, v, logits, lengths, stride, causal)
                     : multiscale_attention(q, k, v, logits, lengths, stride, causal, layout, padded);
  };
}

// 1 at the valid rows t < lengths[b] of a [B, H, T, dh] output, 0 at the padded ones: [B, 1, T, 1].
Tensor valid_rows(const std::vector<int64_t>& lengths, int64_t length, DType dtype) {
  std::vector<double> keep(lengths.size() * length, 0.0);
  for (size_t b = 0; b < lengths.size(); ++b)
    for (int64_t t = 0; t < lengths[b]; ++t) keep[b * length + t] = 1.0;
  return Tensor::from_doubles(keep, {static_cast<int64_t>(lengths.size()), 1, length, 1}, dtype);
}

// [B, H, T, dh] ↔ [B, T, H, dh]; other ranks (level_logits) unchanged.
Tensor swap_heads(const Tensor& t) { return t.dim() == 4 ? permute(t, {0, 2, 1, 3}) : t; }

}  // namespace

TEST_CASE("fused attention in float32 on every CPU path equals the float64 composed reference, L = 1 to 8") {
  for (const auto* path : paths_under_test()) {
    PathScope scope(path->name);
    for (int64_t head_dim : {16, 32, 64, 128})
      for (int64_t tile : {8, 64, 128}) {
        TileScope tiles(tile);
        for (int64_t levels : head_dim <= 32 ? std::vector<int64_t>{1, 2, 3, 4, 8} : std::vector<int64_t>{1, 3})
          for (int64_t stride : levels == 1 ? std::vector<int64_t>{2} : std::vector<int64_t>{2, 3})
            for (bool causal : {false, true}) {
              const bool mha = levels == 1;
              const int64_t length = head_dim >= 64 ? 77 : 130;
              const Tensor lengths = lengths_tensor({length, length - 9});
              const std::vector<Tensor> inputs = random_inputs(2, length, levels, stride, head_dim, mha);
              const Tensor weights = random_tensor({2, 2, length, head_dim}, 99);
              const auto expected = run(op(mha, true, levels, stride, causal, lengths), inputs, weights);
              const auto actual = run(op(mha, false, levels, stride, causal, lengths),
                                      cast_all(inputs, DType::Float32), weights.to(DType::Float32));
              REQUIRE(attention_cpu_path(head_dim) == path->name);
              for (size_t which = 0; which < actual.size(); ++which) {
                const std::string what = std::string(path->name) + (mha ? " MHA" : " HKT L=" + std::to_string(levels)) +
                                         " stride " + std::to_string(stride) + " dh " + std::to_string(head_dim) +
                                         " tile " + std::to_string(tile) + (causal ? " causal" : " bidirectional") +
                                         ": " + (which == 0 ? "output" : "gradient of input " + std::to_string(which - 1));
                // check_close's floor of 0.1 on the denominator: a level whose block spans
                // every key has a gradient that is 0 in theory (Σ_j dS_ij = 0), float32 noise here.
                hkt::testing::check_close(what, actual[which], expected[which], 1e-4);
              }
            }
      }
  }
}

// Batch 4 × 2 heads: one key chunk per head, so the backward writes the
// gradients in place and its first key tile writes dQ_l rather than adding
// to zeros, and dK_l too where the level's block divides the tile (tile 8
// with stride 3 has blocks 3 and 9 that do not). dO ends early in two
// examples, so rows past the last tile's are zeroed, not written.
TEST_CASE("fused attention gradients with one key chunk per head equal the float64 reference, blocks dividing the tile or not") {
  for (const auto* path : paths_under_test()) {
    PathScope scope(path->name);
    for (int64_t tile : {8, 64, 128}) {
      TileScope tiles(tile);
      for (int64_t levels : {2, 3})
        for (int64_t stride : {2, 3})
          for (bool causal : {false, true}) {
            const int64_t length = 130, head_dim = 16;
            const Tensor lengths = lengths_tensor({length, 121, 1, 64});
            const std::vector<Tensor> inputs = random_inputs(4, length, levels, stride, head_dim, false);
            const Tensor weights = mul(random_tensor({4, 2, length, head_dim}, 99),
                                       valid_rows({length, 97, 1, 33}, length, DType::Float64));
            const auto expected = run(op(false, true, levels, stride, causal, lengths), inputs, weights);
            const auto actual = run(op(false, false, levels, stride, causal, lengths),
                                    cast_all(inputs, DType::Float32), weights.to(DType::Float32));
            for (size_t which = 0; which < actual.size(); ++which) {
              const std::string what = std::string(path->name) + " HKT L=" + std::to_string(levels) + " stride " +
                                       std::to_string(stride) + " tile " + std::to_string(tile) +
                                       (causal ? " causal" : " bidirectional") + ": " +
                                       (which == 0 ? "output" : "gradient of input " + std::to_string(which - 1));
              hkt::testing::check_close(what, actual[which], expected[which], 1e-4);
            }
          }
    }
  }
}

// The backward stops each head's query tiles after its last row with a
// nonzero dO (the models' padded positions): that must not change a gradient,
// whatever row a head's last nonzero dO falls on — mid-tile, odd, a head of
// its own per example (so a thread's HKT query tables are rebuilt for another
// row count) — and a zero row before it must still be visited.
TEST_CASE("fused attention gradients with trailing zero rows of dO equal the float64 composed reference") {
  for (const auto* path : paths_under_test()) {
    PathScope scope(path->name);
    for (int64_t head_dim : {16, 32})
      for (int64_t tile : {8, 64}) {
        TileScope tiles(tile);
        for (int64_t levels : {1, 3})
          for (int64_t stride : levels == 1 ? std::vector<int64_t>{2} : std::vector<int64_t>{2, 3})
            for (bool causal : {false, true}) {
              const bool mha = levels == 1;
              const int64_t length = 130;
              const Tensor lengths = lengths_tensor({length, length - 9});
              const std::vector<Tensor> inputs = random_inputs(2, length, levels, stride, head_dim, mha);
              // dO = weights: rows from `last[b][h]` on are zero, and so is row 5 of every head.
              const int64_t last[2][2] = {{53, 100}, {length, 1}};
              std::vector<double> w = random_tensor({2, 2, length, head_dim}, 99).to_vector<double>();
              for (int64_t b = 0; b < 2; ++b)
                for (int64_t h = 0; h < 2; ++h)
                  for (int64_t i = 0; i < length; ++i)
                    if (i >= last[b][h] || i == 5)
                      for (int64_t d = 0; d < head_dim; ++d) w[((b * 2 + h) * length + i) * head_dim + d] = 0;
              const Tensor weights = Tensor::from_doubles(w, {2, 2, length, head_dim}, DType::Float64);
              const auto expected = run(op(mha, true, levels, stride, causal, lengths), inputs, weights);
              const auto actual = run(op(mha, false, levels, stride, causal, lengths),
                                      cast_all(inputs, DType::Float32), weights.to(DType::Float32));
              for (size_t which = 1; which < actual.size(); ++which) {
                const std::string what = std::string(path->name) + (mha ? " MHA" : " HKT L=" + std::to_string(levels)) +
                                         " stride " + std::to_string(stride) + " dh " + std::to_string(head_dim) +
                                         " tile " + std::to_string(tile) + (causal ? " causal" : " bidirectional") +
                                         ": gradient of input " + std::to_string(which - 1);
                hkt::testing::check_close(what, actual[which], expected[which], 1e-4);
              }
            }
      }
  }
}

TEST_CASE("PaddedRows::Zero: padded rows are 0, valid rows bitwise as Attend's, gradients those of the masked output") {
  // The loss weights every row, padded ones too: their gradient must not reach q, k or v.
  for (const auto* path : paths_under_test()) {
    PathScope scope(path->name);
    for (int64_t tile : {8, 64}) {
      TileScope tiles(tile);
      for (bool mha : {true, false})
        for (bool causal : {false, true})
          for (HeadLayout layout : {HeadLayout::BHTD, HeadLayout::BTHD}) {
            const int64_t levels = mha ? 1 : 3, length = 130, head_dim = 16;
            // A whole padded tile at tile 8, a tile cut mid-way, one valid row, and no padding at all.
            const std::vector<int64_t> valid = {length - 29, 1, 67, length};
            const Tensor lengths = lengths_tensor(valid);
            const std::vector<Tensor> inputs = random_inputs(4, length, levels, 2, head_dim, mha);
            const Tensor weights = random_tensor({4, 2, length, head_dim}, 99);
            auto in_layout = [&](const std::vector<Tensor>& tensors) {
              if (layout == HeadLayout::BHTD) return tensors;
              std::vector<Tensor> swapped;
              for (const Tensor& t : tensors) swapped.push_back(swap_heads(t));
              return swapped;
            };
            auto from_layout = [&](const Tensor& t) { return layout == HeadLayout::BHTD ? t : swap_heads(t); };
            const std::string what = std::string(path->name) + (mha ? " MHA" : " HKT L=3") + " tile " +
                                     std::to_string(tile) + (causal ? " causal" : " bidirectional") +
                                     (layout == HeadLayout::BTHD ? " BTHD" : " BHTD");
            const auto zero = run(op(mha, false, levels, 2, causal, lengths, layout, PaddedRows::Zero),
                                  cast_all(in_layout(inputs), DType::Float32), from_layout(weights.to(DType::Float32)));
            const auto attend = run(op(mha, false, levels, 2, causal, lengths, layout),
                                    cast_all(in_layout(inputs), DType::Float32), from_layout(weights.to(DType::Float32)));
            const Tensor keep = valid_rows(valid, length, DType::Float32);
            INFO(what);
            // Bitwise on the vector paths; the plain path's scalar loops may be contracted into FMAs
            // differently for another row count (GCC vectorises them under -march=native).
            if (std::string(path->name) == "plain")
              hkt::testing::check_close(what + ": output", from_layout(zero[0]), mul(from_layout(attend[0]), keep), 1e-6);
            else
              CHECK(from_layout(zero[0]).to_vector<double>() == mul(from_layout(attend[0]), keep).to_vector<double>());
            const std::vector<double> out = from_layout(zero[0]).to_vector<double>();
            for (int64_t b = 0; b < 4; ++b)  // the padded rows exactly 0
              for (int64_t i = valid[b] * head_dim; i < length * head_dim; ++i)
                for (int64_t h = 0; h < 2; ++h) CHECK(out[(b * 2 + h) * length * head_dim + i] == 0.0);
            // The float64 composed reference with its padded rows masked out.
            const Tensor keep64 = valid_rows(valid, length, DType::Float64);
            auto masked_reference = op(mha, true, levels, 2, causal, lengths);
            const auto expected = run([&](const std::vector<Tensor>& in) { return mul(masked_reference(in), keep64); },
                                      inputs, weights);
            for (size_t which = 1; which < zero.size(); ++which)
              hkt::testing::check_close(what + ": gradient of input " + std::to_string(which - 1),
                                        from_layout(zero[which]), expected[which], 1e-4);
          }
    }
  }
  // float64 (the plain kernels) against finite differences.
  const Tensor lengths = lengths_tensor({9, 4});
  for (bool mha : {true, false}) {
    const int64_t levels = mha ? 1 : 2;
    hkt::testing::gradcheck(op(mha, false, levels, 2, false, lengths, HeadLayout::BHTD, PaddedRows::Zero),
                            random_inputs(2, 9, levels, 2, 8, mha));
  }
}

TEST_CASE("fused attention on [B, T, H, dh] inputs equals the [B, H, T, dh] result bitwise, gradients included") {
  for (const auto* path : paths_under_test()) {
    PathScope scope(path->name);
    for (int64_t batch : {2, 4})  // B × H = 4 and 8: two key chunks (per-chunk buffers), then one (in place)
      for (bool mha : {true, false})
        for (bool causal : {false, true})
          for (DType dtype : {DType::Float32, DType::Float64}) {
            const int64_t levels = mha ? 1 : 3, length = 150, head_dim = 32;
            const Tensor lengths = lengths_tensor(batch == 2 ? std::vector<int64_t>{length, 97}
                                                             : std::vector<int64_t>{length, 97, 1, 150});
            const std::vector<Tensor> inputs = cast_all(random_inputs(batch, length, levels, 2, head_dim, mha), dtype);
            const Tensor weights = random_tensor({batch, 2, length, head_dim}, 99).to(dtype);
            const auto expected = run(op(mha, false, levels, 2, causal, lengths), inputs, weights);
            std::vector<Tensor> swapped;
            for (const Tensor& t : inputs) swapped.push_back(swap_heads(t));
            const auto actual =
                run(op(mha, false, levels, 2, causal, lengths, HeadLayout::BTHD), swapped, swap_heads(weights));
            for (size_t which = 0; which < actual.size(); ++which) {
              INFO(path->name << (mha ? " MHA" : " HKT L=3") << " batch " << batch << (causal ? " causal " : " ")
                              << dtype_name(dtype) << ": " << (which == 0 ? "output" : "gradient of input ")
                              << (which == 0 ? std::string() : std::to_string(which - 1)));
              CHECK(swap_heads(actual[which]).to_vector<double>() == expected[which].to_vector<double>());
            }
          }
  }
  // Shapes are checked against the layout asked for.
  const Tensor q = random_tensor({2, 5, 3, 8}, 1), lengths = lengths_tensor({5, 5});
  CHECK_THROWS_WITH(attention(q, q, random_tensor({2, 3, 5, 8}, 2), lengths, false, HeadLayout::BTHD),
                    Catch::Contains("expected q, k and v of one shape [B, T, H, dh]"));
  CHECK_THROWS_WITH(multiscale_attention({q, q}, {q, q}, q, random_tensor({3, 2}, 3), lengths, 2, false,
                                         HeadLayout::BTHD),
                    Catch::Contains("q_levels[1] [2, 5, 3, 8] but expected [2, 3, 3, 8]"));
}

// Batch 8 × 2 heads: 16 heads, so on 1 and 2 threads the forward deals out
// whole heads, on 4 threads single query tiles (forward<S>'s group); with
// the heads interleaved ([B, T, H, dh]) on 2 threads whole examples
// (Problem::head_group), in the backward too.
TEST_CASE("fused attention on every CPU path is bitwise the same for 1, 2 and 4 threads, batch × heads from 2 to 16") {
  const std::vector<int64_t> all_lengths = {200, 150, 1, 200, 77, 3, 129, 128};
  for (const auto* path : paths_under_test()) {
    PathScope scope(path->name);
    for (int64_t batch : {1, 3, 8})
      for (bool mha : {true, false})
        for (bool causal : {false, true})
          for (HeadLayout layout : {HeadLayout::BHTD, HeadLayout::BTHD}) {
            const int64_t levels = mha ? 1 : 3, length = 200;
            const Tensor lengths =
                lengths_tensor(std::vector<int64_t>(all_lengths.begin(), all_lengths.begin() + batch));
            std::vector<Tensor> inputs = cast_all(random_inputs(batch, length, levels, 2, 16, mha), DType::Float32);
            Tensor weights = random_tensor({batch, 2, length, 16}, 5, DType::Float32);
            if (layout == HeadLayout::BTHD) {
              for (Tensor& t : inputs) t = swap_heads(t);
              weights = swap_heads(weights);
            }
            std::vector<Tensor> one;
            {
              ThreadScope threads(1);
              one = run(op(mha, false, levels, 2, causal, lengths, layout), inputs, weights);
            }
            for (int threads_used : {2, 4}) {
              ThreadScope threads(threads_used);
              const std::vector<Tensor> many = run(op(mha, false, levels, 2, causal, lengths, layout), inputs, weights);
              for (size_t which = 0; which < one.size(); ++which) {
                INFO(path->name << (mha ? " MHA" : " HKT") << " batch " << batch << (causal ? " causal" : "")
                                << (layout == HeadLayout::BTHD ? " BTHD" : " BHTD") << ", " << threads_used
                                << " threads, #" << which);
                CHECK(one[which].to_vector<float>() == many[which].to_vector<float>());
              }
            }
          }
  }
}

TEST_CASE("a forced CPU path that cannot serve the head width, or does not exist, is a clear error") {
  CHECK_THROWS_WITH(set_attention_cpu_path("neon"), Catch::Matchers::Contains("'neon' is not available"));
  for (const auto* path : paths_under_test()) {
    if (path->width == 1) continue;
    PathScope scope(path->name);
    const Shape shape{1, 1, 8, 4};  // dh = 4 is no multiple of the vector width
    const Tensor x = random_tensor(shape, 1, DType::Float32);
    CHECK_THROWS_WITH(attention(x, x, x, lengths_tensor({8}), false),
                      Catch::Matchers::Contains("needs a head width that is a multiple of"));
  }
}
