#include <omp.h>

#include <cmath>

#include "tests/gradcheck.h"

using namespace hkt;
using hkt::testing::gradcheck;
using hkt::testing::max_abs_diff;
using hkt::testing::random_tensor;

namespace {

// Plain two-pass LayerNorm over the last axis, in double.
std::vector<double> layer_norm_reference(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  auto v = x.to_vector<double>(), w = weight.to_vector<double>(), b = bias.to_vector<double>();
  const int64_t width = x.size(-1), rows = x.numel() / width;
  std::vector<double> out(v.size());
  for (int64_t n = 0; n < rows; ++n) {
    double mean = 0, var = 0;
    for (int64_t d = 0; d < width; ++d) mean += v[n * width + d];
    mean /= width;
    for (int64_t d = 0; d < width; ++d) var += (v[n * width + d] - mean) * (v[n * width + d] - mean);
    var /= width;
    for (int64_t d = 0; d < width; ++d)
      out[n * width + d] = (v[n * width + d] - mean) / std::sqrt(var + eps) * w[d] + b[d];
  }
  return out;
}

const std::vector<Shape> kShapes = {{4, 7}, {1, 8}, {2, 3, 5}, {5, 1}, {1, 1}, {3, 64}, {6}};

}  // namespace

TEST_CASE("layer_norm matches a plain two-pass reference") {
  for (const Shape& shape : kShapes) {
    INFO(shape_str(shape));
    const int64_t width = shape.back();
    Tensor x = random_tensor(shape, 31), weight = random_tensor({width}, 32), bias = random_tensor({width}, 33);
    CHECK(max_abs_diff(layer_norm(x, weight, bias), layer_norm_reference(x, weight, bias, 1e-5)) < 1e-13);
    CHECK(max_abs_diff(layer_norm(x, weight, bias, 0.5), layer_norm_reference(x, weight, bias, 0.5)) < 1e-13);
  }
}

TEST_CASE("layer_norm: a large offset does not cancel (two-pass variance)") {
  Tensor x = add(random_tensor({3, 16}, 34, DType::Float32), 1e4);
  Tensor weight = Tensor::ones({16}), bias = Tensor::zeros({16});
  CHECK(max_abs_diff(layer_norm(x, weight, bias), layer_norm_reference(x, weight, bias, 1e-5)) < 2e-3);
}

TEST_CASE("layer_norm: gradients of input, weight and bias") {
  for (const Shape& shape : kShapes) {
    INFO(shape_str(shape));
    const int64_t width = shape.back();
    Tensor x = random_tensor(shape, 35), weight = random_tensor({width}, 36), bias = random_tensor({width}, 37);
    gradcheck([](const std::vector<Tensor>& in) { return layer_norm(in[0], in[1], in[2]); }, {x, weight, bias});
  }
  // More rows than one reduction block (32), and a graph that reuses the output.
  Tensor x = random_tensor({70, 5}, 38), weight = random_tensor({5}, 39), bias = random_tensor({5}, 40);
  gradcheck(
      [](const std::vector<Tensor>& in) {
        Tensor y = layer_norm(in[0], in[1], in[2]);
        return mul(y, y);
      },
      {x, weight, bias});
}

TEST_CASE("layer_norm's backward adds dX into the gradient a residual branch gave its input") {
  // A pre-norm block, h + f(LN(h)): the residual's gradient is summed first and, once the branch
  // has used its copy, handed to LN's backward to add into (autograd's take_gradient_sum).
  const Tensor x = random_tensor({3, 4, 6}, 20), w = random_tensor({6}, 21), b = random_tensor({6}, 22);
  const Tensor proj = random_tensor({6, 6}, 23);
  gradcheck(
      [&](const std::vector<Tensor>& in) {
        Tensor h = mul(in[0], 1.5);
        Tensor block = add(h, linear(layer_norm(h, in[1], in[2]), proj));
        return add(block, layer_norm(block, in[1], in[2]));
      },
      {x, w, b});
}

TEST_CASE("layer_norm with D = 1: output is the bias, gradients finite (eps keeps rstd finite)") {
  Tensor x = random_tensor({4, 1}, 41), weight = random_tensor({1}, 42), bias = random_tensor({1}, 43);
  x.requires_grad_(true);
  weight.requires_grad_(true);
  Tensor y = layer_norm(x, weight, bias);
  CHECK(max_abs_diff(y, std::vector<double>(4, bias.item())) == 0);
  sum(y).backward();
  for (double v : x.grad().to_vector<double>()) CHECK(v == 0.0);
  CHECK(weight.grad().item() == 0.0);
}

TEST_CASE("layer_norm backward is bitwise the same for any thread count") {
  Tensor x = random_tensor({200, 300}, 44, DType::Float32);
  Tensor weight = random_tensor({300}, 45, DType::Float32), bias = random_tensor({300}, 46, DType::Float32);
  Tensor g = random_tensor({200, 300}, 47, DType::Float32);
  auto gradients = [&](int threads) {
    const int previous = omp_get_max_threads();
    omp_set_num_threads(threads);
    Tensor xs = x.detach(), ws = weight.detach(), bs = bias.detach();
    for (Tensor* t : {&xs, &ws, &bs}) t->requires_grad_(true);
    layer_norm(xs, ws, bs).backward(g);
    omp_set_num_threads(previous);
    return std::vector<std::vector<float>>{xs.grad().to_vector<float>(), ws.grad().to_vector<float>(),
                                           bs.grad().to_vector<float>()};
  };
  auto one = gradients(1), many = gradients(4);
  CHECK(one == many);
  CHECK(max_abs_diff(layer_norm(x, weight, bias), layer_norm_reference(x, weight, bias, 1e-5)) < 1e-5);
}

TEST_CASE("layer_norm_masked is bitwise the same for any thread count") {
  // Lengths out of order, and the masked rows quick: the blocks go to threads as they come free.
  const Tensor x = random_tensor({5, 150, 40}, 48, DType::Float32), g = random_tensor({5, 150, 40}, 49, DType::Float32);
  const Tensor weight = random_tensor({40}, 50, DType::Float32), bias = random_tensor({40}, 51, DType::Float32);
  const Tensor lengths = Tensor::from_vector(std::vector<int64_t>{100, 0, 150, 7, 64}, {5});
  auto run = [&](int threads) {
    const int previous = omp_get_max_threads();
    omp_set_num_threads(threads);
    Tensor xs = x.detach(), ws = weight.detach(), bs = bias.detach();
    for (Tensor* t : {&xs, &ws, &bs}) t->requires_grad_(true);
    Tensor y = layer_norm_masked(xs, ws, bs, lengths);
    y.backward(g);
    omp_set_num_threads(previous);
    return std::vector<std::vector<float>>{y.to_vector<float>(), xs.grad().to_vector<float>(),
                                           ws.grad().to_vector<float>(), bs.grad().to_vector<float>()};
  };
  const auto one = run(1);
  CHECK(one == run(2));
  CHECK(one == run(4));
}

TEST_CASE("layer_norm rejects bad input with the op and shapes named") {
  Tensor x = Tensor::zeros({4, 7});
  REQUIRE_THROWS_WITH(layer_norm(x, Tensor::ones({8}), Tensor::zeros({7})), "layer_norm: input [4, 7] but weight [8]");
  REQUIRE_THROWS_WITH(layer_norm(x, Tensor::ones({7}), Tensor::zeros({7, 1})),
                      "layer_norm: input [4, 7] but bias [7, 1]");
  REQUIRE_THROWS_WITH(layer_norm(Tensor::zeros({}), Tensor::ones({1}), Tensor::zeros({1})),
                      "layer_norm: input [] has no last axis to normalise");
  REQUIRE_THROWS_WITH(layer_norm(Tensor::zeros({4, 0}), Tensor::ones({0}), Tensor::zeros({0})),
                      "layer_norm: empty last axis in input [4, 0]");
  REQUIRE_THROWS_WITH(layer_norm(x, Tensor::ones({7}, DType::Float64), Tensor::zeros({7})),
                      Catch::Contains("layer_norm: dtypes differ"));
  REQUIRE_THROWS_WITH(layer_norm(x, Tensor(), Tensor::zeros({7})), "layer_norm: weight is an undefined tensor");
  REQUIRE_THROWS_WITH(layer_norm(x, Tensor::ones({7}), Tensor::zeros({7}), -1.0),
                      "layer_norm: eps must be >= 0, got -1");
}

TEST_CASE("layer_norm on zero rows gives an empty result") {
  CHECK(layer_norm(Tensor::zeros({0, 4}), Tensor::ones({4}), Tensor::zeros({4})).shape() == Shape{0, 4});
}

TEST_CASE("layer_norm's backward skips rows whose gradient is zero, exactly") {
  // Rows 10 … 69 of the output are multiplied by 0 (a training step's padded positions): their dX must
  // be exactly 0 and they must add nothing to dweight or dbias, also where dX is added to a residual's.
  Tensor x = random_tensor({70, 5}, 57), weight = random_tensor({5}, 58), bias = random_tensor({5}, 59);
  std::vector<double> keep(70 * 5, 0.0);
  for (int64_t i = 0; i < 10 * 5; ++i) keep[i] = 1.0;
  const Tensor rows = Tensor::from_doubles(keep, {70, 5}, DType::Float64);
  auto f = [&](const std::vector<Tensor>& in) { return mul(layer_norm(in[0], in[1], in[2]), rows); };
  gradcheck(f, {x, weight, bias});
  gradcheck([&](const std::vector<Tensor>& in) { return add(in[0], f(in)); }, {x, weight, bias});
  Tensor xs = x.detach().requires_grad_(true), ws = weight.detach().requires_grad_(true),
         bs = bias.detach().requires_grad_(true);
  sum(f({xs, ws, bs})).backward();
  const std::vector<double> dx = xs.grad().to_vector<double>();
  for (int64_t i = 10 * 5; i < 70 * 5; ++i) REQUIRE(dx[i] == 0.0);
  // dweight and dbias from the first 10 rows alone.
  Tensor head_x = slice(x, 0, 0, 10).detach().requires_grad_(true);
  Tensor head_w = weight.detach().requires_grad_(true), head_b = bias.detach().requires_grad_(true);
  sum(layer_norm(head_x, head_w, head_b)).backward();
  CHECK(max_abs_diff(ws.grad(), head_w.grad()) < 1e-12);
  CHECK(max_abs_diff(bs.grad(), head_b.grad()) < 1e-12);
}

TEST_CASE("layer_norm_masked is layer_norm with the padded rows 0, in value and gradient") {
  // Lengths 0 (all padded), 1, T − 1 and T, over more rows than one reduction block (32), and the
  // gradient added into a residual's: against the composed layer_norm(x) ⊙ valid_rows.
  const int64_t batch = 4, length = 23, width = 6;
  const std::vector<int64_t> valid = {0, 1, length - 1, length};
  const Tensor lengths = Tensor::from_vector(valid, {batch});
  const Tensor rows = hkt::testing::valid_rows_mask(valid, length);
  Tensor x = random_tensor({batch, length, width}, 60), weight = random_tensor({width}, 61),
         bias = random_tensor({width}, 62);
  CHECK(max_abs_diff(layer_norm_masked(x, weight, bias, lengths), mul(layer_norm(x, weight, bias), rows)) == 0.0);
  auto masked = [&](const std::vector<Tensor>& in) { return layer_norm_masked(in[0], in[1], in[2], lengths); };
  gradcheck(masked, {x, weight, bias});
  gradcheck([&](const std::vector<Tensor>& in) { return add(in[0], mul(masked(in), in[0])); }, {x, weight, bias});
  // A loss on the padded rows too: they are constant 0, so x gets no gradient there, and the
  // parameters none from them.
  Tensor xs = x.detach().requires_grad_(true), ws = weight.detach().requires_grad_(true),
         bs = bias.detach().requires_grad_(true);
  const Tensor g = random_tensor({batch, length, width}, 63);
  layer_norm_masked(xs, ws, bs, lengths).backward(g);
  Tensor xr = x.detach().requires_grad_(true), wr = weight.detach().requires_grad_(true),
         br = bias.detach().requires_grad_(true);
  mul(layer_norm(xr, wr, br), rows).backward(g);
  CHECK(max_abs_diff(xs.grad(), xr.grad()) < 1e-12);
  CHECK(max_abs_diff(ws.grad(), wr.grad()) < 1e-12);
  CHECK(max_abs_diff(bs.grad(), br.grad()) < 1e-12);
  const std::vector<double> dx = xs.grad().to_vector<double>();
  for (int64_t i = 0; i < length * width; ++i) REQUIRE(dx[i] == 0.0);  // example 0: every row padded
}

TEST_CASE("layer_norm_masked rejects bad lengths with the op named") {
  const Tensor x = Tensor::zeros({2, 5, 3}), w = Tensor::ones({3}), b = Tensor::zeros({3});
  REQUIRE_THROWS_WITH(layer_norm_masked(x, w, b, Tensor::from_vector(std::vector<int64_t>{5, 6}, {2})),
                      "layer_norm_masked: length 6 of example 1 is outside [0, 5]");
  REQUIRE_THROWS_WITH(layer_norm_masked(x, w, b, Tensor::from_vector(std::vector<int64_t>{5}, {1})),
                      Catch::Contains("layer_norm_masked: lengths") && Catch::Contains("but batch 2 (expected [2])"));
  REQUIRE_THROWS_WITH(layer_norm_masked(x, w, b, Tensor::zeros({2})),
                      Catch::Contains("layer_norm_masked: lengths must be int32 or int64"));
  REQUIRE_THROWS_WITH(layer_norm_masked(Tensor::zeros({5, 3}), w, b, Tensor::from_vector(std::vector<int64_t>{5}, {1})),
                      "layer_norm_masked: input [5, 3] is not 3-D [B, T, D]");
  REQUIRE_THROWS_WITH(layer_norm_masked(x, w, b, Tensor()), "layer_norm_masked: lengths is an undefined tensor");
}
