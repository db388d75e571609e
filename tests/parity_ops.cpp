// Every non-attention op, forward and backward, on float32: CUDA against the
// CPU (tests/parity_check.h). Skips on machines without a CUDA device;
// HKT_PARITY_DRY_RUN=1 runs them with the CPU standing in for CUDA.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <memory>
#include <tuple>

#include "hkt.h"
#include "tests/parity_check.h"

#ifdef HKT_WITH_CUDA
#include "cuda/allocator.h"
#endif

using namespace hkt;
using namespace hkt::testing;

namespace {

Tensor index_tensor(const std::vector<int64_t>& values, DType dtype = DType::Int64) {
  std::vector<double> as_doubles(values.begin(), values.end());
  return Tensor::from_doubles(as_doubles, {static_cast<int64_t>(values.size())}, dtype);
}

}  // namespace

TEST_CASE("parity: binary ops with broadcasting") {
  HKT_PARITY_OR_SKIP();
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{3, 5}, {3, 5}}, {{4, 1, 7}, {5, 1}}, {{1}, {6}}, {{}, {2, 3}}, {{2, 3, 1}, {1, 1, 4}}, {{1}, {1}},
      {{33, 65}, {65}}};
  uint64_t seed = 1;
  for (const auto& [shape_a, shape_b] : shapes) {
    Tensor a = random_tensor(shape_a, seed++), b = random_tensor(shape_b, seed++);
    Tensor positive = random_tensor(shape_b, seed++, 0.5, 2.0);
    check_parity("add", [](const auto& x) { return add(x[0], x[1]); }, {a, b});
    check_parity("sub", [](const auto& x) { return sub(x[0], x[1]); }, {a, b});
    check_parity("mul", [](const auto& x) { return mul(x[0], x[1]); }, {a, b});
    check_parity("div", [](const auto& x) { return div(x[0], x[1]); }, {a, positive});
  }
  check_parity("add scalar", [](const auto& x) { return add(mul(x[0], 3.0), -1.5); }, {random_tensor({4, 5}, 9)});
}

TEST_CASE("parity: lerp with a broadcast weight") {
  HKT_PARITY_OR_SKIP();
  const std::vector<std::pair<Shape, Shape>> shapes = {{{3, 5}, {3, 5}}, {{4, 33, 65}, {65}}, {{2, 7, 3}, {7, 1}}, {{6}, {}}};
  uint64_t seed = 40;
  for (const auto& [shape, weight_shape] : shapes)
    check_parity("lerp", [](const auto& x) { return lerp(x[0], x[1], x[2]); },
                 {random_tensor(shape, seed++), random_tensor(shape, seed++), random_tensor(weight_shape, seed++)});
}

TEST_CASE("parity: broadcast_to") {
  HKT_PARITY_OR_SKIP();
  check_parity("broadcast_to", [](const auto& x) { return broadcast_to(x[0], {2, 3, 5}); }, {random_tensor({3, 1}, 1)});
  check_parity("broadcast_to", [](const auto& x) { return broadcast_to(x[0], {4, 1}); }, {random_tensor({}, 2)});
  check_parity("broadcast_to", [](const auto& x) { return broadcast_to(x[0], {7, 2, 9}); }, {random_tensor({9}, 3)});
}

TEST_CASE("parity: unary ops and their backward") {
  HKT_PARITY_OR_SKIP();
  const std::vector<Shape> shapes = {{7}, {3, 33}, {1}, {2049}, {2, 3, 4}};
  uint64_t seed = 10;
  for (const Shape& shape : shapes) {
    Tensor x = random_tensor(shape, seed++, -3.0, 3.0);
    Tensor positive = random_tensor(shape, seed++, 0.1, 4.0);
    check_parity("neg", [](const auto& v) { return neg(v[0]); }, {x});
    check_parity("exp", [](const auto& v) { return exp(v[0]); }, {x});
    check_parity("log", [](const auto& v) { return log(v[0]); }, {positive});
    check_parity("tanh", [](const auto& v) { return tanh(v[0]); }, {x});
    check_parity("sigmoid", [](const auto& v) { return sigmoid(v[0]); }, {x});
    check_parity("relu", [](const auto& v) { return relu(v[0]); }, {x});
    check_parity("gelu", [](const auto& v) { return gelu(v[0]); }, {x});
    check_parity("sqrt", [](const auto& v) { return sqrt(v[0]); }, {positive});
    check_parity("pow 3", [](const auto& v) { return pow(v[0], 3.0); }, {x});
    check_parity("pow 0.5", [](const auto& v) { return pow(v[0], 0.5); }, {positive});
    check_parity("pow 0", [](const auto& v) { return pow(v[0], 0.0); }, {x});
  }
}

TEST_CASE("parity: cast between dtypes") {
  HKT_PARITY_OR_SKIP();
  Tensor x = random_tensor({5, 7}, 3, -50.0, 50.0);
  check_parity("cast float32 -> float64 -> float32",
               [](const auto& v) { return cast(cast(v[0], DType::Float64), DType::Float32); }, {x});
  for (DType dtype : {DType::Int32, DType::Int64, DType::Float64}) {
    Tensor on_gpu = cast(x.to(gpu()), dtype);
    REQUIRE(on_gpu.dtype() == dtype);
    INFO("cast to " << dtype_name(dtype));
    CHECK(cast(x, dtype).to_vector<double>() == on_gpu.to_vector<double>());
    CHECK(cast(on_gpu, DType::Float32).to_vector<double>() == cast(cast(x, dtype), DType::Float32).to_vector<double>());
  }
}

TEST_CASE("parity: gathers (index_select, embedding, upsample) and their scatter-add gradient") {
  HKT_PARITY_OR_SKIP();
  for (DType index_dtype : {DType::Int64, DType::Int32}) {
    Tensor index = index_tensor({3, 0, 3, 1, 3}, index_dtype);
    check_parity("index_select axis 1", [](const auto& v) { return index_select(v[0], 1, v[1]); },
                 {random_tensor({5, 4, 3}, 1), index});
    check_parity("index_select axis 0", [](const auto& v) { return index_select(v[0], 0, v[1]); },
                 {random_tensor({4, 9}, 2), index});
    check_parity("index_select last axis", [](const auto& v) { return index_select(v[0], -1, v[1]); },
                 {random_tensor({2, 3, 4}, 3), index});
  }
  Tensor tokens = Tensor::from_doubles({1, 7, 7, 0, 9, 1, 1, 3, 2, 9, 7, 0, 5, 5}, {2, 7}, DType::Int64);
  check_parity("embedding", [](const auto& v) { return embedding(v[0], v[1]); }, {random_tensor({10, 6}, 4), tokens});
  // An embedding with many repeats of one row: the atomics add many terms.
  std::vector<double> repeated(4096, 2.0);
  check_parity("embedding, one token repeated",
               [](const auto& v) { return embedding(v[0], v[1]); },
               {random_tensor({3, 33}, 5), Tensor::from_doubles(repeated, {64, 64}, DType::Int64)}, 1e-4);
  Tensor map = query_index_map(9, 1, 2, true);  // causal: starts with −1
  check_parity("upsample", [](const auto& v) { return upsample(v[0], 1, v[1]); },
               {random_tensor({2, level_length(9, 1, 2), 3}, 6), map});
}

TEST_CASE("parity: softmax and log_softmax along every axis") {
  HKT_PARITY_OR_SKIP();
  const std::vector<std::pair<Shape, int64_t>> cases = {
      {{4, 10}, -1}, {{3, 5, 7}, 1}, {{1, 1}, 0}, {{2, 1000}, 1}, {{6, 3}, 0}, {{2, 3, 300}, -1}, {{5, 1}, 1}};
  uint64_t seed = 30;
  for (const auto& [shape, axis] : cases) {
    Tensor x = random_tensor(shape, seed++, -5.0, 5.0);
    const int64_t a = axis;
    check_parity("softmax", [a](const auto& v) { return softmax(v[0], a); }, {x});
    check_parity("log_softmax", [a](const auto& v) { return log_softmax(v[0], a); }, {x});
  }
  // Masked attention rows: −inf entries, and one row masked entirely (y = 0).
  Tensor mask = Tensor::from_doubles({0, 1, 0, 1, 1, 1, 1, 1, 0, 0, 0, 1}, {3, 4}, DType::Int64);
  check_parity("softmax of masked rows",
               [mask](const auto& v) {
                 return softmax(masked_fill(v[0], mask.to(v[0].device()), -std::numeric_limits<double>::infinity()), -1);
               },
               {random_tensor({3, 4}, 40)});
}

TEST_CASE("parity: depthwise_conv1d with strides, kernels and optional bias") {
  HKT_PARITY_OR_SKIP();
  struct Case {
    int64_t B, T, C, k, stride;
    bool bias;
  };
  uint64_t seed = 50;
  for (const Case& c : {Case{2, 9, 5, 3, 1, true}, Case{2, 9, 5, 3, 2, true}, Case{1, 1, 1, 1, 1, false},
                        Case{3, 17, 4, 5, 3, false}, Case{2, 16, 64, 2, 2, true}}) {
    INFO("B " << c.B << " T " << c.T << " C " << c.C << " k " << c.k << " stride " << c.stride);
    std::vector<Tensor> inputs = {random_tensor({c.B, c.T, c.C}, seed++), random_tensor({c.C, c.k}, seed++)};
    if (c.bias) inputs.push_back(random_tensor({c.C}, seed++));
    const int64_t stride = c.stride;
    check_parity("depthwise_conv1d",
                 [stride](const auto& v) { return depthwise_conv1d(v[0], v[1], v.size() > 2 ? v[2] : Tensor(), stride); },
                 inputs);
  }
}

TEST_CASE("parity: masked_fill with broadcast masks of every dtype") {
  HKT_PARITY_OR_SKIP();
  Tensor x = random_tensor({3, 4, 5}, 60);
  for (DType dtype : {DType::Int64, DType::Int32, DType::Float32, DType::Float64}) {
    Tensor mask = Tensor::from_doubles({1, 0, 0, 1}, {4, 1}, dtype);
    check_parity("masked_fill", [mask](const auto& v) { return masked_fill(v[0], mask.to(v[0].device()), -7.5); }, {x});
  }
  Tensor full_mask = Tensor::from_doubles(std::vector<double>(60, 0.0), {3, 4, 5}, DType::Int64);
  check_parity("masked_fill, nothing masked", [full_mask](const auto& v) { return masked_fill(v[0], full_mask.to(v[0].device()), 1.0); },
               {x});
}

TEST_CASE("parity: sum, mean and max along axes and over everything") {
  HKT_PARITY_OR_SKIP();
  const std::vector<Shape> shapes = {{3, 4, 5}, {1000}, {1}, {2, 1, 3}, {70, 300}};
  uint64_t seed = 70;
  for (const Shape& shape : shapes) {
    Tensor x = random_tensor(shape, seed++);
    check_parity("sum all", [](const auto& v) { return sum(v[0]); }, {x}, 1e-5);
    check_parity("mean all", [](const auto& v) { return mean(v[0]); }, {x}, 1e-5);
    check_parity("max all", [](const auto& v) { return max(v[0]); }, {x});
    for (int64_t axis = 0; axis < static_cast<int64_t>(shape.size()); ++axis) {
      check_parity("sum axis", [axis](const auto& v) { return sum(v[0], axis); }, {x}, 1e-5);
      check_parity("sum axis keepdim", [axis](const auto& v) { return sum(v[0], axis, true); }, {x}, 1e-5);
      check_parity("mean axis", [axis](const auto& v) { return mean(v[0], axis); }, {x}, 1e-5);
      check_parity("max axis", [axis](const auto& v) { return max(v[0], axis, true); }, {x});
    }
  }
}

TEST_CASE("parity: gemm, matmul and linear with transposes, batches and shared operands") {
  HKT_PARITY_OR_SKIP();
  const double tolerance = 1e-4;  // cuBLAS sums in another order
  check_parity("matmul", [](const auto& v) { return matmul(v[0], v[1]); },
               {random_tensor({3, 4}, 1), random_tensor({4, 5}, 2)}, tolerance);
  check_parity("matmul odd sizes", [](const auto& v) { return matmul(v[0], v[1]); },
               {random_tensor({17, 33}, 3), random_tensor({33, 9}, 4)}, tolerance);
  check_parity("matmul 1x1", [](const auto& v) { return matmul(v[0], v[1]); },
               {random_tensor({1, 1}, 5), random_tensor({1, 1}, 6)}, tolerance);
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      INFO("trans_a " << ta << " trans_b " << tb);
      Tensor a = random_tensor(ta ? Shape{2, 6, 3} : Shape{2, 3, 6}, 7);
      Tensor b = random_tensor(tb ? Shape{2, 5, 6} : Shape{2, 6, 5}, 8);
      check_parity("gemm batched", [ta, tb](const auto& v) { return gemm(v[0], v[1], ta, tb); }, {a, b}, tolerance);
      Tensor shared = random_tensor(tb ? Shape{5, 6} : Shape{6, 5}, 9);
      check_parity("gemm with a shared b", [ta, tb](const auto& v) { return gemm(v[0], v[1], ta, tb); }, {a, shared},
                   tolerance);
    }
  check_parity("linear", [](const auto& v) { return linear(v[0], v[1], v[2]); },
               {random_tensor({2, 3, 4}, 10), random_tensor({6, 4}, 11), random_tensor({6}, 12)}, tolerance);
  check_parity("linear without bias", [](const auto& v) { return linear(v[0], v[1]); },
               {random_tensor({5, 64}, 13), random_tensor({32, 64}, 14)}, tolerance);
}

TEST_CASE("parity: layer_norm forward and fused backward") {
  HKT_PARITY_OR_SKIP();
  const std::vector<Shape> shapes = {{4, 7}, {2, 3, 64}, {1, 1}, {5, 513}, {100, 32}};
  uint64_t seed = 90;
  for (const Shape& shape : shapes) {
    const int64_t width = shape.back();
    check_parity("layer_norm", [](const auto& v) { return layer_norm(v[0], v[1], v[2]); },
                 {random_tensor(shape, seed, -3.0, 5.0), random_tensor({width}, seed + 1),
                  random_tensor({width}, seed + 2)},
                 1e-4);
    seed += 3;
  }
}

TEST_CASE("parity: permute, transpose, slice, concat and reshape") {
  HKT_PARITY_OR_SKIP();
  Tensor x = random_tensor({2, 3, 4}, 100);
  check_parity("permute", [](const auto& v) { return permute(v[0], {2, 0, 1}); }, {x});
  check_parity("transpose", [](const auto& v) { return transpose(v[0], 0, 2); }, {x});
  check_parity("slice", [](const auto& v) { return slice(v[0], 1, 1, 3); }, {x});
  check_parity("slice last axis", [](const auto& v) { return slice(v[0], -1, 0, 1); }, {x});
  check_parity("concat", [](const auto& v) { return concat({v[0], v[1]}, 1); }, {x, random_tensor({2, 5, 4}, 101)});
  check_parity("reshape", [](const auto& v) { return reshape(v[0], {4, 6}); }, {x});
  Tensor ids = Tensor::from_doubles({1, 2, 3, 4, 5, 6}, {2, 3}, DType::Int64);
  CHECK(permute(ids.to(gpu()), {1, 0}).to_vector<int64_t>() == permute(ids, {1, 0}).to_vector<int64_t>());
}

TEST_CASE("parity: cross_entropy and its fused backward") {
  HKT_PARITY_OR_SKIP();
  for (DType dtype : {DType::Int64, DType::Int32}) {
    check_parity("cross_entropy", [](const auto& v) { return cross_entropy(v[0], v[1]); },
                 {random_tensor({5, 7}, 110, -4.0, 4.0), index_tensor({0, 6, 3, 3, 1}, dtype)});
  }
  check_parity("cross_entropy 1x1", [](const auto& v) { return cross_entropy(v[0], v[1]); },
               {random_tensor({1, 1}, 111), index_tensor({0})});
  std::vector<int64_t> labels(300);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int64_t>((i * 37) % 1000);
  check_parity("cross_entropy wide", [](const auto& v) { return cross_entropy(v[0], v[1]); },
               {random_tensor({300, 1000}, 112, -4.0, 4.0), index_tensor(labels)}, 1e-5);
}

TEST_CASE("parity: dropout draws its mask on the host, so both devices drop the same elements") {
  HKT_PARITY_OR_SKIP();
  check_parity("dropout",
               [](const auto& v) {
                 Generator generator(5);
                 return dropout(v[0], 0.3, generator, true);
               },
               {random_tensor({8, 16}, 120)});
}

TEST_CASE("parity: SGD, AdamW and gradient clipping update the same parameters") {
  HKT_PARITY_OR_SKIP();
  auto run = [](Device device, bool adamw) {
    Tensor p1 = random_tensor({7, 5}, 130).to(device), p2 = random_tensor({33}, 131).to(device);
    p1.requires_grad_(true);
    p2.requires_grad_(true);
    NamedTensors parameters = {{"p1", p1}, {"p2", p2}};
    std::unique_ptr<Optimizer> optimizer;
    if (adamw) optimizer = std::make_unique<AdamW>(parameters, AdamWOptions{.lr = 0.01, .weight_decay = 0.1});
    else optimizer = std::make_unique<SGD>(parameters, SGDOptions{.lr = 0.05, .momentum = 0.9, .weight_decay = 0.01});
    std::vector<double> norms;
    for (int step = 0; step < 4; ++step) {
      optimizer->zero_grad();
      Tensor w1 = random_tensor({7, 5}, 140 + step).to(device), w2 = random_tensor({33}, 150 + step).to(device);
      add(sum(mul(mul(p1, p1), w1)), sum(mul(p2, w2))).backward();
      norms.push_back(clip_grad_norm(parameters, 0.5));
      optimizer->step();
    }
    return std::make_tuple(p1.detach(), p2.detach(), norms);
  };
  for (bool adamw : {false, true}) {
    INFO((adamw ? "AdamW" : "SGD"));
    auto [cpu1, cpu2, cpu_norms] = run(Device::cpu(), adamw);
    auto [gpu1, gpu2, gpu_norms] = run(gpu(), adamw);
    require_close("p1", cpu1, gpu1, 1e-5);
    require_close("p2", cpu2, gpu2, 1e-5);
    for (size_t i = 0; i < cpu_norms.size(); ++i) CHECK(gpu_norms[i] == Approx(cpu_norms[i]).epsilon(1e-5));
  }
}

TEST_CASE("parity: the per-parameter adamw_step kernel (AdamW on CUDA normally takes the multi-tensor one)") {
  HKT_PARITY_OR_SKIP();
  const AdamWHyper hyper{0.01, 0.9, 0.98, 1e-8, 0.1, 1 - 0.9, 1 - 0.98 * 0.98};
  auto run = [&](Device device) {
    Tensor p = random_tensor({1000, 3}, 160).to(device), g = random_tensor({1000, 3}, 161).to(device);
    Tensor m = random_tensor({1000, 3}, 162).to(device), v = random_tensor({1000, 3}, 163, 0.0, 1.0).to(device);
    for (int step = 0; step < 2; ++step) dispatch::kernel<AdamWKernel>(kernels::adamw_step, device)(p, g, m, v, hyper);
    return std::vector<Tensor>{p, m, v};
  };
  const std::vector<Tensor> cpu = run(Device::cpu()), cuda = run(gpu());
  require_close("param", cpu[0], cuda[0], 1e-5);
  require_close("exp_avg", cpu[1], cuda[1], 1e-5);
  require_close("exp_avg_sq", cpu[2], cuda[2], 1e-5);
}

TEST_CASE("parity: float64 on CUDA is an error naming the op and the dtype") {
  HKT_REQUIRE_CUDA_OR_SKIP();
  Tensor x = Tensor::ones({2, 3}, DType::Float64, gpu());
  REQUIRE_THROWS_WITH(add(x, x), Catch::Contains("add") && Catch::Contains("float64"));
  REQUIRE_THROWS_WITH(exp(x), Catch::Contains("exp") && Catch::Contains("float64"));
  REQUIRE_THROWS_WITH(softmax(x, -1), Catch::Contains("softmax") && Catch::Contains("float64"));
  REQUIRE_THROWS_WITH(matmul(x, transpose(x, 0, 1)), Catch::Contains("gemm") && Catch::Contains("float64"));
  REQUIRE_THROWS_WITH(sum(x), Catch::Contains("sum") && Catch::Contains("float64"));
}

TEST_CASE("parity: mixing devices in one op is an error naming both devices") {
  HKT_REQUIRE_CUDA_OR_SKIP();
  Tensor a = Tensor::ones({2}), b = Tensor::ones({2}, DType::Float32, gpu());
  REQUIRE_THROWS_WITH(add(a, b), Catch::Contains("cpu") && Catch::Contains("cuda:0"));
}

#ifdef HKT_WITH_CUDA
TEST_CASE("parity: the caching allocator reuses freed blocks instead of calling cudaMalloc") {
  HKT_REQUIRE_CUDA_OR_SKIP();
  { Tensor warm = Tensor::zeros({1000, 257}, DType::Float32, gpu()); }
  const cuda::AllocatorStats before = cuda::allocator_stats(0);
  CHECK(before.bytes_cached >= 1000 * 257 * 4);
  {
    Tensor again = Tensor::zeros({1000, 257}, DType::Float32, gpu());
    const cuda::AllocatorStats during = cuda::allocator_stats(0);
    CHECK(during.device_mallocs == before.device_mallocs);
    CHECK(during.cache_hits == before.cache_hits + 1);
    CHECK(during.bytes_in_use >= before.bytes_in_use + 1000 * 257 * 4);
  }
  cuda::empty_cache(0);
  const cuda::AllocatorStats after = cuda::allocator_stats(0);
  CHECK(after.bytes_cached == 0);
  CHECK(after.device_frees > before.device_frees);
}
#endif
