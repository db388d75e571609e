#pragma once
// Tiny ListOps training runs for the tests that run hkt-train (training,
// crash safety, determinism, anomaly mode, data parallelism): the data, the options and ways to compare runs.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include "data/listops.h"
#include "io/json.h"
#include "train/checkpoint.h"
#include "train/training.h"

extern char** environ;

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

// Starts hkt-train with `arguments`, its output appended to `log`; returns
// its process id (-1 when it could not be started).
inline pid_t spawn_hkt_train(const std::vector<std::string>& arguments, const std::filesystem::path& log) {
  std::vector<std::string> words{std::string(HKT_BINARY_DIR) + "/hkt-train"};
  words.insert(words.end(), arguments.begin(), arguments.end());
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  const int error = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return error == 0 ? pid : -1;
}

// The wait status of the child `pid`, once it has ended.
inline int wait_for(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

inline std::vector<std::string> words_of(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

// The steps of the "train" lines of a metrics file, in order (a torn last line ends it).
inline std::vector<int64_t> train_steps(const std::filesystem::path& metrics) {
  std::vector<int64_t> steps;
  std::istringstream in(read_text(metrics));
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"type\":\"train\"") == std::string::npos) continue;
    try {
      steps.push_back(parse_json(line).at("step").as_int());
    } catch (const Error&) {
      break;
    }
  }
  return steps;
}

// The step a checkpoint holds, after loading all of it into a fresh model.
inline int64_t load_step(const std::filesystem::path& checkpoint) {
  models::ModelConfig config = models::read_checkpoint_config(checkpoint.string());
  models::Classifier model(config, 0);
  AdamW optimizer(model.named_parameters(), {});
  return models::load_checkpoint(checkpoint.string(), model, optimizer).step;
}

}  // namespace hkt::testing
