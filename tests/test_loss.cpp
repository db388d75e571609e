#include <cmath>

#include "tests/gradcheck.h"

using namespace hkt;
using hkt::testing::gradcheck;
using hkt::testing::max_abs_diff;
using hkt::testing::random_tensor;

namespace {

// Plain-loop per-row softmax in double.
std::vector<double> row_softmax(const std::vector<double>& logits, int64_t n, int64_t classes) {
  double m = logits[n * classes];
  for (int64_t c = 0; c < classes; ++c) m = std::max(m, logits[n * classes + c]);
  double total = 0;
  for (int64_t c = 0; c < classes; ++c) total += std::exp(logits[n * classes + c] - m);
  std::vector<double> p(classes);
  for (int64_t c = 0; c < classes; ++c) p[c] = std::exp(logits[n * classes + c] - m) / total;
  return p;
}

double cross_entropy_reference(const Tensor& logits, const Tensor& labels) {
  auto x = logits.to_vector<double>();
  auto y = labels.to_vector<int64_t>();
  const int64_t rows = logits.size(0), classes = logits.size(1);
  double total = 0;
  for (int64_t n = 0; n < rows; ++n) total += -std::log(row_softmax(x, n, classes)[y[n]]);
  return total / static_cast<double>(rows);
}

// dL/dlogits = (softmax − onehot) · g / N.
std::vector<double> cross_entropy_grad_reference(const Tensor& logits, const Tensor& labels, double g) {
  auto x = logits.to_vector<double>();
  auto y = labels.to_vector<int64_t>();
  const int64_t rows = logits.size(0), classes = logits.size(1);
  std::vector<double> grad;
  for (int64_t n = 0; n < rows; ++n) {
    auto p = row_softmax(x, n, classes);
    for (int64_t c = 0; c < classes; ++c) grad.push_back((p[c] - (c == y[n] ? 1.0 : 0.0)) * g / rows);
  }
  return grad;
}

Tensor random_labels(int64_t rows, int64_t classes, uint64_t seed, DType dtype) {
  Generator generator(seed);
  std::vector<double> values;
  for (int64_t n = 0; n < rows; ++n) values.push_back(std::floor(generator.uniform() * classes));
  return Tensor::from_doubles(values, {rows}, dtype);
}

const std::vector<std::pair<int64_t, int64_t>> kShapes = {{1, 1}, {4, 5}, {3, 1}, {1, 7}, {8, 3}, {2, 10}};

}  // namespace

TEST_CASE("cross_entropy matches a plain-loop reference") {
  for (auto [rows, classes] : kShapes)
    for (DType label_dtype : {DType::Int32, DType::Int64}) {
      INFO("[" << rows << ", " << classes << "] labels " << dtype_name(label_dtype));
      Tensor logits = random_tensor({rows, classes}, 21);
      Tensor labels = random_labels(rows, classes, 22, label_dtype);
      Tensor loss = cross_entropy(logits, labels);
      CHECK(loss.shape() == Shape{});
      CHECK(std::abs(loss.item() - cross_entropy_reference(logits, labels)) < 1e-14);
    }
}

TEST_CASE("cross_entropy in float32 on a large batch (many threads)") {
  Tensor logits = random_tensor({64, 1000}, 23, DType::Float32);
  Tensor labels = random_labels(64, 1000, 24, DType::Int64);
  logits.requires_grad_(true);
  Tensor loss = cross_entropy(logits, labels);
  CHECK(loss.dtype() == DType::Float32);
  CHECK(std::abs(loss.item() - cross_entropy_reference(logits, labels)) < 1e-5);
  loss.backward();
  CHECK(max_abs_diff(logits.grad(), cross_entropy_grad_reference(logits, labels, 1.0)) < 1e-8);
}

TEST_CASE("cross_entropy: the fused backward is (softmax − onehot) · g / N") {
  Tensor logits = random_tensor({5, 4}, 25);
  Tensor labels = random_labels(5, 4, 26, DType::Int32);
  logits.requires_grad_(true);
  // An upstream gradient other than 1 reaches the kernel as grad_loss.
  mul(cross_entropy(logits, labels), 3.0).backward();
  CHECK(max_abs_diff(logits.grad(), cross_entropy_grad_reference(logits, labels, 3.0)) < 1e-15);
}

TEST_CASE("cross_entropy: gradcheck of the fused path") {
  for (auto [rows, classes] : kShapes) {
    INFO("[" << rows << ", " << classes << "]");
    Tensor logits = random_tensor({rows, classes}, 27);
    Tensor labels = random_labels(rows, classes, 28, DType::Int64);
    gradcheck([](const std::vector<Tensor>& in) { return cross_entropy(in[0], in[1]); }, {logits, labels});
    // Through a graph: the loss of a scaled input, used twice.
    gradcheck(
        [](const std::vector<Tensor>& in) {
          return add(cross_entropy(mul(in[0], 2.0), in[1]), cross_entropy(in[0], in[1]));
        },
        {logits, labels});
  }
}

TEST_CASE("cross_entropy is stable for large logits") {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    Tensor logits = Tensor::from_doubles({1000, -1000, 0, -1000, 1000, 1000}, {2, 3}, dtype);
    Tensor labels = Tensor::from_vector<int64_t>({0, 1}, {2});
    logits.requires_grad_(true);
    Tensor loss = cross_entropy(logits, labels);
    // Row 0: −log 1 = 0. Row 1: 1000 + log 2 − 1000 = log 2.
    CHECK(std::abs(loss.item() - std::log(2.0) / 2) < (dtype == DType::Float32 ? 1e-4 : 1e-12));
    loss.backward();
    for (double v : logits.grad().to_vector<double>()) CHECK(std::isfinite(v));
  }
}

TEST_CASE("cross_entropy rejects bad input with the op, row and shapes named") {
  Tensor logits = Tensor::zeros({4, 5});
  REQUIRE_THROWS_WITH(cross_entropy(logits, Tensor::from_vector<int64_t>({0, 1, 7, 2}, {4})),
                      "cross_entropy: label 7 at row 2 is out of range for 5 classes");
  REQUIRE_THROWS_WITH(cross_entropy(logits, Tensor::from_vector<int32_t>({0, -1, 0, 2}, {4})),
                      "cross_entropy: label -1 at row 1 is out of range for 5 classes");
  REQUIRE_THROWS_WITH(cross_entropy(Tensor::zeros({0, 5}), Tensor::zeros({0}, DType::Int64)),
                      "cross_entropy: empty batch, logits [0, 5]");
  REQUIRE_THROWS_WITH(cross_entropy(Tensor::zeros({4, 0}), Tensor::zeros({4}, DType::Int64)),
                      "cross_entropy: no classes, logits [4, 0]");
  REQUIRE_THROWS_WITH(cross_entropy(Tensor::zeros({4}), Tensor::zeros({4}, DType::Int64)),
                      "cross_entropy: logits must be [N, C], got [4]");
  REQUIRE_THROWS_WITH(cross_entropy(logits, Tensor::zeros({4, 1}, DType::Int64)),
                      "cross_entropy: labels must be [N], got [4, 1]");
  REQUIRE_THROWS_WITH(cross_entropy(logits, Tensor::zeros({3}, DType::Int64)),
                      "cross_entropy: logits [4, 5] but labels [3]");
  REQUIRE_THROWS_WITH(cross_entropy(logits, Tensor::zeros({4})),
                      "cross_entropy: expected an int32 or int64 index tensor, got float32[4]");
  REQUIRE_THROWS_WITH(cross_entropy(Tensor::zeros({4, 5}, DType::Int32), Tensor::zeros({4}, DType::Int64)),
                      "cross_entropy: expected a float32 or float64 tensor, got int32[4, 5]");
}
