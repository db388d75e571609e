// hkt-train as a process among others (issue 18): SIGTERM and SIGINT end a
// run with its checkpoint and metrics written (exit 128 + signal) and
// --resume then matches an uninterrupted run; a second SIGINT quits at
// once; a second process on the same run folder is refused, naming the
// first; a fresh run over a folder holding a run is refused without --overwrite.
#include <signal.h>

#include <chrono>
#include <thread>

#include "tests/data_test_util.h"
#include "tests/gradcheck.h"
#include "tests/run_test_util.h"

using namespace hkt;
namespace fs = std::filesystem;
using Catch::Contains;
using hkt::testing::load_step;
using hkt::testing::metrics_without_timing;
using hkt::testing::read_text;
using hkt::testing::run_hkt_train;
using hkt::testing::spawn_hkt_train;
using hkt::testing::train_steps;
using hkt::testing::wait_for;
using hkt::testing::words_of;

namespace {

// A run long enough to be signalled in the middle (checkpoints only every 30 steps).
std::string long_run(const fs::path& data, int steps = 300) {
  return "--task listops --data " + data.string() + " --steps " + std::to_string(steps) +
         " --seq-len 24 --d-model 16 --layers 1 --heads 2 --d-ff 16 --batch 8 --log-every 1 "
         "--eval-every 30 --eval-batches 1 --threads 1 --seed 4 ";
}

// Waits until `metrics` holds at least `lines` train lines (a minute at most).
void wait_for_lines(const fs::path& metrics, size_t lines) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (train_steps(metrics).size() < lines && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  REQUIRE(train_steps(metrics).size() >= lines);
}

}  // namespace

TEST_CASE("SIGTERM and SIGINT: the step ends, checkpoint and metrics are written, exit 128 + signal, resume matches") {
  hkt::testing::TempDir dir;
  hkt::testing::write_tiny_listops(dir.path());
  const fs::path log = dir.path() / "log.txt";
  // 60 steps: enough to be signalled after the third, short enough for the sanitizer build.
  REQUIRE(run_hkt_train(long_run(dir.path(), 60) + "--out " + (dir.path() / "straight").string(), log) == 0);
  const std::string expected = metrics_without_timing(dir.path() / "straight" / "metrics.jsonl");

  for (int signal : {SIGTERM, SIGINT}) {
    INFO("signal " << signal);
    const fs::path out = dir.path() / ("signalled-" + std::to_string(signal));
    fs::remove(log);
    const pid_t pid = spawn_hkt_train(words_of(long_run(dir.path(), 60) + "--out " + out.string()), log);
    REQUIRE(pid > 0);
    wait_for_lines(out / "metrics.jsonl", 3);
    ::kill(pid, signal);
    const int status = wait_for(pid);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 128 + signal);
    // The checkpoint holds the last step logged (one was due only at step 30).
    const int64_t step = load_step(out / "checkpoint.safetensors");
    CHECK(step >= 3);
    CHECK(step < 60);
    CHECK(train_steps(out / "metrics.jsonl").back() == step);
    CHECK_THAT(read_text(log), Contains(std::string("stopped by ") + (signal == SIGTERM ? "SIGTERM" : "SIGINT") +
                                        " after step " + std::to_string(step)));
    REQUIRE(run_hkt_train("--resume " + out.string(), log) == 0);
    CHECK(metrics_without_timing(out / "metrics.jsonl") == expected);
  }
}

TEST_CASE("a second signal quits at once, keeping the last checkpoint written") {
  hkt::testing::TempDir dir;
  hkt::testing::write_tiny_listops(dir.path());
  const fs::path out = dir.path() / "run", log = dir.path() / "log.txt";
  const pid_t pid = spawn_hkt_train(words_of(long_run(dir.path()) + "--out " + out.string()), log);
  REQUIRE(pid > 0);
  wait_for_lines(out / "metrics.jsonl", 2);
  // Two of one kind sent at once would merge into one pending signal; two
  // kinds both arrive, whichever is handled second quits.
  ::kill(pid, SIGINT);
  ::kill(pid, SIGTERM);
  const int status = wait_for(pid);
  REQUIRE(WIFEXITED(status));
  CHECK((WEXITSTATUS(status) == 128 + SIGINT || WEXITSTATUS(status) == 128 + SIGTERM));
  CHECK_THAT(read_text(log), Contains("second signal: exiting at once"));
  // No checkpoint was due yet; whatever is there loads.
  if (fs::exists(out / "checkpoint.safetensors")) CHECK(load_step(out / "checkpoint.safetensors") >= 1);
}

TEST_CASE("one process per run folder: a second is refused naming the first, and a fresh run needs --overwrite") {
  hkt::testing::TempDir dir;
  hkt::testing::write_tiny_listops(dir.path());
  const fs::path out = dir.path() / "run", log = dir.path() / "first.txt", second = dir.path() / "second.txt";
  const pid_t pid = spawn_hkt_train(words_of(long_run(dir.path()) + "--out " + out.string()), log);
  REQUIRE(pid > 0);
  wait_for_lines(out / "metrics.jsonl", 1);
  const std::string in_use = out.string() + " is in use by process " + std::to_string(pid) + " (hkt-train --task";
  CHECK(run_hkt_train(long_run(dir.path()) + "--overwrite --out " + out.string(), second) == 1);
  CHECK_THAT(read_text(second), Contains(in_use));
  CHECK(run_hkt_train("--resume " + out.string(), second) == 1);
  CHECK_THAT(read_text(second), Contains(in_use));
  const size_t lines = train_steps(out / "metrics.jsonl").size();
  wait_for_lines(out / "metrics.jsonl", lines + 1);  // the first run goes on undisturbed
  ::kill(pid, SIGTERM);
  CHECK(WEXITSTATUS(wait_for(pid)) == 128 + SIGTERM);

  // The lock went with its process; the run is still there, so a fresh run is refused.
  CHECK(run_hkt_train(long_run(dir.path()) + "--out " + out.string(), second) == 1);
  CHECK_THAT(read_text(second),
             Contains(out.string() + " already holds a run (config.json, metrics.jsonl, checkpoint.safetensors); "
                                     "continue it with --resume " + out.string()));
  CHECK(load_step(out / "checkpoint.safetensors") >= 2);  // untouched by the refused runs
  CHECK(run_hkt_train(long_run(dir.path(), 2) + "--overwrite --out " + out.string(), second) == 0);
  CHECK(train_steps(out / "metrics.jsonl") == std::vector<int64_t>{1, 2});
}
