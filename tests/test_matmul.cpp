#include <cstdlib>
#include <functional>
#include <string>

#include "ops/blas.h"
#include "tests/gradcheck.h"

using namespace hkt;
using hkt::testing::gradcheck;
using hkt::testing::max_abs_diff;
using hkt::testing::random_tensor;

namespace {

// Triple-loop reference of gemm: op(a) op(b) per batch item, a 2-D operand shared.
std::vector<double> reference_gemm(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  const int64_t ra = a.size(-2), ca = a.size(-1), rb = b.size(-2), cb = b.size(-1);
  const int64_t m = ta ? ca : ra, k = ta ? ra : ca, n = tb ? rb : cb;
  const Tensor& batched = a.dim() > 2 ? a : b;
  const int64_t batch = shape_numel(Shape(batched.shape().begin(), batched.shape().end() - 2));
  std::vector<double> out(static_cast<size_t>(batch * m * n));
  for (int64_t i = 0; i < batch; ++i) {
    const double* pa = va.data() + (a.dim() > 2 ? i * ra * ca : 0);
    const double* pb = vb.data() + (b.dim() > 2 ? i * rb * cb : 0);
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < n; ++c) {
        double total = 0;
        for (int64_t p = 0; p < k; ++p) total += (ta ? pa[p * ca + r] : pa[r * ca + p]) * (tb ? pb[c * cb + p] : pb[p * cb + c]);
        out[static_cast<size_t>((i * m + r) * n + c)] = total;
      }
  }
  return out;
}

Shape stored_shape(Shape batch, int64_t rows, int64_t cols, bool transposed) {
  batch.push_back(transposed ? cols : rows);
  batch.push_back(transposed ? rows : cols);
  return batch;
}

struct GemmCase {
  Shape batch_a, batch_b;  // {} for a 2-D (shared) operand
  int64_t m, k, n;
};

const GemmCase kCases[] = {
    {{}, {}, 3, 5, 2},     {{}, {}, 1, 1, 1},       {{}, {}, 1, 7, 1},   {{}, {}, 5, 1, 3},
    {{2}, {2}, 3, 4, 5},   {{2, 3}, {2, 3}, 1, 3, 2}, {{3}, {}, 4, 5, 3},  {{2, 2}, {}, 3, 1, 2},
    {{}, {3}, 2, 3, 4},    {{4}, {}, 1, 9, 1},
};

}  // namespace

TEST_CASE("gemm matches a triple-loop reference for every transpose and batch layout") {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const double tolerance = dtype == DType::Float32 ? 1e-4 : 1e-12;
    for (const GemmCase& c : kCases)
      for (bool ta : {false, true})
        for (bool tb : {false, true}) {
          Tensor a = random_tensor(stored_shape(c.batch_a, c.m, c.k, ta), 1, dtype);
          Tensor b = random_tensor(stored_shape(c.batch_b, c.k, c.n, tb), 2, dtype);
          INFO(a.str() << (ta ? "ᵀ" : "") << " x " << b.str() << (tb ? "ᵀ" : ""));
          Tensor out = gemm(a, b, ta, tb);
          Shape expected_shape = stored_shape(c.batch_a.empty() ? c.batch_b : c.batch_a, c.m, c.n, false);
          CHECK(out.shape() == expected_shape);
          CHECK(out.dtype() == dtype);
          CHECK(max_abs_diff(out, reference_gemm(a, b, ta, tb)) < tolerance);
          if (!ta && !tb) CHECK(max_abs_diff(matmul(a, b), out) == 0);
        }
  }
}

TEST_CASE("linear is x Wᵀ + b over any leading dims") {
  // out = 5 runs on BLAS; out = 32 (a multiple of the vector width) on the
  // own micro-kernel in float32, which adds the bias as it stores each block of C.
  for (auto [in, out] : {std::pair<int64_t, int64_t>{7, 5}, {64, 32}})
    for (DType dtype : {DType::Float32, DType::Float64}) {
      const double tolerance = dtype == DType::Float32 ? 1e-4 : 1e-12;
      for (Shape x_shape : {Shape{in}, Shape{4, in}, Shape{2, 3, in}, Shape{1, 1, in}, Shape{2, 61, in}}) {
        INFO(dtype_name(dtype) << " x " << shape_str(x_shape) << ", " << out << " outputs");
        Tensor x = random_tensor(x_shape, 3, dtype), w = random_tensor({out, in}, 4, dtype),
               bias = random_tensor({out}, 5, dtype);
        Tensor y = linear(x, w, bias);
        Shape out_shape = x_shape;
        out_shape.back() = out;
        REQUIRE(y.shape() == out_shape);
        auto vx = x.to_vector<double>(), vw = w.to_vector<double>(), vb = bias.to_vector<double>();
        std::vector<double> expected;
        for (int64_t row = 0; row < x.numel() / in; ++row)
          for (int64_t o = 0; o < out; ++o) {
            double total = vb[o];
            for (int64_t i = 0; i < in; ++i) total += vx[row * in + i] * vw[o * in + i];
            expected.push_back(total);
          }
        CHECK(max_abs_diff(y, expected) < tolerance);
        CHECK(max_abs_diff(linear(x, w), sub(y, bias)) < tolerance);
      }
    }
}

TEST_CASE("float32 GEMMs with a long depth (weight gradients) match the reference, whatever the thread count") {
  // M < 384 and K ≥ 4096: the depth is split into fixed chunks summed in order (ops/matmul.cpp).
  const char* choice = std::getenv("HKT_CPU_GEMM");
  const bool own_gemm = !(choice && std::string(choice) == "blas");
  const int threads = num_threads();
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Tensor a = random_tensor(stored_shape({}, 40, 5000, ta), 1, DType::Float32);
      Tensor b = random_tensor(stored_shape({}, 5000, 32, tb), 2, DType::Float32);
      INFO(a.str() << (ta ? "ᵀ" : "") << " x " << b.str() << (tb ? "ᵀ" : ""));
      set_num_threads(1);
      const Tensor one = gemm(a, b, ta, tb);
      set_num_threads(2);
      const Tensor two = gemm(a, b, ta, tb);
      // The project's own kernel sums in a fixed order; OpenBLAS (HKT_CPU_GEMM=blas) does not promise that.
      if (own_gemm) CHECK(one.to_vector<double>() == two.to_vector<double>());
      CHECK(max_abs_diff(one, reference_gemm(a.to(DType::Float64), b.to(DType::Float64), ta, tb)) < 2e-3);
    }
  set_num_threads(threads);
  // linear's weight gradient, Σ over the B·T rows, takes the same path:
  // with an all-ones output gradient, dW[o, i] = Σ_rows x[row, i].
  Tensor x = random_tensor({3, 1500, 64}, 3, DType::Float32);
  Tensor w = random_tensor({32, 64}, 4, DType::Float32).requires_grad_(true);
  sum(linear(x, w)).backward();
  const std::vector<double> column_sums = sum(reshape(x.to(DType::Float64), {4500, 64}), 0).to_vector<double>();
  std::vector<double> expected;
  for (int64_t o = 0; o < 32; ++o) expected.insert(expected.end(), column_sums.begin(), column_sums.end());
  CHECK(max_abs_diff(w.grad(), expected) < 2e-3);
}

TEST_CASE("linear's bias gradient, summed as the weight gradient's product reads G, matches the plain sum") {
  // 4500 rows (K ≥ 4096) take the split-depth product, which sums G's rows on the way; 700 rows
  // and N = 10 (not a multiple of the vector width: BLAS) take the plain sum after the product.
  const int threads = num_threads();
  for (const Shape& x_shape : {Shape{3, 1500, 64}, Shape{700, 64}, Shape{2, 350, 10}})
    for (int t : {1, 2}) {
      set_num_threads(t);
      INFO(shape_str(x_shape) << ", " << t << " threads");
      const int64_t in = x_shape.back(), rows = shape_numel(x_shape) / in;
      Tensor x = random_tensor(x_shape, 5, DType::Float32);
      Tensor w = random_tensor({48, in}, 6, DType::Float32).requires_grad_(true);
      Tensor bias = random_tensor({48}, 7, DType::Float32).requires_grad_(true);
      Shape out_shape = x_shape;
      out_shape.back() = 48;
      const Tensor weights = random_tensor(out_shape, 8, DType::Float32);
      sum(mul(linear(x, w, bias), weights)).backward();
      // dbias = Σ_rows weights (the output gradient), in float64.
      const std::vector<double> expected = sum(reshape(weights.to(DType::Float64), {rows, 48}), 0).to_vector<double>();
      CHECK(bias.grad().shape() == Shape{48});
      CHECK(max_abs_diff(bias.grad(), expected) < 1e-3);
    }
  set_num_threads(threads);
}

// The CPU GEMMs skip runs of rows of A that are all zero (a training step's
// padded positions, in the activations and the output gradients): C's rows
// must still be the bias, zero or what they held, and a split-depth chunk
// that skips its first rows, or all of them, must still start from zero.
TEST_CASE("linear with rows of zeros in x and in the output gradient matches the float64 reference") {
  const int threads = num_threads();
  // 6000 rows: three 2048-row depth chunks of the weight gradient. Zero: rows [100, 300)
  // (whole 48-row blocks and partial ones), the first chunk's first 64-row block [0, 64),
  // runs of 7 (left in the product), 8 and 20 rows inside blocks, all of the second chunk
  // [2048, 4096), and the last 7 rows. Rows 700 and 701 start with 0 and are not zero.
  const int64_t rows = 6000, in = 64, out = 32;
  auto zero_row = [](int64_t r) {
    return r < 64 || (r >= 100 && r < 300) || (r >= 500 && r < 507) || (r >= 600 && r < 608) ||
           (r >= 1003 && r < 1023) || (r >= 2048 && r < 4096) || r >= 5993;
  };
  std::vector<double> xv = random_tensor({rows, in}, 11).to_vector<double>();
  std::vector<double> gv = random_tensor({rows, out}, 12).to_vector<double>();
  for (int64_t r : {700, 701}) {
    xv[r * in] = 0.0;
    gv[r * out] = 0.0;
  }
  for (int64_t r = 0; r < rows; ++r) {
    if (!zero_row(r)) continue;
    std::fill(xv.begin() + r * in, xv.begin() + (r + 1) * in, r % 2 ? -0.0 : 0.0);
    std::fill(gv.begin() + r * out, gv.begin() + (r + 1) * out, 0.0);
  }
  const Tensor x64 = Tensor::from_doubles(xv, {rows, in}, DType::Float64);
  const Tensor g64 = Tensor::from_doubles(gv, {rows, out}, DType::Float64);
  const Tensor w64 = random_tensor({out, in}, 13), b64 = random_tensor({out}, 14);
  for (int t : {1, 2}) {
    set_num_threads(t);
    INFO(t << " threads");
    Tensor x = x64.to(DType::Float32).requires_grad_(true);
    Tensor w = w64.to(DType::Float32).requires_grad_(true), b = b64.to(DType::Float32).requires_grad_(true);
    const Tensor y = linear(x, w, b);
    sum(mul(y, g64.to(DType::Float32))).backward();
    // y = x Wᵀ + b: compare with the bias added to the reference product.
    std::vector<double> expected_y = reference_gemm(x64, w64, false, true);
    const std::vector<double> bias = b64.to_vector<double>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < out; ++o) expected_y[r * out + o] += bias[o];
    CHECK(max_abs_diff(y, expected_y) < 1e-4);
    CHECK(max_abs_diff(x.grad(), reference_gemm(g64, w64, false, false)) < 1e-4);   // dx = G W
    CHECK(max_abs_diff(w.grad(), reference_gemm(g64, x64, true, false)) < 2e-3);    // dW = Gᵀ x
    CHECK(max_abs_diff(b.grad(), sum(g64, 0).to_vector<double>()) < 2e-3);
  }
  set_num_threads(threads);
}

TEST_CASE("gemm with an empty inner dimension gives zeros") {
  Tensor out = matmul(Tensor::ones({2, 3, 0}), Tensor::ones({2, 0, 4}));
  CHECK(out.shape() == Shape{2, 3, 4});
  CHECK(max_abs_diff(out, std::vector<double>(24, 0.0)) == 0);
  CHECK(matmul(Tensor::ones({0, 3}), Tensor::ones({3, 2})).shape() == Shape{0, 2});
}

TEST_CASE("matmul: gradients for 2-D, batched and shared operands") {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{3, 4}, {4, 2}}, {{1, 1}, {1, 1}}, {{1, 5}, {5, 1}}, {{5, 1}, {1, 3}},
      {{2, 3, 4}, {2, 4, 5}}, {{2, 1, 3, 2}, {2, 1, 2, 3}}, {{2, 3, 4}, {4, 5}}, {{3, 2, 1, 4}, {4, 1}},
  };
  for (auto [sa, sb] : cases) {
    INFO(shape_str(sa) << " x " << shape_str(sb));
    gradcheck([](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); },
              {random_tensor(sa, 6), random_tensor(sb, 7)});
  }
}

TEST_CASE("gemm: gradients for every transpose with batched and shared operands") {
  for (const GemmCase& c : kCases)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        Tensor a = random_tensor(stored_shape(c.batch_a, c.m, c.k, ta), 8);
        Tensor b = random_tensor(stored_shape(c.batch_b, c.k, c.n, tb), 9);
        INFO(a.str() << (ta ? "ᵀ" : "") << " x " << b.str() << (tb ? "ᵀ" : ""));
        gradcheck([ta, tb](const std::vector<Tensor>& in) { return gemm(in[0], in[1], ta, tb); }, {a, b});
      }
}

TEST_CASE("linear: gradients with and without bias") {
  for (Shape x_shape : {Shape{6}, Shape{3, 6}, Shape{2, 3, 6}, Shape{1, 1, 6}}) {
    INFO(shape_str(x_shape));
    Tensor x = random_tensor(x_shape, 10), w = random_tensor({4, 6}, 11), bias = random_tensor({4}, 12);
    gradcheck([](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); }, {x, w, bias});
    gradcheck([](const std::vector<Tensor>& in) { return linear(in[0], in[1]); }, {x, w});
  }
  // Only the weight requires grad: x's gradient is skipped, W's still summed over rows.
  Tensor x = random_tensor({2, 3, 6}, 13), w = random_tensor({1, 6}, 14);
  w.requires_grad_(true);
  sum(linear(x, w)).backward();
  CHECK(!x.grad().defined());
  CHECK(w.grad().shape() == Shape{1, 6});
}

TEST_CASE("gemm and linear backwards add into the gradient their input already has from other consumers") {
  // h feeds several products: after the first backward each one adds its dh to the sum so far
  // (autograd's take_gradient_sum) instead of returning a new tensor. h as the first operand
  // (linear, a transposed weight) and as the second (a shared matrix times each batch item).
  using Graph = std::function<Tensor(const std::vector<Tensor>&)>;
  const Graph first = [](const std::vector<Tensor>& in) {
    Tensor h = mul(in[0], 1.25);  // not a leaf: autograd sums its gradient
    return add(add(linear(h, in[1], in[2]), linear(h, in[3])), gemm(h, in[4], false, true));
  };
  const Graph second = [](const std::vector<Tensor>& in) {
    Tensor h = mul(in[0], 1.25);
    return add(add(matmul(in[1], h), gemm(in[2], h, true, false)), mul(h, 0.5));
  };
  const Tensor x = random_tensor({2, 5, 16}, 40), w1 = random_tensor({32, 16}, 41), b1 = random_tensor({32}, 42);
  const Tensor w2 = random_tensor({32, 16}, 43), w3 = random_tensor({32, 16}, 44);
  const Tensor s1 = random_tensor({5, 5}, 45), s2 = random_tensor({5, 5}, 46);
  gradcheck(first, {x, w1, b1, w2, w3});
  gradcheck(second, {x, s1, s2});
  // float32 with dx's N = 16 runs the project's micro-kernel with beta = 1 (where the CPU has AVX2
  // or AVX-512; BLAS elsewhere); it must match float64.
  for (const Graph* f : {&first, &second}) {
    const bool is_first = f == &first;
    auto x_grad = [&](DType dtype) {
      std::vector<Tensor> in = is_first ? std::vector<Tensor>{x, w1, b1, w2, w3} : std::vector<Tensor>{x, s1, s2};
      for (Tensor& t : in) t = t.to(dtype).detach();
      in[0].requires_grad_(true);
      sum(mul((*f)(in), (*f)(in).detach())).backward();
      return in[0].grad();
    };
    INFO((is_first ? "h first" : "h second"));
    CHECK(hkt::testing::relative_diff(x_grad(DType::Float32).to(DType::Float64), x_grad(DType::Float64)) <= 1e-5);
  }
}

TEST_CASE("matmul and linear reject bad input with the op and shapes named") {
  Tensor a = Tensor::zeros({4, 3}), b = Tensor::zeros({5, 2});
  REQUIRE_THROWS_WITH(matmul(a, b), "matmul: [4, 3] x [5, 2]: inner sizes 3 and 5 differ");
  REQUIRE_THROWS_WITH(matmul(Tensor::zeros({3}), Tensor::zeros({3, 2})),
                      "matmul: [3] x [3, 2]: both operands need at least 2 dims");
  REQUIRE_THROWS_WITH(matmul(Tensor::zeros({2, 4, 3}), Tensor::zeros({3, 3, 2})),
                      "matmul: [2, 4, 3] x [3, 3, 2]: batch dims [2] and [3] differ (they must be equal, or one "
                      "operand 2-D)");
  REQUIRE_THROWS_WITH(matmul(a, Tensor::zeros({3, 2}, DType::Float64)),
                      "matmul: dtypes differ: float32[4, 3] on cpu, float64[3, 2] on cpu");
  REQUIRE_THROWS_WITH(matmul(Tensor::zeros({4, 3}, DType::Int64), Tensor::zeros({3, 2}, DType::Int64)),
                      "matmul: expected a float32 or float64 tensor, got int64[4, 3]");
  REQUIRE_THROWS_WITH(gemm(a, Tensor::zeros({2, 3}), true, true), "gemm: [4, 3]ᵀ x [2, 3]ᵀ: inner sizes 4 and 3 differ");
  REQUIRE_THROWS_WITH(linear(Tensor::zeros({4, 7}), Tensor::zeros({8, 5})), "linear: input [4, 7] but weight [8, 5]");
  REQUIRE_THROWS_WITH(linear(Tensor::zeros({4, 5}), Tensor::zeros({8, 5}), Tensor::zeros({7})),
                      "linear: weight [8, 5] but bias [7]");
  REQUIRE_THROWS_WITH(linear(Tensor::zeros({4, 5}), Tensor::zeros({5})), "linear: weight [5] is not 2-D [out, in]");
  REQUIRE_THROWS_WITH(linear(Tensor::zeros({4, 5}), Tensor()), "linear: weight is an undefined tensor");
}

TEST_CASE("the BLAS core check flags pre-AVX2 kernels on AVX2 and AVX-512 CPUs, and nothing else") {
  CHECK(blas_core_fix("Prescott", true, false) == "Haswell");
  CHECK(blas_core_fix("Prescott", true, true) == "SkylakeX");
  CHECK(blas_core_fix("NEHALEM", true, true) == "SkylakeX");  // case does not matter
  CHECK(blas_core_fix("Sandybridge", true, false) == "Haswell");
  CHECK(blas_core_fix("Prescott", false, false).empty());  // an old CPU: Prescott fits it
  CHECK(blas_core_fix("Haswell", true, false).empty());
  CHECK(blas_core_fix("SkylakeX", true, true).empty());
  CHECK(blas_core_fix("Cooperlake", true, true).empty());
  CHECK(blas_core_fix("Zen", true, false).empty());
  const BlasInfo info = blas_info();
  INFO(info.library << " / " << info.core);
  CHECK(info.library.rfind("OpenBLAS", 0) == 0);
  CHECK(!info.core.empty());
}

TEST_CASE("float32 GEMMs on the vector micro-kernel equal float64 BLAS: transposes, batches, a shared operand's summed gradient") {
  // N a multiple of 16 takes the micro-kernel on AVX2 and AVX-512 CPUs (ops/matmul.cpp); N = 10 stays on BLAS.
  for (int64_t n : {16, 64, 10})
    for (int64_t m : {1, 7, 100})
      for (int64_t k : {1, 37, 130})
        for (bool ta : {false, true})
          for (bool tb : {false, true}) {
            const Shape a_shape = ta ? Shape{3, k, m} : Shape{3, m, k};
            const Shape b_shape = tb ? Shape{n, k} : Shape{k, n};  // shared by every batch item
            Tensor a = hkt::testing::random_tensor(a_shape, 1), b = hkt::testing::random_tensor(b_shape, 2);
            Tensor weights = hkt::testing::random_tensor({3, m, n}, 3);
            auto run = [&](DType dtype) {
              Tensor la = a.to(dtype).requires_grad_(true), lb = b.to(dtype).requires_grad_(true);
              Tensor out = gemm(la, lb, ta, tb);
              sum(mul(out, weights.to(dtype))).backward();  // b's gradient sums over the batch
              return std::vector<Tensor>{out.detach(), la.grad(), lb.grad()};
            };
            const auto single = run(DType::Float32), exact = run(DType::Float64);
            for (size_t which = 0; which < 3; ++which) {
              INFO("m " << m << " n " << n << " k " << k << (ta ? " aᵀ" : "") << (tb ? " bᵀ" : "") << " #" << which);
              CHECK(hkt::testing::relative_diff(single[which].to(DType::Float64), exact[which]) <= 1e-5);
            }
          }
}
