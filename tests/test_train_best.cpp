// hkt-train scores the test split once, at the end, with the parameters of
// the best validation accuracy (best.safetensors), also across a resume.
#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "io/json.h"
#include "nn/optim.h"
#include "tests/data_test_util.h"
#include "tests/run_test_util.h"
#include "train/checkpoint.h"
#include "train/training.h"

using namespace hkt;
using namespace hkt::models;

namespace {

namespace fs = std::filesystem;

// Tiny splits with a test split; train, val and test from different seeds.
void write_splits(const fs::path& folder) {
  testing::write_tiny_listops(folder, 5, 96, 24);
  const fs::path other = folder / "other";
  fs::create_directories(other);
  testing::write_tiny_listops(other, 6, 96, 40);
  fs::rename(other / "val.tsv", folder / "test.tsv");
}

TrainOptions selecting_run(const fs::path& data, const fs::path& out) {
  TrainOptions o = testing::tiny_run_options(data, out);
  o.steps = 12;
  o.eval_every = 2;
  o.eval_batches = 0;  // the whole validation set
  o.lr = 1e-2;         // large enough that validation accuracy moves between evaluations
  return o;
}

std::vector<Json> lines_of(const fs::path& metrics, const std::string& type) {
  std::vector<Json> lines;
  std::ifstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    Json entry = parse_json(line);
    if (entry.at("type").as_string() == type) lines.push_back(entry);
  }
  return lines;
}

}  // namespace

TEST_CASE("the test split is scored once, by the model of the best validation accuracy") {
  testing::TempDir dir;
  write_splits(dir.path());
  const TrainOptions options = selecting_run(dir.path(), dir.path() / "run");
  train(options);
  const fs::path metrics = dir.path() / "run" / "metrics.jsonl";
  int64_t best_step = 0;
  double best = -1;
  for (const Json& eval : lines_of(metrics, "eval"))  // the first of equal accuracies
    if (eval.at("val_accuracy").as_number() > best)
      best = eval.at("val_accuracy").as_number(), best_step = eval.at("step").as_int();
  const std::vector<Json> tests = lines_of(metrics, "test");
  REQUIRE(tests.size() == 1);
  CHECK(tests[0].at("step").as_int() == 12);
  CHECK(tests[0].at("best_step").as_int() == best_step);

  // best.safetensors holds that step's parameters, and they give the logged test accuracy.
  const std::string best_file = (dir.path() / "run" / "best.safetensors").string();
  Classifier model(read_checkpoint_config(best_file), 0);
  AdamW optimizer(model.named_parameters(), {});
  CHECK(load_checkpoint(best_file, model, optimizer).step == best_step);
  const TaskData task = load_task(options);
  CHECK(evaluate(model, task.val, options.batch).accuracy == best);
  CHECK(evaluate(model, task.test, options.batch).accuracy == tests[0].at("test_accuracy").as_number());
}

TEST_CASE("a resumed run selects the same best step and test score as a straight run") {
  testing::TempDir dir;
  write_splits(dir.path());
  TrainOptions straight = selecting_run(dir.path(), dir.path() / "straight");
  train(straight);
  TrainOptions resumed = selecting_run(dir.path(), dir.path() / "resumed");
  for (int64_t stop : {5, 9}) {  // stops between evaluations, after the best may have been saved
    resumed.stop_at = stop;
    train(resumed);
    resumed.resume = true;
  }
  resumed.stop_at = 0;
  train(resumed);
  const auto straight_tests = lines_of(dir.path() / "straight" / "metrics.jsonl", "test");
  const auto resumed_tests = lines_of(dir.path() / "resumed" / "metrics.jsonl", "test");
  REQUIRE(straight_tests.size() == 1);
  REQUIRE(resumed_tests.size() == 1);
  CHECK(to_json(resumed_tests[0]) == to_json(straight_tests[0]));
  // A fresh run in the same folder forgets the old best.
  TrainOptions again = selecting_run(dir.path(), dir.path() / "resumed");
  again.steps = 2;
  again.overwrite = true;  // a fresh run into a folder that holds one must say so
  train(again);
  REQUIRE(lines_of(dir.path() / "resumed" / "metrics.jsonl", "test").size() == 1);
  CHECK(lines_of(dir.path() / "resumed" / "metrics.jsonl", "test")[0].at("best_step").as_int() == 2);
}
