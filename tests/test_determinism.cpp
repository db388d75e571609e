// Determinism: two runs with the same seed and thread count give bit-identical
// losses (metrics.jsonl writes the shortest decimal that reads back to the
// same double, so equal text means equal bits) and bit-identical parameters.
#include <cstring>

#include "io/safetensors.h"
#include "tests/data_test_util.h"
#include "tests/gradcheck.h"
#include "tests/run_test_util.h"
#include "train/checkpoint.h"

using namespace hkt;
using namespace hkt::models;
namespace fs = std::filesystem;

TEST_CASE("same seed, same thread count: bit-identical losses, evaluations and checkpoints (1 and 2 threads)") {
  hkt::testing::TempDir dir;
  hkt::testing::write_tiny_listops(dir.path());
  for (int threads : {1, 2}) {
    for (const char* attention : {"hkt", "mha"}) {
      INFO(threads << " threads, " << attention);
      TrainOptions first = hkt::testing::tiny_run_options(dir.path(), dir.path() / "first");
      first.threads = threads;
      first.model.attention = attention;
      if (std::string(attention) == "mha") first.model.levels = 1;
      first.steps = 8;
      first.overwrite = true;  // the same two folders for every case
      TrainOptions second = first;
      second.out = (dir.path() / "second").string();
      const Evaluation a = train(first), b = train(second);
      CHECK(a.loss == b.loss);
      CHECK(a.accuracy == b.accuracy);
      const std::string metrics = hkt::testing::metrics_without_timing(fs::path(first.out) / "metrics.jsonl");
      CHECK(metrics.find("\"step\":8") != std::string::npos);
      CHECK(metrics == hkt::testing::metrics_without_timing(fs::path(second.out) / "metrics.jsonl"));
      // The parameters and optimizer state, byte for byte.
      SafetensorsFile x = load_safetensors((fs::path(first.out) / "checkpoint.safetensors").string());
      SafetensorsFile y = load_safetensors((fs::path(second.out) / "checkpoint.safetensors").string());
      REQUIRE(x.tensors.size() == y.tensors.size());
      for (size_t i = 0; i < x.tensors.size(); ++i) {
        INFO(x.tensors[i].first);
        const Tensor &p = x.tensors[i].second, &q = y.tensors[i].second;
        REQUIRE(p.nbytes() == q.nbytes());
        CHECK(std::memcmp(p.raw_data(), q.raw_data(), p.nbytes()) == 0);
      }
      CHECK(x.metadata == y.metadata);  // the checksum included
    }
  }
}

TEST_CASE("a different seed gives a different run (the check above can fail)") {
  hkt::testing::TempDir dir;
  hkt::testing::write_tiny_listops(dir.path());
  TrainOptions first = hkt::testing::tiny_run_options(dir.path(), dir.path() / "first");
  TrainOptions second = first;
  second.out = (dir.path() / "second").string();
  second.seed = first.seed + 1;
  train(first);
  train(second);
  CHECK(hkt::testing::metrics_without_timing(fs::path(first.out) / "metrics.jsonl") !=
        hkt::testing::metrics_without_timing(fs::path(second.out) / "metrics.jsonl"));
}
