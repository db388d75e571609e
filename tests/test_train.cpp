// hkt-train's run: exact resume, checkpoint validation, NaN handling and the
// command line's errors, on tiny ListOps runs.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "data/listops.h"
#include "engine/dispatch.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "nn/optim.h"
#include "tests/data_test_util.h"
#include "tests/gradcheck.h"
#include "tests/run_test_util.h"
#include "train/checkpoint.h"
#include "train/progress.h"
#include "train/training.h"

using namespace hkt;
using namespace hkt::models;

namespace {

using testing::metrics_without_timing;
using testing::read_text;

void write_listops(const std::filesystem::path& folder) { testing::write_tiny_listops(folder); }
TrainOptions tiny_run(const std::filesystem::path& data, const std::filesystem::path& out) {
  return testing::tiny_run_options(data, out);
}
int run_tool(const std::string& arguments, const std::filesystem::path& output) {
  return testing::run_hkt_train(arguments, output);
}

}  // namespace

TEST_CASE("a run stopped and resumed gives the same metrics as an uninterrupted run") {
  hkt::testing::TempDir dir;
  write_listops(dir.path());
  for (const char* attention : {"hkt", "mha"}) {
    INFO(attention);
    TrainOptions straight = tiny_run(dir.path(), dir.path() / (std::string(attention) + "-straight"));
    straight.model.attention = attention;
    TrainOptions interrupted = straight;
    interrupted.out = (dir.path() / (std::string(attention) + "-interrupted")).string();
    interrupted.stop_at = 3;
    Evaluation a = train(straight);
    train(interrupted);
    interrupted.stop_at = 0;
    interrupted.resume = true;
    Evaluation b = train(interrupted);
    std::string expected = metrics_without_timing(std::filesystem::path(straight.out) / "metrics.jsonl");
    CHECK(expected.find("\"step\":6") != std::string::npos);
    CHECK(metrics_without_timing(std::filesystem::path(interrupted.out) / "metrics.jsonl") == expected);
    CHECK(a.loss == b.loss);
    CHECK_FALSE(std::filesystem::exists(std::filesystem::path(straight.out) / "checkpoint.safetensors.tmp"));
  }
}

TEST_CASE("a checkpoint whose config differs from the model is refused, naming the keys") {
  hkt::testing::TempDir dir;
  write_listops(dir.path());
  TrainOptions first = tiny_run(dir.path(), dir.path() / "run");
  first.steps = 2;
  train(first);
  ModelConfig stored = read_checkpoint_config((dir.path() / "run" / "checkpoint.safetensors").string());
  CHECK(stored.d_model == 16);
  TrainOptions wider = first;
  wider.model.d_model = 32;
  wider.resume = true;
  REQUIRE_THROWS_WITH(train(wider), Catch::Contains("its config does not match the model: d_model 16 (checkpoint) "
                                                    "vs 32 (model)"));
}

TEST_CASE("a truncated checkpoint is reported, not loaded") {
  hkt::testing::TempDir dir;
  write_listops(dir.path());
  TrainOptions first = tiny_run(dir.path(), dir.path() / "run");
  first.steps = 2;
  train(first);
  auto checkpoint = dir.path() / "run" / "checkpoint.safetensors";
  std::filesystem::resize_file(checkpoint, std::filesystem::file_size(checkpoint) - 5);
  first.resume = true;
  REQUIRE_THROWS_WITH(train(first), Catch::Contains(checkpoint.string()));
}

TEST_CASE("a run that diverges stops with the step and the values, keeping the last finite checkpoint") {
  hkt::testing::TempDir dir;
  write_listops(dir.path());
  auto explode = [](TrainOptions options) {
    options.lr = 1e30;
    options.warmup = 0;
    options.clip = 0;
    return options;
  };
  // From the start: the first step's parameters already give a NaN loss, so
  // no checkpoint is written at all (before, one holding them was "kept").
  TrainOptions exploding = explode(tiny_run(dir.path(), dir.path() / "run"));
  exploding.steps = 20;
  exploding.checkpoint_every = 1;
  REQUIRE_THROWS_WITH(train(exploding), Catch::Matches("the run diverged at step 1: .*(nan|inf).*; the last "
                                                       "finite loss was .* at step [0-9]+; no checkpoint was written "
                                                       "yet .*"));
  CHECK_FALSE(std::filesystem::exists(dir.path() / "run" / "checkpoint.safetensors"));

  // After 4 good steps: the checkpoint of step 4 is kept, finite, and resumes.
  TrainOptions healthy = tiny_run(dir.path(), dir.path() / "later");
  healthy.stop_at = 4;
  healthy.eval_every = 1;  // a NaN evaluation, too, is a divergence (not a JSON-writer error)
  train(healthy);
  TrainOptions resumed = healthy;
  resumed.stop_at = 0;
  resumed.resume = true;
  const TrainOptions diverging = explode(resumed);
  REQUIRE_THROWS_WITH(train(diverging), Catch::Matches("the run diverged at step 5: the validation loss is "
                                                       "-?nan; .*; the checkpoint of step 4 is kept at "
                                                       ".*later/checkpoint.safetensors .*"));
  CHECK(hkt::testing::load_step(dir.path() / "later" / "checkpoint.safetensors") == 4);
  CHECK(std::isfinite(train(resumed).loss));
}

TEST_CASE("the hkt-train command line: unknown flags, bad values and missing data") {
  hkt::testing::TempDir dir;
  auto log = dir.path() / "log.txt";
  CHECK(run_tool("--bogus 3", log) == 2);
  CHECK(read_text(log).find("hkt-train: unknown flag --bogus (see hkt-train --help)") != std::string::npos);
  CHECK(run_tool("--batch many", log) == 2);
  CHECK(read_text(log).find("hkt-train: --batch must be a whole number in 1..1048576, got 'many'") !=
        std::string::npos);
  // Values that would wrap or make no sense are refused by the parser, naming the flag and its range.
  CHECK(run_tool("--lr -1", log) == 2);
  CHECK(read_text(log).find("hkt-train: --lr must be a finite number >= 0, got '-1'") != std::string::npos);
  CHECK(run_tool("--epochs 4611686018427387905", log) == 2);
  CHECK(read_text(log).find("--epochs must be a whole number in 1..1000000") != std::string::npos);
  CHECK(run_tool("--threads 4294967297", log) == 2);
  CHECK(read_text(log).find("--threads must be a whole number in 0..4096") != std::string::npos);
  CHECK(run_tool("--seed 9007199254740993", log) == 2);
  CHECK(read_text(log).find("--seed must be a whole number in 0..9007199254740992") != std::string::npos);
  CHECK(run_tool("--task listops --data " + (dir.path() / "absent").string() + " --out " + dir.path().string(), log) ==
        1);
  CHECK(read_text(log).find("absent/train.tsv") != std::string::npos);
  CHECK(run_tool("--help", log) == 0);
  CHECK(read_text(log).find("--model VALUE") != std::string::npos);
  CHECK(read_text(log).find("--attention-impl VALUE") != std::string::npos);
  CHECK(read_text(log).find("--lr X") != std::string::npos);
  CHECK(read_text(log).find("(default 0.001)") != std::string::npos);
}

TEST_CASE("hkt-train --device: a bad name or a device this machine lacks is a usage error naming it") {
  hkt::testing::TempDir dir;
  auto log = dir.path() / "log.txt";
  const auto out = dir.path() / "run";
  CHECK(run_tool("--device gpu --out " + out.string(), log) == 2);
  CHECK(read_text(log).find("device: expected cpu, cuda or cuda:N, got 'gpu'") != std::string::npos);
  CHECK(run_tool("--device cuda:x --out " + out.string(), log) == 2);
  CHECK(read_text(log).find("got 'cuda:x'") != std::string::npos);
  // cuda:9999 is absent everywhere: without a GPU (or a CUDA build) for lack
  // of one, with GPUs as a device index out of range.
  CHECK(run_tool("--device cuda:9999 --out " + out.string(), log) == 2);
  CHECK(read_text(log).find("cuda:9999") != std::string::npos);
  if (hkt::dispatch::device_count(hkt::DeviceType::CUDA) == 0) {
    CHECK(run_tool("--device cuda --out " + out.string(), log) == 2);
    const std::string text = read_text(log);
    INFO(text);
    CHECK(text.find("cuda:0") != std::string::npos);
    CHECK((text.find("no CUDA device is present") != std::string::npos ||
           text.find("this build has no cuda backend") != std::string::npos));
  }
  CHECK_FALSE(std::filesystem::exists(out));  // refused before any output is written
}

TEST_CASE("hkt-train --resume DIR continues with the run's saved options and matches a straight run") {
  hkt::testing::TempDir dir;
  write_listops(dir.path());
  auto log = dir.path() / "log.txt";
  const std::string common = "--task listops --data " + dir.path().string() +
                             " --seq-len 24 --d-model 16 --layers 1 --heads 2 --d-ff 16 --batch 8 --steps 4 "
                             "--log-every 1 --eval-every 2 --eval-batches 1 --threads 1 --seed 4 ";
  REQUIRE(run_tool(common + "--out " + (dir.path() / "straight").string(), log) == 0);
  REQUIRE(run_tool(common + "--stop-at 2 --out " + (dir.path() / "resumed").string(), log) == 0);
  REQUIRE(run_tool("--resume " + (dir.path() / "resumed").string(), log) == 0);
  CHECK(read_text(log).find("resuming at step 2") != std::string::npos);
  std::string expected = metrics_without_timing(dir.path() / "straight" / "metrics.jsonl");
  CHECK(expected.find("\"step\":4") != std::string::npos);
  CHECK(metrics_without_timing(dir.path() / "resumed" / "metrics.jsonl") == expected);

  CHECK(run_tool("--resume " + (dir.path() / "resumed").string() + " --lr 1", log) == 2);
  CHECK(read_text(log).find("--resume takes the run's options from") != std::string::npos);
  // A missing file is a failure (1), not a usage error; the message names the program and the path once.
  CHECK(run_tool("--resume " + (dir.path() / "absent").string(), log) == 1);
  const std::string missing = read_text(log);
  CHECK(missing.find("hkt-train: " + (dir.path() / "absent" / "config.json").string() + ": no such file") == 0);
  CHECK(missing.find("hkt-train", 1) == std::string::npos);
}

TEST_CASE("the progress bar fits the terminal's width, leaving the last column free") {
  for (int columns : {10, 40, 60, 79, 80, 120, 300}) {
    for (int64_t step : {int64_t{0}, int64_t{75}, int64_t{150}}) {
      const std::string line = hkt::models::fit_bar_line(12, step, 150, 139.87, 2.2899, 1e-3, "01:02", columns);
      INFO(columns << " columns: '" << line << "'");
      CHECK(static_cast<int>(line.size()) <= columns - 1);
      CHECK(line.rfind("epoch 12", 0) == 0);
      if (columns >= 80) CHECK(line.find(std::to_string(step) + "/150") != std::string::npos);
      if (columns >= 80) CHECK(line.find("ETA 01:02") != std::string::npos);
    }
  }
  // Wide terminals get the full 30-character bar, half filled at half way.
  const std::string wide = hkt::models::fit_bar_line(1, 75, 150, 1, 1, 1, "00:01", 200);
  CHECK(wide.find("[" + std::string(15, '#') + std::string(15, '.') + "]") != std::string::npos);
}

TEST_CASE("a checkpoint of parameters and config alone: step from optim.step or 0, a fresh optimizer, the same weights") {
  hkt::testing::TempDir dir;
  write_listops(dir.path());
  TrainOptions first = tiny_run(dir.path(), dir.path() / "run");
  first.steps = 3;
  train(first);
  const std::string ours = (dir.path() / "run" / "checkpoint.safetensors").string();
  const SafetensorsFile file = load_safetensors(ours);
  NamedTensors parameters, with_step;
  for (const auto& [name, value] : file.tensors) {
    if (name.rfind("optim.", 0) != 0) parameters.emplace_back(name, value);
    if (name.rfind("optim.", 0) != 0 || name == "optim.step") with_step.emplace_back(name, value);
  }
  const std::map<std::string, std::string> config_only{{"config", file.metadata.at("config")}};
  const std::string bare = (dir.path() / "bare.safetensors").string(), stepped = (dir.path() / "stepped.safetensors").string();
  save_safetensors(bare, parameters, config_only);
  save_safetensors(stepped, with_step, config_only);

  const ModelConfig config = read_checkpoint_config(ours);
  Classifier reference(config, 0), from_bare(config, 1);
  AdamW reference_optimizer(reference.named_parameters(), {}), fresh(from_bare.named_parameters(), {});
  const LoadedCheckpoint full = load_checkpoint(ours, reference, reference_optimizer);
  CHECK(full.step == 3);
  CHECK(full.optimizer_state);
  CHECK(full.checksum);
  const LoadedCheckpoint loaded = load_checkpoint(bare, from_bare, fresh);
  CHECK(loaded.step == 0);
  CHECK_FALSE(loaded.optimizer_state);
  CHECK_FALSE(loaded.checksum);
  for (const auto& [name, value] : fresh.state())  // untouched: zeros and step 0
    CHECK(hkt::testing::max_abs_diff(value, Tensor::zeros(value.shape(), value.dtype())) == 0);
  const auto a = reference.named_parameters(), b = from_bare.named_parameters();
  for (size_t i = 0; i < a.size(); ++i) CHECK(hkt::testing::max_abs_diff(a[i].second, b[i].second) == 0);

  Classifier weights_only(config, 2);
  CHECK(load_weights(stepped, weights_only).step == 3);  // optim.step, the optimizer's own count
  CHECK(load_weights(ours, weights_only).step == 3);
}

TEST_CASE("down_pointwise: absent from an older config means false, checkpoints keep it and refuse a mismatch") {
  ModelConfig config;
  Json json = config_to_json(config);
  CHECK(json.at("down_pointwise").as_bool() == false);
  config.down_pointwise = true;
  CHECK(config_from_json(config_to_json(config)).down_pointwise);
  const Json newer = config_to_json(config);
  Json older = Json::object({});
  for (const auto& [key, value] : newer.as_object())
    if (key != "down_pointwise") older.set(key, value);
  CHECK(config_from_json(older) == ModelConfig{});  // what a file written before the key was read as

  hkt::testing::TempDir dir;
  write_listops(dir.path());
  TrainOptions run = tiny_run(dir.path(), dir.path() / "run");
  run.model.down_pointwise = true;
  run.steps = 2;
  train(run);
  const auto checkpoint = (dir.path() / "run" / "checkpoint.safetensors").string();
  CHECK(read_checkpoint_config(checkpoint).down_pointwise);
  const SafetensorsFile file = load_safetensors(checkpoint);
  Classifier reloaded(read_checkpoint_config(checkpoint), 99);
  AdamW optimizer(reloaded.named_parameters(), {});
  CHECK(load_checkpoint(checkpoint, reloaded, optimizer).step == 2);
  int pointwise = 0;
  for (const auto& [name, value] : reloaded.named_parameters()) {
    if (name.find(".pointwise.") != std::string::npos) ++pointwise;
    for (const auto& [stored_name, stored] : file.tensors)
      if (stored_name == name) CHECK(hkt::testing::max_abs_diff(value, stored) == 0.0);
  }
  CHECK(pointwise == 4);  // levels 1 and 2 of the one block, weight and bias
  TrainOptions without = run;
  without.model.down_pointwise = false;
  without.resume = true;
  REQUIRE_THROWS_WITH(train(without), Catch::Contains("down_pointwise true (checkpoint) vs false (model)"));

  // A checkpoint whose config predates the key loads into a model without the projection.
  TrainOptions plain = tiny_run(dir.path(), dir.path() / "plain");
  plain.steps = 2;
  train(plain);
  const auto plain_checkpoint = (dir.path() / "plain" / "checkpoint.safetensors").string();
  SafetensorsFile old_file = load_safetensors(plain_checkpoint);
  const Json stored_config = parse_json(old_file.metadata.at("config"));
  Json old_config = Json::object({});
  for (const auto& [key, value] : stored_config.as_object())
    if (key != "down_pointwise") old_config.set(key, value);
  old_file.metadata["config"] = to_json(old_config);
  old_file.metadata.erase("checksum");  // save_safetensors writes a new one
  save_safetensors(plain_checkpoint, old_file.tensors, old_file.metadata, /*checksum=*/true);
  plain.resume = true;
  plain.steps = 3;
  CHECK_NOTHROW(train(plain));
}

TEST_CASE("hkt-train --down-pointwise: true by default for HKT, false for MHA, and only true or false") {
  hkt::testing::TempDir dir;
  write_listops(dir.path());
  auto log = dir.path() / "log.txt";
  const std::string common = "--task listops --data " + dir.path().string() +
                             " --seq-len 24 --d-model 16 --layers 1 --heads 2 --d-ff 16 --batch 8 --steps 1 "
                             "--eval-batches 1 --threads 1 ";
  auto stored = [&](const char* name) {
    return options_from_json(parse_json(read_text(dir.path() / name / "config.json"))).model.down_pointwise;
  };
  REQUIRE(run_tool(common + "--out " + (dir.path() / "hkt").string(), log) == 0);
  CHECK(stored("hkt"));
  REQUIRE(run_tool(common + "--down-pointwise false --out " + (dir.path() / "plain").string(), log) == 0);
  CHECK_FALSE(stored("plain"));
  REQUIRE(run_tool(common + "--model mha --out " + (dir.path() / "mha").string(), log) == 0);
  CHECK_FALSE(stored("mha"));
  CHECK(run_tool(common + "--down-pointwise yes --out " + (dir.path() / "bad").string(), log) == 2);
  CHECK(read_text(log).find("hkt-train: --down-pointwise must be one of true | false, got 'yes'") != std::string::npos);
}
