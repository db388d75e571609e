// models::train: the loop of tools/hkt-train. Data order, learning rate and
// parameters depend only on the seed, the step and the thread count, so a
// resumed run continues exactly where the checkpoint left off.
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include "distributed/gradients.h"
#include "engine/autograd.h"
#include "engine/device_choice.h"
#include "engine/threads.h"
#include "engine/version.h"
#include "io/files.h"
#include "io/json.h"
#include "nn/optim.h"
#include "ops/attention_cpu.h"
#include "ops/blas.h"
#include "ops/loss.h"
#include "train/checkpoint.h"
#include "train/data_parallel.h"
#include "train/progress.h"
#include "train/schedule.h"
#include "train/training.h"

namespace hkt::models {
namespace {

namespace fs = std::filesystem;

// Keeps the metrics lines up to `step` (a resumed run rewrites what follows),
// replacing the file atomically: a crash during the resume keeps the old lines.
// The test line goes too: the run writes it again when it ends, so resuming
// a finished run does not log its test twice.
void truncate_metrics(const std::string& path, int64_t step) {
  std::ifstream in(path);
  if (!in) return;
  std::string line, kept;
  while (std::getline(in, line)) {
    try {
      const Json fields = parse_json(line);
      if (fields.at("step").as_int() <= step && fields.at("type").as_string() != "test") kept += line + "\n";
    } catch (const Error&) {
      break;  // a line cut short by a crash ends the usable log
    }
  }
  in.close();
  io::write_file_atomic(path, kept, "");
}

std::string format_evaluation(const char* split, int64_t step, const Evaluation& e) {
  char line[160];
  std::snprintf(line, sizeof line, "eval %s  step %lld  loss %.4f  accuracy %.4f  (%lld examples)", split,
                (long long)step, e.loss, e.accuracy, (long long)e.examples);
  return line;
}

// Everything a run holds between steps. Data parallelism: every rank runs
// the same loop on its shard of each global batch; rank 0 (`lead`) alone
// writes the metrics, config and checkpoints.
struct Run {
  Run(const TrainOptions& options_, distributed::Communicator& comm_)
      : options(options_),
        comm(comm_),
        lead(comm_.rank() == 0),
        bucket_bytes(std::max<int64_t>(1, static_cast<int64_t>(options_.bucket_mb * (1 << 20)))) {}

  const TrainOptions& options;
  distributed::Communicator& comm;
  bool lead;
  int64_t bucket_bytes;
  TaskData task;
  ModelConfig config;  // the options' model with vocab, classes and max_len from the data
  int64_t steps_per_epoch = 0, total = 0, eval_every = 0, checkpoint_every = 0;
  LearningRateSchedule schedule;
  std::string checkpoint, metrics_path;
  std::unique_ptr<Classifier> model;
  std::unique_ptr<AdamW> optimizer;
  std::ofstream metrics;  // rank 0's; writes to it elsewhere go nowhere
  int64_t step = 0;       // the last step done
  // The shuffled order of the current epoch (shuffled_order of the epoch number).
  std::vector<int64_t> order;
  int64_t order_epoch = -1;
  // For the message when the loss stops being finite.
  int64_t last_finite_step = 0;
  double last_finite_loss = NAN;
};

// Checks, data, model and optimizer (resumed from the checkpoint with
// --resume), config.json, the first lines on stdout.
std::unique_ptr<Run> set_up(const TrainOptions& options) {
  check(options.batch >= 1, "--batch must be at least 1");
  distributed::Communicator& comm = distributed::world();
  comm.set_timeout(options.collective_timeout);
  check(options.bucket_mb > 0, "--bucket-mb must be positive, got ", options.bucket_mb);
  auto run = std::make_unique<Run>(options, comm);
  if (options.threads > 0) set_num_threads(options.threads);
  run->task = load_task(options);
  const data::Dataset& train = run->task.train;
  ModelConfig& config = run->config;
  config = options.model;
  config.vocab = train.vocab;
  config.classes = train.classes;
  config.max_len = train.seq_len;
  config.validate();
  dispatch::require_device(options.device);  // before any output is written

  run->steps_per_epoch = std::max<int64_t>(1, train.count / options.batch);
  run->total = options.steps > 0 ? options.steps : options.epochs * run->steps_per_epoch;
  check(run->total >= 1, "nothing to do (0 steps)");
  run->eval_every = options.eval_every > 0 ? options.eval_every : run->steps_per_epoch;
  run->checkpoint_every = options.checkpoint_every > 0 ? options.checkpoint_every : run->eval_every;
  run->schedule = {options.lr, options.warmup >= 0 ? options.warmup : run->total / 10, run->total, 0.0};

  fs::create_directories(options.out);
  run->checkpoint = (fs::path(options.out) / "checkpoint.safetensors").string();
  run->metrics_path = (fs::path(options.out) / "metrics.jsonl").string();

  run->model = std::make_unique<Classifier>(config, options.seed);
  Classifier& model = *run->model;
  model.set_fused_attention(options.fused_attention);
  model.to(options.device);  // before the optimizer, whose state follows the parameters
  run->optimizer = std::make_unique<AdamW>(
      model.named_parameters(),
      AdamWOptions{.lr = options.lr, .beta1 = 0.9, .beta2 = 0.98, .eps = 1e-8, .weight_decay = options.weight_decay});
  std::string resume_note;
  if (options.resume) {
    check(fs::exists(run->checkpoint), run->checkpoint, ": no such file (nothing to resume)");
    const LoadedCheckpoint loaded = load_checkpoint(run->checkpoint, model, *run->optimizer);
    run->step = loaded.step;
    if (!loaded.checksum) resume_note += "\nnote: " + run->checkpoint + " has no checksum: not written by hkt-train";
    if (!loaded.optimizer_state)
      resume_note += "\nnote: " + run->checkpoint + " holds no optimizer state: AdamW starts fresh at step " +
                     std::to_string(run->step);
    if (run->step >= run->total)
      resume_note += "\nnote: the run already finished its " + std::to_string(run->total) + " steps";
    if (run->lead) truncate_metrics(run->metrics_path, run->step);
  } else if (run->lead) {
    std::ofstream(run->metrics_path, std::ios::trunc);
  }
  run->last_finite_step = run->step;
  distributed::broadcast_parameters(comm, model.named_parameters());
  if (run->lead) {
    Json options_json = options_to_json(options);
    options_json.set("model", config_to_json(config));
    options_json.set("version", version());
    io::write_file_atomic((fs::path(options.out) / "config.json").string(), to_json(options_json) + "\n", "");
    run->metrics.open(run->metrics_path, std::ios::app);
  }
  std::printf("hkt %s: %s: %s, %lld parameters, %lld train / %lld val examples, T = %lld, %lld steps (%lld per "
              "epoch)%s%s\n",
              version(), options.task.c_str(), config.attention.c_str(), (long long)model.parameter_count(),
              (long long)train.count, (long long)run->task.val.count, (long long)config.max_len, (long long)run->total,
              (long long)run->steps_per_epoch,
              run->step > 0 ? (", resuming at step " + std::to_string(run->step)).c_str() : "", resume_note.c_str());
  if (model.parameters().front().device().type == DeviceType::CPU) {
    const BlasInfo blas = blas_info();
    std::printf("cpu: %d threads, attention on the %s path, GEMMs on the micro-kernel and %s (kernels %s)\n",
                num_threads(), attention_cpu_path(config.head_dim()).c_str(), blas.library.c_str(), blas.core.c_str());
  }
  if (comm.size() > 1)
    std::printf("data parallel: %d ranks (%s), global batch %lld, gradient buckets of %.3g MB\n", comm.size(),
                comm.backend().c_str(), (long long)options.batch, options.bucket_mb);
  return run;
}

struct StepResult {
  int64_t epoch;  // counted from 1, on the console and in metrics.jsonl alike
  double loss, lr, grad_norm, step_ms, allreduce_ms;
};

// One optimizer step (run.step + 1) on this rank's shard of the global batch.
StepResult take_step(Run& run) {
  const TrainOptions& options = run.options;
  distributed::Communicator& comm = run.comm;
  const int64_t step = ++run.step;
  const int64_t epoch = (step - 1) / run.steps_per_epoch, position = (step - 1) % run.steps_per_epoch;
  if (epoch != run.order_epoch) {
    run.order = shuffled_order(run.task.train.count, options.seed, static_cast<uint64_t>(epoch));
    run.order_epoch = epoch;
  }
  const int64_t global_begin = position * options.batch;
  const int64_t global_size = std::min<int64_t>(run.task.train.count, global_begin + options.batch) - global_begin;
  const distributed::Shard shard = distributed::shard_of(global_size, comm.rank(), comm.size());
  std::vector<int64_t> indices(run.order.begin() + global_begin + shard.begin,
                               run.order.begin() + global_begin + shard.end);
  if (options.test_die_at_step == step && comm.size() > 1 && comm.rank() == comm.size() - 1) {
    std::fprintf(stderr, "rank %d: dying at step %lld (--test-die-at-step)\n", comm.rank(), (long long)step);
    std::raise(SIGKILL);
  }

  const auto start = std::chrono::steady_clock::now();
  StepResult result{epoch + 1, 0, run.schedule.at(step), 0, 0, 0};
  run.optimizer->set_lr(result.lr);
  run.optimizer->zero_grad();
  // This rank's share of the global mean loss (shard mean × shard share).
  Tensor loss;
  if (!indices.empty()) {
    data::Batch batch = batch_on(data::make_batch(run.task.train, indices), options.device);
    loss = cross_entropy(run.model->forward(batch.tokens, batch.lengths), batch.labels);
    result.loss = loss.item() * shard.weight;
  }
  if (comm.size() > 1) comm.all_reduce_sum(&result.loss, 1);  // a NaN anywhere stops every rank here
  if (!std::isfinite(result.loss))
    fail("the loss is ", result.loss, " at step ", step, "; the last finite loss was ", run.last_finite_loss,
         " at step ", run.last_finite_step, "; the last good checkpoint is kept at ", run.checkpoint);
  if (loss.defined()) loss.backward(Tensor::full(loss.shape(), shard.weight, loss.dtype(), loss.device()));
  const auto reduce_start = std::chrono::steady_clock::now();
  const NamedTensors parameters = run.model->named_parameters();
  distributed::all_reduce_gradients(comm, parameters, run.bucket_bytes);
  result.allreduce_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - reduce_start).count();
  result.grad_norm = options.clip > 0 ? clip_grad_norm(parameters, options.clip) : grad_norm(parameters);
  run.optimizer->step();
  result.step_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  run.last_finite_loss = result.loss;
  run.last_finite_step = step;
  return result;
}

// The step's metrics line (every log_every steps and the last) and the progress bar.
void log_step(Run& run, const StepResult& result, Progress& progress) {
  const int64_t step = run.step;
  if (run.lead && (step % run.options.log_every == 0 || step == run.total)) {
    Json line = Json::object({{"type", "train"}, {"step", step}, {"epoch", result.epoch}, {"loss", result.loss},
                              {"lr", result.lr}, {"grad_norm", result.grad_norm}, {"step_ms", result.step_ms}});
    if (run.comm.size() > 1) line.set("allreduce_ms", result.allreduce_ms);
    write_json_line(run.metrics, line);
  }
  progress.update(step, result.epoch, result.loss, result.lr);
}

Evaluation evaluate_split(Run& run, const data::Dataset& split) {
  return evaluate_data_parallel(run.comm, *run.model, split, run.options.batch, run.options.eval_batches);
}

// Validation every eval_every steps and at the end, then the checkpoint
// every checkpoint_every steps and when stopping. Returns the evaluation
// when there was one.
std::optional<Evaluation> evaluate_and_checkpoint(Run& run, bool stopping, Progress& progress) {
  const int64_t step = run.step;
  std::optional<Evaluation> evaluation;
  if (step % run.eval_every == 0 || step == run.total) {
    evaluation = evaluate_split(run, run.task.val);
    if (run.lead)
      write_json_line(run.metrics, Json::object({{"type", "eval"}, {"step", step}, {"val_loss", evaluation->loss},
                                                 {"val_accuracy", evaluation->accuracy}}));
    progress.message(format_evaluation("val", step, *evaluation));
  }
  // Metrics first: a kill after the checkpoint's rename must find every line
  // up to its step on disk (resume drops only the lines after it).
  if (run.lead) run.metrics.flush();
  if (run.lead && (step % run.checkpoint_every == 0 || stopping))
    save_checkpoint(run.checkpoint, *run.model, *run.optimizer, step);
  return evaluation;
}

// After the last step: the test split, when the task has one.
void evaluate_test(Run& run) {
  Evaluation test = evaluate_split(run, run.task.test);
  if (run.lead)
    write_json_line(run.metrics, Json::object({{"type", "test"}, {"step", run.step}, {"test_loss", test.loss},
                                               {"test_accuracy", test.accuracy}}));
  std::printf("%s\n", format_evaluation("test", run.step, test).c_str());
}

}  // namespace

Evaluation train(const TrainOptions& options) {
  DetectAnomalyGuard anomaly_mode(options.detect_anomaly || detect_anomaly());  // on if the caller turned it on
  std::unique_ptr<Run> run = set_up(options);
  Progress progress(run->total, options.log_every, run->step);
  std::optional<Evaluation> last_eval;
  while (run->step < run->total) {
    const StepResult result = take_step(*run);
    log_step(*run, result, progress);
    const bool stopping = run->step == run->total || run->step == options.stop_at;
    if (auto evaluation = evaluate_and_checkpoint(*run, stopping, progress)) last_eval = evaluation;
    if (stopping) break;
  }
  progress.finish();
  if (!last_eval) last_eval = evaluate_split(*run, run->task.val);
  if (run->step == run->total && run->task.test.count > 0) evaluate_test(*run);
  return *last_eval;
}

}  // namespace hkt::models
