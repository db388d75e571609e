#include <cstdlib>

#include "engine/threads.h"
#include "tests/gradcheck.h"

using namespace hkt;
using hkt::testing::gradcheck;
using hkt::testing::max_abs_diff;
using hkt::testing::random_tensor;

namespace {

// Plain-loop reduction of x seen as [outer, extent, inner] around `axis`.
std::vector<double> reduce_reference(const Tensor& x, int64_t axis, bool take_max) {
  auto v = x.to_vector<double>();
  int64_t outer = 1, inner = 1, extent = x.size(axis);
  for (int64_t i = 0; i < axis; ++i) outer *= x.size(i);
  for (int64_t i = axis + 1; i < x.dim(); ++i) inner *= x.size(i);
  std::vector<double> out;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double acc = take_max ? v[o * extent * inner + i] : 0.0;
      for (int64_t k = 0; k < extent; ++k) {
        double value = v[(o * extent + k) * inner + i];
        acc = take_max ? std::max(acc, value) : acc + value;
      }
      out.push_back(acc);
    }
  return out;
}

}  // namespace

TEST_CASE("sum, mean and max along an axis match plain loops") {
  for (Shape shape : {Shape{5}, Shape{3, 4}, Shape{2, 3, 5}, Shape{1, 1, 7}, Shape{4, 1}}) {
    Tensor x = random_tensor(shape, 11);
    for (int64_t axis = 0; axis < x.dim(); ++axis) {
      INFO(shape_str(shape) << " axis " << axis);
      auto sums = reduce_reference(x, axis, false);
      CHECK(max_abs_diff(sum(x, axis), sums) < 1e-12);
      std::vector<double> means;
      for (double s : sums) means.push_back(s / static_cast<double>(x.size(axis)));
      CHECK(max_abs_diff(mean(x, axis), means) < 1e-12);
      CHECK(max_abs_diff(max(x, axis), reduce_reference(x, axis, true)) == 0);
      Shape kept = shape;
      kept[axis] = 1;
      CHECK(sum(x, axis, true).shape() == kept);
      CHECK(max(x, -1 - (x.dim() - 1 - axis)).shape() == sum(x, axis).shape());  // negative axes
    }
  }
}

TEST_CASE("long sums over few outputs (bias gradients) are split in fixed chunks: reference, any thread count") {
  // Σ over 16 384 rows into 64 or 128 values, and over a whole long vector:
  // the extent is cut into chunks summed in parallel and added in order.
  const int threads = num_threads();
  for (Shape shape : {Shape{5000, 64}, Shape{4100, 128}, Shape{2, 3000, 3}, Shape{9000}}) {
    INFO(shape_str(shape));
    Tensor x = random_tensor(shape, 21, DType::Float32);
    const int64_t axis = shape.size() == 3 ? 1 : 0;
    set_num_threads(1);
    const Tensor one = sum(x, axis);
    set_num_threads(2);
    const Tensor two = sum(x, axis);
    CHECK(one.to_vector<double>() == two.to_vector<double>());
    CHECK(max_abs_diff(one, reduce_reference(x.to(DType::Float64), axis, false)) < 1e-3);
    Tensor x64 = x.to(DType::Float64);
    CHECK(max_abs_diff(sum(x64, axis), reduce_reference(x64, axis, false)) < 1e-10);
  }
  set_num_threads(threads);
}

TEST_CASE("reductions over all elements") {
  Tensor x = Tensor::from_vector<double>({1, -2, 7, 4, 0, 3}, {2, 3});
  CHECK(sum(x).item() == 13);
  CHECK(sum(x).dim() == 0);
  CHECK(mean(x).item() == Approx(13.0 / 6));
  CHECK(max(x).item() == 7);
}

TEST_CASE("reductions: gradients") {
  for (Shape shape : {Shape{1}, Shape{5}, Shape{3, 4}, Shape{2, 3, 5}}) {
    Tensor x = random_tensor(shape, 12);
    for (int64_t axis = 0; axis < x.dim(); ++axis)
      for (bool keepdim : {false, true}) {
        INFO(shape_str(shape) << " axis " << axis << " keepdim " << keepdim);
        gradcheck([=](const std::vector<Tensor>& in) { return sum(in[0], axis, keepdim); }, {x});
        gradcheck([=](const std::vector<Tensor>& in) { return mean(in[0], axis, keepdim); }, {x});
        gradcheck([=](const std::vector<Tensor>& in) { return max(in[0], axis, keepdim); }, {x});
      }
    gradcheck([](const std::vector<Tensor>& in) { return sum(in[0]); }, {x});
    gradcheck([](const std::vector<Tensor>& in) { return mean(in[0]); }, {x});
    gradcheck([](const std::vector<Tensor>& in) { return max(in[0]); }, {x});
  }
}

TEST_CASE("max sends the gradient to the first of tied maxima") {
  Tensor x = Tensor::from_vector<double>({2, 5, 5, 1}, {4});
  x.requires_grad_();
  max(x).backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 1, 0, 0});
}

TEST_CASE("max does not hide a NaN") {
  Tensor x = Tensor::from_vector<float>({1.f, NAN, 3.f}, {3});
  CHECK(std::isnan(max(x).item()));
}

TEST_CASE("sum_to inverts broadcasting") {
  Tensor g = Tensor::ones({2, 3, 4}, DType::Float64);
  CHECK(sum_to(g, {3, 1}).to_vector<double>() == std::vector<double>{8, 8, 8});
  CHECK(sum_to(g, {}).item() == 24);
  REQUIRE_THROWS_WITH(sum_to(g, {5}), "sum_to: shapes [5] and [2, 3, 4] cannot be broadcast together");
}

TEST_CASE("sum_to over runs of adjacent stretched axes matches a plain loop") {
  // [2, 3, 4, 5] to every target its broadcasts allow that mixes kept and stretched axes.
  const Tensor g = hkt::testing::random_tensor({2, 3, 4, 5}, 30);
  const std::vector<double> v = g.to_vector<double>();
  for (const Shape& target : {Shape{5}, Shape{1, 1, 5}, Shape{3, 1, 5}, Shape{3, 4, 1}, Shape{1, 4, 1}, Shape{2, 1, 1, 5},
                              Shape{2, 3, 1, 1}, Shape{1}}) {
    INFO(shape_str(target));
    Shape full(4 - target.size(), 1);
    full.insert(full.end(), target.begin(), target.end());  // target with its leading dims as 1
    std::vector<double> expected(static_cast<size_t>(shape_numel(target)), 0.0);
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j)
        for (int64_t k = 0; k < 4; ++k)
          for (int64_t l = 0; l < 5; ++l) {
            const int64_t at[4] = {i, j, k, l};
            int64_t flat = 0;
            for (int axis = 0; axis < 4; ++axis) flat = flat * full[axis] + (full[axis] == 1 ? 0 : at[axis]);
            expected[static_cast<size_t>(flat)] += v[static_cast<size_t>(((i * 3 + j) * 4 + k) * 5 + l)];
          }
    const Tensor reduced = sum_to(g, target);
    CHECK(reduced.shape() == target);
    CHECK(hkt::testing::max_abs_diff(reduced, expected) <= 1e-12);
  }
}

TEST_CASE("reductions reject bad input") {
  Tensor x = Tensor::zeros({4, 3});
  REQUIRE_THROWS_WITH(sum(x, 2), "sum: axis 2 out of range for shape [4, 3]");
  REQUIRE_THROWS_WITH(max(Tensor::zeros({0, 3}), 0), "max: empty axis 0 of shape [0, 3]");
  REQUIRE_THROWS_WITH(mean(Tensor::zeros({0})), "mean: empty tensor of shape [0]");
  REQUIRE_THROWS_WITH(max(Tensor::zeros({2}, DType::Int32)), "max: expected a float32 or float64 tensor, got int32[2]");
}

TEST_CASE("kernels stay on one thread below a work size that follows libgomp's wait policy") {
  CHECK(parallel_min_work_from(nullptr, nullptr, nullptr) == 32768);  // libgomp's default: threads spin
  CHECK(parallel_min_work_from(nullptr, nullptr, "active") == 32768);
  CHECK(parallel_min_work_from(nullptr, nullptr, "passive") == 524288);  // threads sleep: a region costs a wake-up
  CHECK(parallel_min_work_from(nullptr, nullptr, "PASSIVE") == 524288);
  CHECK(parallel_min_work_from(nullptr, "20000", "passive") == 32768);  // an explicit spin count wins, as in libgomp
  CHECK(parallel_min_work_from(nullptr, "0", nullptr) == 524288);
  CHECK(parallel_min_work_from("1000", nullptr, "passive") == 1000);  // HKT_PARALLEL_MIN_WORK sets it
  CHECK(parallel_min_work_from("-5", nullptr, nullptr) == 0);
  // The tests run with OMP_WAIT_POLICY=passive and HKT_PARALLEL_MIN_WORK=32768 (CMakeLists.txt).
  if (const char* forced = std::getenv("HKT_PARALLEL_MIN_WORK")) CHECK(parallel_min_work() == std::atoll(forced));
}
