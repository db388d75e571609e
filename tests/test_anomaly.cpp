// Anomaly mode (set_detect_anomaly / DetectAnomalyGuard / hkt-train
// --detect-anomaly): the first op whose forward output or backward gradient
// holds NaN or Inf is named, with the pass and the shapes; off, nothing changes.
#include <cmath>
#include <limits>

#include "hkt.h"
#include "tests/data_test_util.h"
#include "tests/gradcheck.h"
#include "tests/run_test_util.h"

using namespace hkt;
using Catch::Contains;
using Catch::Matches;

TEST_CASE("anomaly mode is off by default and the guard restores the previous state") {
  CHECK_FALSE(detect_anomaly());
  Tensor x = Tensor::from_vector<float>({-1.0f, 4.0f}, {2}).requires_grad_();
  Tensor y = log(x);  // NaN, silently, as without anomaly mode
  CHECK(std::isnan(y.to_vector<float>()[0]));
  {
    DetectAnomalyGuard on;
    CHECK(detect_anomaly());
    {
      DetectAnomalyGuard off(false);
      CHECK_FALSE(detect_anomaly());
    }
    CHECK(detect_anomaly());
  }
  CHECK_FALSE(detect_anomaly());
}

TEST_CASE("anomaly mode: log of a negative number fails in the forward of 'log', naming the shapes") {
  DetectAnomalyGuard on;
  Tensor x = Tensor::from_vector<float>({1.0f, 2.0f, -3.0f, 4.0f, 5.0f, 6.0f}, {2, 3}).requires_grad_();
  REQUIRE_THROWS_WITH(log(x), Contains("detect_anomaly: forward of 'log' produced NaN at flat index 2 in its output "
                                       "float32[2, 3] (inputs float32[2, 3])"));
  // Also without grad: the check belongs to the op, not to the graph.
  NoGradGuard no_grad;
  REQUIRE_THROWS_WITH(log(x), Contains("forward of 'log' produced NaN"));
}

TEST_CASE("anomaly mode: an overflow to Inf is caught where it starts, a division by zero in the forward too") {
  DetectAnomalyGuard on;
  Tensor big = Tensor::from_vector<float>({1.0f, 100.0f}, {2}).requires_grad_();
  REQUIRE_THROWS_WITH(exp(big), Contains("forward of 'exp' produced Inf at flat index 1 in its output float32[2]"));
  Tensor a = Tensor::from_vector<double>({1.0, -1.0}, {1, 2}).requires_grad_();
  Tensor zero = Tensor::zeros({1, 2}, DType::Float64);
  REQUIRE_THROWS_WITH(div(a, zero), Contains("forward of 'div' produced Inf at flat index 0 in its output float64[1, 2] "
                                             "(inputs float64[1, 2], float64[1, 2])"));
}

TEST_CASE("anomaly mode: a division by zero in the backward of sqrt at 0 fails in the backward of 'sqrt'") {
  Tensor x = Tensor::from_vector<float>({0.0f, 1.0f, 4.0f}, {3}).requires_grad_();
  {
    // Without anomaly mode the gradient is silently infinite.
    Tensor loss = sum(sqrt(x));
    loss.backward();
    CHECK(std::isinf(x.grad().to_vector<float>()[0]));
    x.set_grad(Tensor());
  }
  DetectAnomalyGuard on;
  Tensor loss = sum(sqrt(x));  // the forward is finite: sqrt(0) = 0
  REQUIRE_THROWS_WITH(loss.backward(), Contains("detect_anomaly: backward of 'sqrt' produced Inf at flat index 0 in the "
                                                "gradient float32[3] for input 0 (inputs float32[3], output [3], "
                                                "output gradient float32[3])"));
}

TEST_CASE("anomaly mode: masked -inf attention scores and their softmax are not anomalies") {
  DetectAnomalyGuard on;
  Tensor scores = Tensor::from_vector<float>({0.5f, 1.0f, 2.0f, -1.0f}, {1, 4}).requires_grad_();
  Tensor mask = Tensor::from_vector<int64_t>({0, 0, 1, 1}, {1, 4});
  Tensor masked = masked_fill(scores, mask, -std::numeric_limits<double>::infinity());
  Tensor probabilities = softmax(masked, 1);
  Tensor loss = sum(mul(probabilities, probabilities));
  REQUIRE_NOTHROW(loss.backward());
  CHECK(std::isfinite(scores.grad().to_vector<float>()[0]));
  CHECK(scores.grad().to_vector<float>()[2] == 0.0f);
}

TEST_CASE("hkt-train --detect-anomaly: a healthy run is unchanged, an exploding one names the first bad op") {
  hkt::testing::TempDir dir;
  hkt::testing::write_tiny_listops(dir.path());
  auto log = dir.path() / "log.txt";
  const std::string common = "--task listops --data " + dir.path().string() +
                             " --seq-len 24 --d-model 16 --layers 1 --heads 2 --d-ff 16 --batch 8 "
                             "--log-every 1 --eval-every 2 --eval-batches 1 --threads 1 --seed 4 ";
  for (const char* impl : {"fused", "composed"}) {
    INFO(impl);
    const std::string run = common + "--steps 4 --overwrite --attention-impl " + impl + " ";
    REQUIRE(hkt::testing::run_hkt_train(run + "--out " + (dir.path() / "plain").string(), log) == 0);
    REQUIRE(hkt::testing::run_hkt_train(run + "--detect-anomaly --out " + (dir.path() / "checked").string(), log) == 0);
    CHECK(hkt::testing::metrics_without_timing(dir.path() / "checked" / "metrics.jsonl") ==
          hkt::testing::metrics_without_timing(dir.path() / "plain" / "metrics.jsonl"));
  }
  const std::string exploding = common + "--lr 1e30 --warmup 0 --clip 0 --steps 20 --detect-anomaly ";
  CHECK(hkt::testing::run_hkt_train(exploding + "--out " + (dir.path() / "bad").string(), log) == 1);
  const std::string text = hkt::testing::read_text(log);
  INFO(text);
  CHECK(std::regex_search(text, std::regex("hkt-train: detect_anomaly: (forward|backward) of '[a-z_0-9]+' produced "
                                           "(NaN|-?Inf) at flat index [0-9]+ in (its output|the gradient) "
                                           "float32\\[[0-9, ]+\\]")));
}
