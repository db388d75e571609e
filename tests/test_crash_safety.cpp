// Crash safety of hkt-train's run folder: SIGKILL at random (seeded) times
// never leaves a checkpoint that fails to load, --resume then finishes with
// the metrics of an uninterrupted run, and any damaged byte of a checkpoint
// is reported as a checksum mismatch before anything is used.
#include <signal.h>

#include <chrono>
#include <random>
#include <thread>

#include "io/json.h"
#include "io/safetensors.h"
#include "tests/data_test_util.h"
#include "tests/gradcheck.h"
#include "tests/run_test_util.h"
#include "train/checkpoint.h"

using namespace hkt;
using namespace hkt::models;
namespace fs = std::filesystem;
using Catch::Contains;
using hkt::testing::load_step;
using hkt::testing::spawn_hkt_train;
using hkt::testing::train_steps;
using hkt::testing::wait_for;
using hkt::testing::words_of;

namespace {

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

TEST_CASE("hkt-train killed with SIGKILL at random times: the checkpoint always loads and --resume matches") {
  hkt::testing::TempDir dir;
  hkt::testing::write_tiny_listops(dir.path());
  const std::string common = "--task listops --data " + dir.path().string() +
                             " --seq-len 24 --d-model 16 --layers 1 --heads 2 --d-ff 16 --batch 8 --steps 40 "
                             "--log-every 1 --eval-every 10 --eval-batches 1 --checkpoint-every 1 --threads 1 "
                             "--seed 4 ";
  const fs::path straight = dir.path() / "straight", killed = dir.path() / "killed", log = dir.path() / "log.txt";

  const auto start = std::chrono::steady_clock::now();
  REQUIRE(hkt::testing::run_hkt_train(common + "--out " + straight.string(), log) == 0);
  const double run_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const std::string expected = hkt::testing::metrics_without_timing(straight / "metrics.jsonl");
  REQUIRE(expected.find("\"step\":40") != std::string::npos);

  std::mt19937_64 random(8);  // fixed: the same kill times on every run of the test
  const fs::path checkpoint = killed / "checkpoint.safetensors";
  int kills = 0, kills_with_checkpoint = 0;
  for (int attempt = 0; attempt < 30 && kills_with_checkpoint < 5; ++attempt) {
    const bool resume = fs::exists(checkpoint);
    const pid_t pid = spawn_hkt_train(
        resume ? std::vector<std::string>{"--resume", killed.string()}
               : words_of(common + "--overwrite --out " + killed.string()),
        log);
    REQUIRE(pid > 0);
    // Anywhere from the start-up to most of an uninterrupted run.
    const double delay_ms = std::uniform_real_distribution<double>(0.05, 0.7)(random) * run_ms;
    std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(delay_ms * 1000)));
    ::kill(pid, SIGKILL);
    const int status = wait_for(pid);
    INFO("attempt " << attempt << ", resume " << resume << ", killed after " << delay_ms << " ms");
    if (WIFEXITED(status)) {  // it finished before the kill: start again from nothing
      REQUIRE(WEXITSTATUS(status) == 0);
      CHECK(hkt::testing::metrics_without_timing(killed / "metrics.jsonl") == expected);
      fs::remove_all(killed);
      continue;
    }
    REQUIRE(WIFSIGNALED(status));
    ++kills;
    if (!fs::exists(checkpoint)) continue;  // killed before the first checkpoint
    ++kills_with_checkpoint;
    // Old or new, never corrupt; and every train line up to its step is on disk.
    const int64_t step = load_step(checkpoint);
    CHECK(step >= 1);
    std::vector<int64_t> steps = train_steps(killed / "metrics.jsonl");
    REQUIRE(static_cast<int64_t>(steps.size()) >= step);
    for (int64_t s = 1; s <= step; ++s) CHECK(steps[static_cast<size_t>(s - 1)] == s);
  }
  INFO(kills << " kills in all");
  CHECK(kills_with_checkpoint == 5);

  // Finish the run; it must match the uninterrupted one line for line.
  const std::string finish = fs::exists(checkpoint) ? "--resume " + killed.string() : common + "--overwrite --out " + killed.string();
  REQUIRE(hkt::testing::run_hkt_train(finish, log) == 0);
  CHECK(hkt::testing::metrics_without_timing(killed / "metrics.jsonl") == expected);
  CHECK(load_step(checkpoint) == 40);
  CHECK(hkt::testing::read_text(killed / "config.json") == hkt::testing::read_text(straight / "config.json"));
}

TEST_CASE("a flipped byte anywhere in a checkpoint is a checksum mismatch, found before anything is used") {
  hkt::testing::TempDir dir;
  hkt::testing::write_tiny_listops(dir.path());
  TrainOptions run = hkt::testing::tiny_run_options(dir.path(), dir.path() / "run");
  run.steps = 2;
  train(run);
  const fs::path checkpoint = dir.path() / "run" / "checkpoint.safetensors";
  const std::string good = hkt::testing::read_text(checkpoint);
  REQUIRE(load_safetensors(checkpoint.string()).metadata.at("checksum").rfind("crc32:", 0) == 0);
  REQUIRE(verify_safetensors_checksum(checkpoint.string(), "test") == ChecksumStatus::Verified);
  uint64_t header_length = 0;
  for (int i = 7; i >= 0; --i) header_length = (header_length << 8) | static_cast<uint8_t>(good[static_cast<size_t>(i)]);

  // A new file for each case: rewriting one file in place makes ext4 flush it
  // on every close (auto_da_alloc), a minute for this loop.
  int flips = 0;
  // Every byte of the length and the header, then every 97th data byte and the last.
  for (size_t offset = 0; offset < good.size();
       offset = offset < 8 + header_length || offset + 1 == good.size() ? offset + 1
                                                                          : std::min(offset + 97, good.size() - 1)) {
    for (uint8_t mask : {uint8_t(offset % 2 ? 0x01 : 0x80)}) {
      std::string bytes = good;
      bytes[offset] = static_cast<char>(static_cast<uint8_t>(bytes[offset]) ^ mask);
      const fs::path damaged = dir.path() / ("damaged-" + std::to_string(flips) + ".safetensors");
      write_bytes(damaged, bytes);
      INFO("byte " << offset << " ^ " << int{mask});
      REQUIRE_THROWS_WITH(read_checkpoint_config(damaged.string()),
                          Contains("checkpoint " + damaged.string() + ": checksum mismatch (corrupt file)"));
      fs::remove(damaged);
      ++flips;
    }
  }
  const fs::path damaged = dir.path() / "damaged.safetensors";
  CHECK(flips > static_cast<int>(header_length));
  // A truncated or extended file, too.
  write_bytes(damaged, good.substr(0, good.size() - 1));
  REQUIRE_THROWS_WITH(read_checkpoint_config(damaged.string()), Contains("checksum mismatch (corrupt file)"));
  write_bytes(damaged, good + "x");
  REQUIRE_THROWS_WITH(read_checkpoint_config(damaged.string()), Contains("checksum mismatch (corrupt file)"));
  // And the undamaged copy still loads.
  write_bytes(damaged, good);
  CHECK(read_checkpoint_config(damaged.string()).d_model == 16);
}

TEST_CASE("a checkpoint without a checksum loads (another writer); one that names hkt-train's format without is corrupt") {
  hkt::testing::TempDir dir;
  hkt::testing::write_tiny_listops(dir.path());
  TrainOptions run = hkt::testing::tiny_run_options(dir.path(), dir.path() / "run");
  run.steps = 2;
  train(run);
  const fs::path checkpoint = dir.path() / "run" / "checkpoint.safetensors";
  SafetensorsFile file = load_safetensors(checkpoint.string());
  file.metadata.erase("checksum");
  file.metadata.erase("format");
  const fs::path foreign = dir.path() / "foreign.safetensors";
  save_safetensors(foreign.string(), file.tensors, file.metadata);
  CHECK(verify_safetensors_checksum(foreign.string(), "test") == ChecksumStatus::Absent);
  CHECK(load_step(foreign) == 2);
  file.metadata["format"] = "hkt-checkpoint-2";
  save_safetensors(foreign.string(), file.tensors, file.metadata);
  REQUIRE_THROWS_WITH(load_step(foreign),
                      Contains("checkpoint " + foreign.string() + ": checksum mismatch (corrupt file): format "
                               "hkt-checkpoint-2 but no checksum in __metadata__"));
  write_bytes(foreign, "not a checkpoint at all");
  REQUIRE_THROWS_WITH(load_step(foreign), Contains(foreign.string() + ": file is 23 bytes, shorter than"));
}

TEST_CASE("resume drops the metrics lines past the checkpoint's step, replacing the file atomically") {
  hkt::testing::TempDir dir;
  hkt::testing::write_tiny_listops(dir.path());
  TrainOptions run = hkt::testing::tiny_run_options(dir.path(), dir.path() / "run");
  run.steps = 8;
  run.stop_at = 6;
  train(run);  // checkpoint at 6
  // As if the run had been killed after logging steps 7 and 8 but before
  // checkpointing them: resume must drop those lines, then write them again.
  const fs::path metrics = dir.path() / "run" / "metrics.jsonl";
  {
    std::ofstream append(metrics, std::ios::app);
    append << "{\"type\":\"train\",\"step\":7,\"loss\":99}\n{\"type\":\"train\",\"step\":8,\"loss\":99}\n{\"type\":\"tr";
  }
  TrainOptions resumed = run;
  resumed.stop_at = 0;
  resumed.resume = true;
  train(resumed);
  const std::string text = hkt::testing::read_text(metrics);
  CHECK(text.find("\"loss\":99") == std::string::npos);
  CHECK(train_steps(metrics) == std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8});
  for (const auto& entry : fs::directory_iterator(dir.path() / "run"))
    CHECK(entry.path().filename().string().find(".tmp") == std::string::npos);
}

TEST_CASE("the checksum agrees with an independent implementation (Python's zlib.crc32, tests/corpus)") {
  // tests/corpus/safetensors/metadata_checksum was written by a Python script
  // from the rule in safetensors.h, not by save_safetensors.
  const std::string path = std::string(HKT_SOURCE_DIR) + "/tests/corpus/safetensors/metadata_checksum";
  CHECK(verify_safetensors_checksum(path, "corpus") == ChecksumStatus::Verified);
  CHECK(load_safetensors(path).metadata.at("checksum") == "crc32:67939cf6");
}
