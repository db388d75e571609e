#pragma once
// The training run behind tools/hkt-train: options, data per task, the loop
// with warm-up + cosine learning rate, evaluation, metrics.jsonl, atomic
// checkpoints and exact resume.
#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "models/classifier.h"

namespace hkt {
class Json;
}

namespace hkt::models {

// More CPU threads than any machine has is a typo (or a wrapped number).
constexpr int kMaxThreads = 4096;

struct TrainOptions {
  std::string task = "listops";  // listops | fmnist | imdb | cifar10
  std::string data;              // folder of the task's files ("" = the task's default)
  std::string out = "runs/hkt";  // where metrics, config and checkpoints go
  ModelConfig model;             // attention, sizes; vocab, classes, max_len come from the data
  bool fused_attention = true;   // false: the composed reference (--attention-impl composed)
  int64_t seq_len = 512;
  int64_t batch = 32;
  int64_t epochs = 1;
  int64_t steps = 0;             // > 0 overrides epochs
  int64_t train_limit = 0;       // > 0: use only the first N training examples
  int64_t val_size = 0;          // examples held out of train for validation when the task has no val split
  double lr = 1e-3;
  int64_t warmup = -1;           // −1: 10 % of the steps
  double weight_decay = 0.01;
  double clip = 1.0;             // ≤ 0: no clipping
  uint64_t seed = 0;
  int threads = 0;               // 0: OMP_NUM_THREADS or the core count
  Device device = Device::cpu(); // where the model trains; batches are built on the host and moved there
  int64_t log_every = 10;
  int64_t eval_every = 0;        // 0: at the end of each epoch
  int64_t eval_batches = 0;      // > 0: evaluate on this many batches only
  int64_t checkpoint_every = 0;  // 0: at each evaluation
  bool resume = false;
  bool overwrite = false;        // a fresh run may replace the run already in `out`
  double max_params = 1e9;       // a larger model is refused before anything is allocated (models/model_size.h)
  int64_t stop_at = 0;           // > 0: stop after this step, as if interrupted (tests)
  bool detect_anomaly = false;   // check every op's output and gradient for NaN/Inf (slow; not saved in config.json)
  // Data parallelism (hkt-train under mpirun, docs/ARCHITECTURE.md); none of
  // these change the results, so config.json does not hold them.
  double collective_timeout = 300;  // seconds a collective may block before the job is aborted
  double bucket_mb = 4;             // gradient all-reduce bucket size
  int64_t test_die_at_step = 0;     // > 0: the last of several ranks dies at this step (tests)
};

// The options as written to OUT/config.json, and back (for --resume DIR);
// from_json throws naming a missing key, a value of the wrong type or one
// validate_options refuses.
Json options_to_json(const TrainOptions& options);
TrainOptions options_from_json(const Json& json);
// DIR/config.json of a run folder; errors name the file.
TrainOptions read_run_options(const std::string& folder);
// The largest seed: config.json holds it as a JSON number (a double).
inline constexpr int64_t kMaxSeed = int64_t{1} << 53;

// The ranges every option must lie in, wherever it came from (command line,
// a run's config.json, a caller of train()): throws hkt::Error naming the
// config.json key and the flag, e.g. "log_every (--log-every) must be at
// least 1, got 0". train() calls it before anything else.
void validate_options(const TrainOptions& options);

// A permutation of [0, n) fixed by (seed, stream); epoch e reads the training
// set in shuffled_order(n, seed, e), so data order is a function of the step.
std::vector<int64_t> shuffled_order(int64_t n, uint64_t seed, uint64_t stream);

struct TaskData {
  data::Dataset train, val, test;  // test may be empty
};
TaskData load_task(const TrainOptions& options);

struct Evaluation {
  double loss = 0, accuracy = 0;
  int64_t examples = 0;
};
// The batch's tensors on `device` (make_batch builds them on the host).
data::Batch batch_on(const data::Batch& batch, Device device);

// Mean loss and accuracy over the first `max_batches` batches (0: all) of
// `data`, computed on the device of the model's parameters.
Evaluation evaluate(const Classifier& model, const data::Dataset& data, int64_t batch, int64_t max_batches = 0);

// The whole run; returns the final validation evaluation. Throws hkt::Error
// on bad input, a mismatching checkpoint or a non-finite loss.
Evaluation train(const TrainOptions& options);

}  // namespace hkt::models
