// A run folder under a flaky machine and a hostile user (issue 18): every
// write checked (a full disk or an I/O error stops the run naming the file,
// the checkpoint before it intact), everything read back from the folder
// validated as the command line is.
#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <functional>
#include <filesystem>
#include <string>
#include <vector>

#include "io/files.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "tests/data_test_util.h"
#include "tests/gradcheck.h"
#include "tests/run_test_util.h"
#include "train/checkpoint.h"
#include "train/training.h"

using namespace hkt;
using namespace hkt::models;
namespace fs = std::filesystem;
using Catch::Contains;
using hkt::testing::metrics_without_timing;
using hkt::testing::read_text;

namespace {

bool ends_with(const std::string& text, const std::string& end) {
  return text.size() >= end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
}

// Injects write faults (io::set_write_fault) for its lifetime.
struct Faults {
  explicit Faults(io::WriteFault fault) { io::set_write_fault(std::move(fault)); }
  ~Faults() { io::set_write_fault(nullptr); }
};

// Fails the `failing`-th write (1-based) to a file whose name ends in
// `name`, with `error`; later writes succeed again (a disk full for a moment).
io::WriteFault fault_at(std::string name, int failing, int error) {
  return [name, failing, error, count = 0](const std::string& path) mutable {
    return ends_with(path, name) && ++count == failing ? error : 0;
  };
}

int64_t checkpoint_step(const fs::path& checkpoint) {
  ModelConfig config = read_checkpoint_config(checkpoint.string());
  Classifier model(config, 0);
  AdamW optimizer(model.named_parameters(), {});
  return load_checkpoint(checkpoint.string(), model, optimizer).step;
}

// Writes a (changed) checkpoint back with a fresh checksum, as if written so.
void resave(const std::string& path, SafetensorsFile file) {
  file.metadata.erase("checksum");
  save_safetensors(path, file.tensors, file.metadata, /*checksum=*/true);
}

std::string message_of(const TrainOptions& options) {
  try {
    train(options);
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("a failed metrics write stops the run naming the file and the reason, and resume completes it exactly") {
  hkt::testing::TempDir dir;
  hkt::testing::write_tiny_listops(dir.path());
  TrainOptions straight = hkt::testing::tiny_run_options(dir.path(), dir.path() / "straight");
  train(straight);
  const std::string expected = metrics_without_timing(fs::path(straight.out) / "metrics.jsonl");

  // Writes: step 1, 2, (checkpoint 2), 3, eval 3, step 4 <- the 5th metrics write fails.
  for (auto [error, reason] : {std::pair{ENOSPC, "No space left on device"}, std::pair{EIO, "Input/output error"}}) {
    INFO(reason);
    TrainOptions faulty = straight;
    faulty.out = (dir.path() / ("faulty-" + std::to_string(error))).string();
    const fs::path metrics = fs::path(faulty.out) / "metrics.jsonl";
    {
      Faults faults(fault_at("metrics.jsonl", 5, error));
      const std::string message = message_of(faulty);
      CHECK_THAT(message, Contains(metrics.string() + ": write failed: " + reason));
      CHECK_THAT(message, Contains("the run stops at step 4, the checkpoint of step 2 is kept at " +
                                   (fs::path(faulty.out) / "checkpoint.safetensors").string()));
    }
    CHECK(checkpoint_step(fs::path(faulty.out) / "checkpoint.safetensors") == 2);
    faulty.resume = true;
    train(faulty);
    CHECK(metrics_without_timing(metrics) == expected);
  }
}

TEST_CASE("a failed checkpoint write keeps the checkpoint before it and says so") {
  hkt::testing::TempDir dir;
  hkt::testing::write_tiny_listops(dir.path());
  TrainOptions options = hkt::testing::tiny_run_options(dir.path(), dir.path() / "run");
  const fs::path checkpoint = fs::path(options.out) / "checkpoint.safetensors";
  {
    // The disk fills up once the first checkpoint is there: the second fails.
    Faults faults([&](const std::string& path) {
      return ends_with(path, "checkpoint.safetensors") && fs::exists(checkpoint) ? ENOSPC : 0;
    });
    const std::string message = message_of(options);
    CHECK_THAT(message, Contains(checkpoint.string() + ": write failed: No space left on device"));
    CHECK_THAT(message, Contains("the run stops at step 4, the checkpoint of step 2 is kept"));
  }
  CHECK(checkpoint_step(checkpoint) == 2);
  CHECK_FALSE(fs::exists(checkpoint.string() + ".tmp"));
}

TEST_CASE("hkt-train on a full disk (metrics.jsonl is /dev/full) exits 1 naming the file, and so does an unopenable one") {
  hkt::testing::TempDir dir;
  hkt::testing::write_tiny_listops(dir.path());
  const std::string common = "--task listops --data " + dir.path().string() +
                             " --seq-len 24 --d-model 16 --layers 1 --heads 2 --d-ff 16 --batch 8 --steps 4 "
                             "--log-every 1 --threads 1 --overwrite ";
  const fs::path full = dir.path() / "full", log = dir.path() / "log.txt";
  fs::create_directories(full);
  fs::create_symlink("/dev/full", full / "metrics.jsonl");
  CHECK(hkt::testing::run_hkt_train(common + "--out " + full.string(), log) == 1);
  CHECK_THAT(read_text(log), Contains((full / "metrics.jsonl").string() +
                                      ": write failed: No space left on device; the run stops at step 1, "
                                      "no checkpoint was written yet"));

  const fs::path folder = dir.path() / "folder";
  fs::create_directories(folder / "metrics.jsonl");
  CHECK(hkt::testing::run_hkt_train(common + "--out " + folder.string(), log) == 1);
  CHECK_THAT(read_text(log), Contains((folder / "metrics.jsonl").string() + ": a folder, not a regular file"));
}

TEST_CASE("config.json of a run is validated as the command line is: bad values are usage errors naming the file") {
  hkt::testing::TempDir dir;
  hkt::testing::write_tiny_listops(dir.path());
  TrainOptions options = hkt::testing::tiny_run_options(dir.path(), dir.path() / "run");
  options.stop_at = 2;
  train(options);
  const fs::path config = fs::path(options.out) / "config.json", log = dir.path() / "log.txt";
  const std::string original = read_text(config);
  const Json good = parse_json(original);

  struct Case {
    const char* key;
    Json value;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"log_every", Json(0), "log_every (--log-every) must be at least 1, got 0"},
      {"batch", Json(-3), "batch (--batch) must be at least 1, got -3"},
      {"seq_len", Json(0), "seq_len (--seq-len) must be at least 1, got 0"},
      {"steps", Json(-1), "steps (--steps) must be at least 0, got -1"},
      {"eval_every", Json(-5), "eval_every (--eval-every) must be at least 0, got -5"},
      {"eval_batches", Json(-1), "eval_batches (--eval-batches) must be at least 0"},
      {"checkpoint_every", Json(-2), "checkpoint_every (--checkpoint-every) must be at least 0"},
      {"train_limit", Json(-1), "train_limit (--train-limit) must be at least 0"},
      {"val_size", Json(-1), "val_size (--val-size) must be at least 0"},
      {"warmup", Json(-2), "warmup (--warmup) must be at least -1"},
      {"lr", Json(-1.0), "lr (--lr) must be a finite number >= 0, got -1"},
      {"weight_decay", Json(-0.5), "weight_decay (--weight-decay) must be a finite number >= 0"},
      {"clip", Json(-1.0), "clip (--clip) must be a finite number >= 0"},
      {"threads", Json(4294967297.0), "threads must be between 0 and 4096, got 4294967297"},
      {"threads", Json(-1), "threads must be between 0 and 4096, got -1"},
      {"task", Json("mnist"), "task (--task) must be listops, fmnist, imdb or cifar10, got \"mnist\""},
      {"epochs", Json(1.5), "epochs"},
      {"seed", Json("-1"), "seed must be a whole number"},
  };
  for (const Case& c : cases) {
    INFO(c.key << " = " << to_json(c.value));
    Json hostile = good;
    hostile.set(c.key, c.value);
    io::write_file_atomic(config.string(), to_json(hostile) + "\n", "test");
    CHECK(hkt::testing::run_hkt_train("--resume " + options.out, log) == 1);  // a bad file, not a bad command line
    const std::string output = read_text(log);
    CHECK_THAT(output, Contains("hkt-train: " + config.string() + ": "));
    CHECK_THAT(output, Contains(c.message));
  }
  // The model object is checked too (ModelConfig::validate).
  Json hostile = good;
  Json model = good.at("model");
  model.set("n_heads", Json(0));
  hostile.set("model", model);
  io::write_file_atomic(config.string(), to_json(hostile) + "\n", "test");
  CHECK(hkt::testing::run_hkt_train("--resume " + options.out, log) == 1);
  CHECK_THAT(read_text(log), Contains("n_heads must be at least 1, got 0"));

  io::write_file_atomic(config.string(), original, "test");  // and the run still resumes
  CHECK(hkt::testing::run_hkt_train("--resume " + options.out, log) == 0);
}

TEST_CASE("validate_options refuses what the command line refuses, for callers of train() too") {
  hkt::testing::TempDir dir;
  TrainOptions options = hkt::testing::tiny_run_options(dir.path(), dir.path() / "run");
  options.log_every = 0;
  CHECK_THAT(message_of(options), Contains("log_every (--log-every) must be at least 1, got 0"));
  options = hkt::testing::tiny_run_options(dir.path(), dir.path() / "run");
  options.lr = std::nan("");
  CHECK_THAT(message_of(options), Contains("lr (--lr) must be a finite number >= 0, got nan"));
  options = hkt::testing::tiny_run_options(dir.path(), dir.path() / "run");
  options.threads = 5000;
  CHECK_THAT(message_of(options), Contains("threads (--threads) must be at most 4096, got 5000"));
  CHECK_FALSE(fs::exists(dir.path() / "run"));  // refused before anything is written
}

TEST_CASE("a model too large for --max-params is refused before allocating, naming the flag or the file") {
  hkt::testing::TempDir dir;
  hkt::testing::write_tiny_listops(dir.path());
  const std::string common = "--task listops --data " + dir.path().string() +
                             " --seq-len 24 --batch 8 --steps 2 --threads 1 ";
  const fs::path log = dir.path() / "log.txt";
  // Each size within its flag's range (the parser refuses --layers 1e9 itself), the product far too large.
  for (const char* sizes : {"--d-model 16 --heads 2 --layers 1024 --d-ff 1048576", "--d-model 65536 --heads 1 --d-ff 16"}) {
    INFO(sizes);
    CHECK(hkt::testing::run_hkt_train(common + sizes + " --out " + (dir.path() / "huge").string(), log) == 1);
    CHECK_THAT(read_text(log), Contains("hkt-train: the options: the model (d_model"));
    CHECK_THAT(read_text(log), Contains("raise --max-params for a model this large"));
  }
  const std::string small = common + "--d-model 16 --heads 2 --d-ff 16 --out " + (dir.path() / "small").string();
  CHECK(hkt::testing::run_hkt_train(small + " --max-params 100", log) == 1);
  CHECK_THAT(read_text(log), Contains("more than the limit of 100 parameters"));
  CHECK(hkt::testing::run_hkt_train(small, log) == 0);

  // The same sizes in a run's config.json, and in a checkpoint's metadata.
  const fs::path run = dir.path() / "small";
  const std::string checkpoint = (run / "checkpoint.safetensors").string();
  SafetensorsFile file = load_safetensors(checkpoint);
  Json config = parse_json(read_text(run / "config.json"));
  Json model = config.at("model");
  model.set("n_layers", Json(1000000000));
  config.set("model", model);
  io::write_file_atomic((run / "config.json").string(), to_json(config) + "\n", "test");
  CHECK(hkt::testing::run_hkt_train("--resume " + run.string(), log) == 1);
  CHECK_THAT(read_text(log), Contains("hkt-train: " + (run / "config.json").string() + ": the model (d_model 16, "
                                      "n_layers 1000000000"));
  file.metadata["config"] = to_json(model);
  resave(checkpoint, file);
  REQUIRE_THROWS_WITH(read_checkpoint_config(checkpoint),
                      Contains("checkpoint " + checkpoint + ": its config (d_model 16, n_layers 1000000000"));
  REQUIRE_THROWS_WITH(read_checkpoint_config(checkpoint), Contains("parameters, but the file holds"));
}

TEST_CASE("a checkpoint's contents are checked before a run resumes from it") {
  hkt::testing::TempDir dir;
  hkt::testing::write_tiny_listops(dir.path());
  TrainOptions options = hkt::testing::tiny_run_options(dir.path(), dir.path() / "run");
  options.stop_at = 2;
  train(options);
  options.stop_at = 0;
  options.resume = true;
  const std::string checkpoint = (fs::path(options.out) / "checkpoint.safetensors").string();
  const SafetensorsFile good = load_safetensors(checkpoint);
  auto tensor_named = [](SafetensorsFile& file, const std::string& name) -> Tensor& {
    for (auto& [key, tensor] : file.tensors)
      if (key == name) return tensor;
    FAIL("no tensor " << name);
    throw;
  };
  auto with_value = [](const Tensor& like, double value) {
    std::vector<double> values(static_cast<size_t>(like.numel()), 0.5);
    values[0] = value;
    return Tensor::from_doubles(values, like.shape(), like.dtype());
  };

  struct Case {
    const char* what;
    std::function<void(SafetensorsFile&)> damage;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"negative step", [](SafetensorsFile& f) { f.metadata["step"] = "-5"; }, "step -5 in __metadata__ is negative"},
      {"step past the run",
       [&](SafetensorsFile& f) {
         f.metadata["step"] = "7";
         tensor_named(f, "optim.step") = Tensor::from_vector<int64_t>({7}, {1});
       },
       "step 7 is past the run's last step, 6"},
      {"step vs optim.step", [](SafetensorsFile& f) { f.metadata["step"] = "1"; },
       "optim.step 2 disagrees with the step in __metadata__, 1"},
      {"unknown optimizer tensor",
       [](SafetensorsFile& f) { f.tensors.emplace_back("optim.momentum.head.weight", Tensor::zeros({2})); },
       "unknown optimizer tensor 'optim.momentum.head.weight'"},
      {"negative exp_avg_sq",
       [&](SafetensorsFile& f) {
         Tensor& t = tensor_named(f, "optim.exp_avg_sq.head.weight");
         t = with_value(t, -1.0);
       },
       "'optim.exp_avg_sq.head.weight' holds the negative -1 at flat index 0"},
      {"NaN parameter",
       [&](SafetensorsFile& f) {
         Tensor& t = tensor_named(f, "head.bias");
         t = with_value(t, std::nan(""));
       },
       "'head.bias' holds nan at flat index 0"},
      {"infinite exp_avg",
       [&](SafetensorsFile& f) {
         Tensor& t = tensor_named(f, "optim.exp_avg.head.bias");
         t = with_value(t, INFINITY);
       },
       "'optim.exp_avg.head.bias' holds inf at flat index 0"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    SafetensorsFile damaged = good;
    c.damage(damaged);
    resave(checkpoint, damaged);
    CHECK_THAT(message_of(options), Contains("checkpoint " + checkpoint + ": " + c.message));
  }
  // Through the tool: a negative step is an error, not a crash.
  SafetensorsFile negative = good;
  negative.metadata["step"] = "-5";
  resave(checkpoint, negative);
  CHECK(hkt::testing::run_hkt_train("--resume " + options.out, dir.path() / "log.txt") == 1);
  resave(checkpoint, good);
  CHECK_NOTHROW(train(options));
}

TEST_CASE("config.json keeps the data folder absolute: --resume from another working folder reads the same data") {
  hkt::testing::TempDir dir;
  fs::create_directories(dir.path() / "data");
  hkt::testing::write_tiny_listops(dir.path() / "data");
  const std::string tool = std::string(HKT_BINARY_DIR) + "/hkt-train";
  const std::string run = (dir.path() / "run").string(), log = (dir.path() / "log.txt").string();
  const std::string start = "cd " + dir.path().string() + " && " + tool +
                            " --task listops --data data --seq-len 24 --d-model 16 --layers 1 --heads 2 --d-ff 16 "
                            "--batch 8 --steps 4 --log-every 1 --threads 1 --stop-at 2 --out run > " + log + " 2>&1";
  REQUIRE(std::system(start.c_str()) == 0);
  CHECK(parse_json(read_text(fs::path(run) / "config.json")).at("data").as_string() == (dir.path() / "data").string());
  // From / there is no data/ at all: the run must use its own.
  const std::string resume = "cd / && " + tool + " --resume " + run + " > " + log + " 2>&1";
  CHECK(std::system(resume.c_str()) == 0);
  CHECK(hkt::testing::train_steps(fs::path(run) / "metrics.jsonl") == std::vector<int64_t>{1, 2, 3, 4});
}

TEST_CASE("special files: devices are written in place, FIFOs and folders refused, links keep their target") {
  hkt::testing::TempDir dir;
  // A device is never replaced by a regular file (the atomic rename would do that).
  io::write_file_atomic("/dev/null", "nothing\n", "test");
  CHECK(fs::is_character_file("/dev/null"));
  REQUIRE_THROWS_WITH(io::write_file_atomic("/dev/full", "x", "test"),
                      Contains("test: /dev/full: write failed: No space left on device"));
  CHECK(fs::is_character_file("/dev/full"));

  const fs::path fifo = dir.path() / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  REQUIRE_THROWS_WITH(io::write_file_atomic(fifo.string(), "x", "test"),
                      Contains(fifo.string() + ": a FIFO, not a regular file; refusing to replace it"));
  REQUIRE_THROWS_WITH(io::read_file_bytes(fifo.string(), "test"), Contains(fifo.string() + ": a FIFO, not a regular file"));
  REQUIRE_THROWS_WITH(load_safetensors(fifo.string()), Contains("not a regular file"));
  REQUIRE_THROWS_WITH(io::read_file_bytes(dir.path().string(), "test"), Contains("a folder, not a regular file"));
  CHECK(fs::is_fifo(fifo));

  // A link to a regular file: the target gets the new bytes, the link stays a link.
  const fs::path target = dir.path() / "target.json", link = dir.path() / "link.json";
  io::write_file_atomic(target.string(), "old\n", "test");
  fs::create_symlink(target, link);
  io::write_file_atomic(link.string(), "new\n", "test");
  CHECK(fs::is_symlink(link));
  CHECK(read_text(target) == "new\n");

  // hkt-train --resume over a FIFO checkpoint: refused at once, no hang.
  hkt::testing::write_tiny_listops(dir.path());
  TrainOptions options = hkt::testing::tiny_run_options(dir.path(), dir.path() / "run");
  options.stop_at = 2;
  train(options);
  const fs::path checkpoint = fs::path(options.out) / "checkpoint.safetensors";
  fs::remove(checkpoint);
  REQUIRE(::mkfifo(checkpoint.c_str(), 0644) == 0);
  CHECK(hkt::testing::run_hkt_train("--resume " + options.out, dir.path() / "log.txt") == 1);
  CHECK_THAT(read_text(dir.path() / "log.txt"), Contains(checkpoint.string() + ": not a regular file"));
}
