#pragma once
// Tiny ListOps training runs for the tests that run hkt-train (training,
// crash safety, determinism, anomaly mode, data parallelism): the data, the options and ways to compare runs.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include <sys/wait.h>

#include "data/listops.h"
#include "train/training.h"

namespace hkt::testing {

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The metrics without their wall-clock field, which no two runs share.
inline std::string metrics_without_timing(const std::filesystem::path& path) {
  return std::regex_replace(read_text(path), std::regex(",\"step_ms\":[0-9.e+-]+"), "");
}

// Tiny ListOps splits (train.tsv, val.tsv) in `folder`.
inline void write_tiny_listops(const std::filesystem::path& folder, uint64_t seed = 5, int64_t train = 96,
                               int64_t val = 24) {
  Generator generator(seed);
  const std::pair<const char*, int64_t> splits[] = {{"train.tsv", train}, {"val.tsv", val}};
  for (auto [name, count] : splits) {
    data::ListOpsOptions options;
    options.count = count;
    options.min_len = 5;
    options.max_len = 24;
    options.max_depth = 3;
    options.max_args = 4;
    data::write_listops_tsv((folder / name).string(), data::generate_listops_examples(generator, options));
  }
}

inline models::TrainOptions tiny_run_options(const std::filesystem::path& data, const std::filesystem::path& out) {
  models::TrainOptions o;
  o.task = "listops";
  o.data = data.string();
  o.out = out.string();
  o.seq_len = 24;
  o.model.d_model = 16;
  o.model.n_layers = 1;
  o.model.n_heads = 2;
  o.model.d_ff = 16;
  o.model.levels = 3;
  o.batch = 8;
  o.steps = 6;
  o.log_every = 1;
  o.eval_every = 3;
  o.eval_batches = 1;
  o.checkpoint_every = 2;
  o.threads = 1;
  o.seed = 3;
  o.lr = 3e-3;
  return o;
}

// Runs the built hkt-train with `arguments`, its output to `log`; returns the exit status.
inline int run_hkt_train(const std::string& arguments, const std::filesystem::path& log) {
  const std::string command =
      std::string(HKT_BINARY_DIR) + "/hkt-train " + arguments + " > " + log.string() + " 2>&1";
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace hkt::testing
