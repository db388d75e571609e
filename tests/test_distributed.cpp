// Data-parallel training: shards, the bucketed gradient all-reduce and the
// watchdog in one process; then hkt-train under `mpirun -np 2` against a
// single process (same global batch), resumes across rank counts and a rank
// that dies. The mpirun tests skip, with one line, in a build without MPI or
// where mpirun is not on PATH.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "data/listops.h"
#include "distributed/gradients.h"
#include "distributed/watchdog.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "tests/data_test_util.h"
#include "tests/run_test_util.h"

using namespace hkt;
namespace fs = std::filesystem;

namespace {

// `ranks` ranks that all hold the same values: a sum multiplies by `ranks`.
// Records the length of every host all-reduce.
class IdenticalRanks final : public distributed::Communicator {
 public:
  explicit IdenticalRanks(int ranks) : ranks_(ranks) {}
  int rank() const override { return 0; }
  int size() const override { return ranks_; }
  std::string backend() const override { return "test"; }
  void all_reduce_sum(float* data, int64_t count) override { scale(data, count); }
  void all_reduce_sum(double* data, int64_t count) override { scale(data, count); }
  using Communicator::all_reduce_sum;
  void broadcast(void*, int64_t, int) override { ++broadcasts; }
  void barrier() override {}
  void set_timeout(double) override {}
  void abort(int) override {}
  std::vector<int64_t> reduced_counts;
  int broadcasts = 0;

 private:
  template <class T>
  void scale(T* data, int64_t count) {
    reduced_counts.push_back(count);
    for (int64_t i = 0; i < count; ++i) data[i] *= ranks_;
  }
  int ranks_;
};

Tensor parameter(const std::vector<float>& values) {
  Tensor p = Tensor::from_vector(values, {static_cast<int64_t>(values.size())});
  p.requires_grad_();
  return p;
}

using testing::read_text;

// ---- hkt-train under mpirun ------------------------------------------------

bool mpirun_available() {
  static const bool available = [] {
    if (!distributed::built_with_mpi()) {
      std::printf("built without MPI (HKT_MPI=OFF): mpirun tests skipped\n");
      return false;
    }
    if (std::system("command -v mpirun > /dev/null 2>&1") != 0) {
      std::printf("mpirun is not on PATH: mpirun tests skipped\n");
      return false;
    }
    return true;
  }();
  return available;
}

struct Outcome {
  int status;
  double seconds;
  std::string output;
};

// Runs hkt-train with `arguments`, under `mpirun -np ranks [mpirun_options]`
// when ranks > 0, killed after 120 s whatever happens (a hang fails the test,
// it does not stall CI). OpenMPI refuses root without the two
// ALLOW_RUN_AS_ROOT variables (CI containers run as root); --oversubscribe
// lets 2 ranks share fewer cores. Leak checking is off for the ranks in
// sanitizer builds: OpenMPI's plugins leak at exit from modules already
// unloaded, which no suppression can name (single-process runs keep it).
Outcome run_train(int ranks, const std::string& arguments, const fs::path& log,
                  const std::string& mpirun_options = "") {
  std::string command = "OMP_NUM_THREADS=1 timeout -s KILL 120 ";
  if (ranks > 0)
    command += "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
               "ASAN_OPTIONS=\"${ASAN_OPTIONS:-}:detect_leaks=0\" mpirun -np " +
               std::to_string(ranks) + " --oversubscribe --bind-to none --mca btl self,tcp " + mpirun_options + " ";
  command += std::string(HKT_BINARY_DIR) + "/hkt-train " + arguments + " > " + log.string() + " 2>&1";
  const auto start = std::chrono::steady_clock::now();
  int status = std::system(command.c_str());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, seconds, read_text(log)};
}

void write_listops(const fs::path& folder) { testing::write_tiny_listops(folder, 11, 140, 21); }

std::string tiny_run(const fs::path& data, int64_t batch, int64_t steps, int64_t eval_every = 5) {
  return "--task listops --data " + data.string() + " --seq-len 24 --d-model 16 --layers 1 --heads 2 --d-ff 16 " +
         "--batch " + std::to_string(batch) + " --steps " + std::to_string(steps) +
         " --log-every 1 --eval-every " + std::to_string(eval_every) +
         " --eval-batches 2 --checkpoint-every 5 --threads 1 --seed 7 --lr 3e-3 ";
}

// (step, loss) of the train lines and (step, val_loss) of the eval lines.
std::vector<std::pair<std::string, double>> losses(const fs::path& run) {
  std::vector<std::pair<std::string, double>> out;
  std::ifstream in(run / "metrics.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    Json json = parse_json(line);
    const std::string type = json.at("type").as_string();
    const std::string key = type == "train" ? "loss" : type == "eval" ? "val_loss" : "test_loss";
    out.emplace_back(type + " " + std::to_string(json.at("step").as_int()), json.at(key).as_number());
  }
  return out;
}

bool nearly_equal(double a, double b, double relative) {
  return std::abs(a - b) <= relative * std::max({std::abs(a), std::abs(b), 1e-3});
}

// Two checkpoints agree to `relative`: each parameter tensor within
// relative * its largest value (max |a - b| <= relative * max |a|), and each
// kind of optimizer state (exp_avg, exp_avg_sq, step) within relative * its
// largest value over the whole model (some gradients are 1e-4 of others, and
// their summation-order rounding is not small next to themselves).
// Except the attention key biases (`*.k.bias`): softmax is invariant to a
// shift of a row's scores, so they do not change the model's function, their
// exact gradient is zero and what the float gradient holds is rounding noise
// (below 1e-9, checked), which differs with the summation order. Their values
// are that noise integrated by AdamW: both runs must keep them below 1e-5.
void check_same_checkpoint(const fs::path& a, const fs::path& b, double relative) {
  SafetensorsFile x = load_safetensors((a / "checkpoint.safetensors").string());
  SafetensorsFile y = load_safetensors((b / "checkpoint.safetensors").string());
  CHECK(x.metadata.at("step") == y.metadata.at("step"));
  REQUIRE(x.tensors.size() == y.tensors.size());
  std::map<std::string, std::pair<double, double>> groups;  // group -> (max |a - b|, max |a|)
  for (size_t i = 0; i < x.tensors.size(); ++i) {
    const std::string& name = x.tensors[i].first;
    REQUIRE(name == y.tensors[i].first);
    auto u = x.tensors[i].second.to_vector<double>(), v = y.tensors[i].second.to_vector<double>();
    REQUIRE(u.size() == v.size());
    double difference = 0, largest = 0, largest_other = 0;
    for (size_t j = 0; j < u.size(); ++j) {
      difference = std::max(difference, std::abs(u[j] - v[j]));
      largest = std::max(largest, std::abs(u[j]));
      largest_other = std::max(largest_other, std::abs(v[j]));
    }
    INFO(name << ": max |a - b| " << difference << ", max |a| " << largest);
    const bool noise_only = name.size() > 7 && name.compare(name.size() - 7, 7, ".k.bias") == 0;
    if (noise_only) {
      const double bound = name.rfind("optim.", 0) == 0 ? 1e-9 : 1e-5;  // exp_avg_sq is ~1e-25
      CHECK(largest <= bound);
      CHECK(largest_other <= bound);
      continue;
    }
    const bool state = name.rfind("optim.", 0) == 0;
    auto& group = groups[state ? name.substr(0, name.find('.', 6)) : name];
    group.first = std::max(group.first, difference);
    group.second = std::max(group.second, largest);
  }
  double worst = 0;
  std::string worst_name;
  for (const auto& [group, sizes] : groups) {
    INFO(group << ": max |a - b| " << sizes.first << ", max |a| " << sizes.second);
    CHECK(sizes.first <= relative * sizes.second);
    if (sizes.second > 0 && sizes.first / sizes.second > worst) worst = sizes.first / sizes.second, worst_name = group;
  }
  std::printf("%s vs %s: largest relative difference %.3g (%s)\n", a.filename().c_str(), b.filename().c_str(), worst,
              worst_name.c_str());
}

void check_same_losses(const fs::path& a, const fs::path& b, double relative) {
  auto x = losses(a), y = losses(b);
  REQUIRE(x.size() == y.size());
  REQUIRE(!x.empty());
  for (size_t i = 0; i < x.size(); ++i) {
    INFO(x[i].first << ": " << x[i].second << " vs " << y[i].second);
    CHECK(x[i].first == y[i].first);
    CHECK(nearly_equal(x[i].second, y[i].second, relative));
  }
}

}  // namespace

TEST_CASE("shards split a global batch contiguously, weighted by their share") {
  for (int64_t total : {1, 2, 7, 8, 33}) {
    for (int ranks : {1, 2, 3, 5}) {
      INFO(total << " examples over " << ranks << " ranks");
      int64_t next = 0;
      double weights = 0;
      for (int rank = 0; rank < ranks; ++rank) {
        distributed::Shard shard = distributed::shard_of(total, rank, ranks);
        CHECK(shard.begin == next);
        CHECK(shard.size() >= total / ranks);
        CHECK(shard.size() <= total / ranks + 1);
        CHECK(shard.weight == static_cast<double>(shard.size()) / static_cast<double>(total));
        next = shard.end;
        weights += shard.weight;
      }
      CHECK(next == total);
      CHECK(weights == Approx(1.0).epsilon(1e-15));
    }
  }
  CHECK(distributed::shard_of(7, 0, 2).size() == 4);
  CHECK(distributed::shard_of(7, 1, 2).size() == 3);
  CHECK(distributed::shard_of(1, 1, 2).size() == 0);
  REQUIRE_THROWS_WITH(distributed::shard_of(8, 2, 2), "shard_of: rank 2 of 2");
  REQUIRE_THROWS_WITH(distributed::shard_of(0, 0, 2), "shard_of: a global batch of 0 examples");
}

TEST_CASE("the gradient all-reduce sums every element once, in buckets of at most the given size") {
  Tensor a = parameter({1, 2, 3, 4, 5}), b = parameter({6, 7, 8, 9, 10, 11, 12}), c = parameter({13});
  Tensor unused = parameter({0, 0});
  NamedTensors parameters{{"a", a}, {"b", b}, {"unused", unused}, {"c", c}};
  a.set_grad(Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5}, {5}));
  b.set_grad(Tensor::from_vector(std::vector<float>{6, 7, 8, 9, 10, 11, 12}, {7}));
  c.set_grad(Tensor::from_vector(std::vector<float>{13}, {1}));
  IdenticalRanks three(3);
  distributed::all_reduce_gradients(three, parameters, 4 * sizeof(float));
  CHECK(a.grad().to_vector<float>() == std::vector<float>{3, 6, 9, 12, 15});
  CHECK(b.grad().to_vector<float>() == std::vector<float>{18, 21, 24, 27, 30, 33, 36});
  CHECK(c.grad().to_vector<float>() == std::vector<float>{39});
  CHECK_FALSE(unused.grad().defined());  // no rank has one: it stays without, as in one process
  // One reduction of the has-gradient flags (4 parameters), then 13 floats in buckets of 4.
  CHECK(three.reduced_counts == std::vector<int64_t>{4, 4, 4, 4, 1});

  IdenticalRanks one_bucket(2);
  distributed::all_reduce_gradients(one_bucket, parameters, 1 << 20);
  CHECK(one_bucket.reduced_counts == std::vector<int64_t>{4, 13});
  CHECK(c.grad().to_vector<float>() == std::vector<float>{78});
  REQUIRE_THROWS_WITH(one_bucket.all_reduce_sum(std::vector<Tensor>{a}, 0),
                      "all_reduce_sum: the bucket size must be positive, got 0 bytes");
  REQUIRE_THROWS_WITH(one_bucket.all_reduce_sum(std::vector<Tensor>{Tensor::zeros({2}, DType::Int64)}, 64),
                      Catch::Contains("is not floating"));
}

TEST_CASE("a single process: collectives change nothing, parameters are not broadcast") {
  auto single = distributed::make_single_process();
  CHECK(single->size() == 1);
  CHECK(single->rank() == 0);
  std::vector<float> values{1, 2};
  single->all_reduce_sum(values.data(), 2);
  CHECK(values == std::vector<float>{1, 2});
  REQUIRE_THROWS_WITH(single->set_timeout(0), "communicator: the collective timeout must be positive, got 0");
  IdenticalRanks one(1);
  distributed::broadcast_parameters(one, {{"a", parameter({1})}});
  CHECK(one.broadcasts == 0);
  IdenticalRanks two(2);
  distributed::broadcast_parameters(two, {{"a", parameter({1})}, {"b", parameter({2})}});
  CHECK(two.broadcasts == 2);
}

TEST_CASE("the watchdog reports a collective that outlives its timeout, and only then") {
  std::mutex mutex;
  std::vector<std::string> messages;
  distributed::Watchdog watchdog(3, 0.2, [&](const std::string& message) {
    std::lock_guard<std::mutex> lock(mutex);
    messages.push_back(message);
  });
  {
    auto armed = watchdog.arm("all-reduce");  // done well within the timeout
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  {
    std::lock_guard<std::mutex> lock(mutex);
    CHECK(messages.empty());
  }
  {
    auto armed = watchdog.arm("all-reduce");
    std::this_thread::sleep_for(std::chrono::milliseconds(700));  // a peer that never answers
  }
  std::lock_guard<std::mutex> lock(mutex);
  REQUIRE(messages.size() == 1);
  CHECK(messages[0] == "rank 3: all-reduce did not complete within 0.2 s; another rank probably died");
  REQUIRE_THROWS_WITH(watchdog.set_timeout(-1), "--collective-timeout must be positive, got -1");
}

TEST_CASE("mpirun -np 2 gives the loss curve and parameters of one process with the same global batch") {
  if (!mpirun_available()) return;
  hkt::testing::TempDir dir;
  write_listops(dir.path());
  auto log = dir.path() / "log.txt";
  // 8 splits evenly (4 + 4); 7 does not (4 + 3), which checks the shard weights.
  for (int64_t batch : {8, 7}) {
    INFO("global batch " << batch);
    const std::string common = tiny_run(dir.path(), batch, 20);
    const auto single = dir.path() / ("single-" + std::to_string(batch));
    const auto parallel = dir.path() / ("parallel-" + std::to_string(batch));
    Outcome one = run_train(0, common + "--out " + single.string(), log);
    INFO(one.output);
    REQUIRE(one.status == 0);
    Outcome two = run_train(2, common + "--out " + parallel.string(), log);
    INFO(two.output);
    REQUIRE(two.status == 0);
    CHECK(two.output.find("data parallel: 2 ranks (mpi") != std::string::npos);
    CHECK(read_text(parallel / "metrics.jsonl").find("\"allreduce_ms\"") != std::string::npos);
    CHECK(losses(single).size() == 20 + 4);  // 20 train lines, evaluations at steps 5, 10, 15 and 20
    check_same_losses(single, parallel, 1e-5);
    check_same_checkpoint(single, parallel, 1e-5);
  }
}

TEST_CASE("checkpoints written under mpirun resume under another rank count") {
  if (!mpirun_available()) return;
  hkt::testing::TempDir dir;
  write_listops(dir.path());
  auto log = dir.path() / "log.txt";
  const std::string common = tiny_run(dir.path(), 8, 10);
  const auto straight = dir.path() / "straight";
  REQUIRE(run_train(0, common + "--out " + straight.string(), log).status == 0);
  // 2 ranks, stopped at step 5, resumed by one process; and the other way round.
  for (auto [first, second] : {std::pair{2, 0}, std::pair{0, 2}}) {
    const auto run = dir.path() / ("from-" + std::to_string(first) + "-to-" + std::to_string(second));
    INFO(run.filename().string());
    Outcome stopped = run_train(first, common + "--stop-at 5 --out " + run.string(), log);
    INFO(stopped.output);
    REQUIRE(stopped.status == 0);
    Outcome resumed = run_train(second, "--resume " + run.string() + " --threads 1", log);
    INFO(resumed.output);
    REQUIRE(resumed.status == 0);
    CHECK(resumed.output.find("resuming at step 5") != std::string::npos);
    check_same_losses(straight, run, 1e-5);
    check_same_checkpoint(straight, run, 1e-5);
  }
}

TEST_CASE("when a rank dies, the other ends with a clear error instead of waiting forever") {
  if (!mpirun_available()) return;
  hkt::testing::TempDir dir;
  write_listops(dir.path());
  // mpirun would itself end the job when a rank dies of a signal; told not
  // to, it leaves rank 0 blocked in its all-reduce, which the watchdog must end.
  Outcome outcome = run_train(2,
                              tiny_run(dir.path(), 8, 20) + "--test-die-at-step 3 --collective-timeout 2 --out " +
                                  (dir.path() / "run").string(),
                              dir.path() / "log.txt", "--mca orte_abort_on_non_zero_status 0");
  INFO(outcome.output);
  CHECK(outcome.status != 0);
  CHECK(outcome.seconds < 60);
  CHECK(outcome.output.find("rank 1: dying at step 3 (--test-die-at-step)") != std::string::npos);
  CHECK(outcome.output.find("rank 0: all-reduce did not complete within 2 s; another rank probably died") !=
        std::string::npos);
}

TEST_CASE("a global batch smaller than the rank count: the rank without examples adds zeros") {
  if (!mpirun_available()) return;
  hkt::testing::TempDir dir;
  write_listops(dir.path());
  auto log = dir.path() / "log.txt";
  // --batch 1 over 2 ranks: rank 1's shard is empty at every step, so the sums
  // are rank 0's gradients plus exact zeros, the single process's bit for bit.
  const std::string common = tiny_run(dir.path(), 1, 4, 2);
  Outcome one = run_train(0, common + "--out " + (dir.path() / "single").string(), log);
  REQUIRE(one.status == 0);
  Outcome two = run_train(2, common + "--out " + (dir.path() / "parallel").string(), log);
  INFO(two.output);
  REQUIRE(two.status == 0);
  auto x = losses(dir.path() / "single"), y = losses(dir.path() / "parallel");
  CHECK(x.size() == 4 + 2);
  CHECK(x == y);
  check_same_checkpoint(dir.path() / "single", dir.path() / "parallel", 0.0);
}
