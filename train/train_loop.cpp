// models::train: the loop of tools/hkt-train. Data order, learning rate and
// parameters depend only on the seed, the step and the thread count, so a
// resumed run continues exactly where the checkpoint left off. The model of
// the best validation accuracy is kept (best.safetensors) and is the one the
// test split scores at the end, as the test set must not choose the step.
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

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
#include "models/model_size.h"
#include "train/checkpoint.h"
#include "train/data_parallel.h"
#include "train/progress.h"
#include "train/run_lock.h"
#include "train/schedule.h"
#include "train/stop_request.h"
#include "train/training.h"

namespace hkt::models {
namespace {

namespace fs = std::filesystem;

// Keeps the metrics lines up to `step` (a resumed run rewrites what follows),
// replacing the file atomically: a crash during the resume keeps the old lines.
// The test line goes too: the run writes it again when it ends, so resuming
// a finished run does not log its test twice.
void truncate_metrics(const std::string& path, int64_t step) {
  if (!fs::exists(path)) return;
  std::istringstream in(io::read_file_bytes(path, ""));
  std::string line, kept;
  while (std::getline(in, line)) {
    try {
      const Json fields = parse_json(line);
      if (fields.at("step").as_int() <= step && fields.at("type").as_string() != "test") kept += line + "\n";
    } catch (const Error&) {
      break;  // a line cut short by a crash ends the usable log
    }
  }
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
  std::string best_checkpoint;   // the parameters of the best validation accuracy so far
  double best_accuracy = -1;     // rank 0's: -1 until the first evaluation
  int64_t best_step = 0;
  std::unique_ptr<Classifier> model;
  std::unique_ptr<AdamW> optimizer;
  std::unique_ptr<RunLock> lock;            // rank 0's, held for the whole run
  std::unique_ptr<io::AppendFile> metrics;  // rank 0's
  int64_t step = 0;             // the last step done
  int64_t checkpoint_step = -1;  // the step of the checkpoint on disk (-1: none yet)
  // The shuffled order of the current epoch (shuffled_order of the epoch number).
  std::vector<int64_t> order;
  int64_t order_epoch = -1;
  // For the message when the loss stops being finite.
  int64_t last_finite_step = 0;
  double last_finite_loss = NAN;
};

// Locks the output folder for this run (train/run_lock.h) and refuses to
// start afresh over a run already there, unless told to (--overwrite).
void claim_folder(Run& run) {
  const TrainOptions& options = run.options;
  std::error_code error;
  fs::create_directories(options.out, error);
  if (error) fail(options.out, ": cannot create the output folder: ", error.message());
  run.lock = std::make_unique<RunLock>(options.out, "");
  if (options.resume) return;
  const std::string existing = run_files_in(options.out);
  if (existing.empty()) return;
  check(options.overwrite, options.out, " already holds a run (", existing, "); continue it with --resume ",
        options.out, ", choose another --out, or pass --overwrite to replace it");
  if (fs::is_regular_file(run.checkpoint)) fs::remove(run.checkpoint);  // not to be resumed with the new config
}

// The best validation accuracy up to the resumed step, from the metrics
// lines resume kept. A best.safetensors written after that step is written
// again when the run gets there (the same step gives the same accuracy).
void restore_best(Run& run) {
  std::ifstream in(run.metrics_path);
  std::string line;
  while (std::getline(in, line)) {
    const Json entry = parse_json(line);
    if (entry.at("type").as_string() != "eval") continue;
    const double accuracy = entry.at("val_accuracy").as_number();
    if (accuracy > run.best_accuracy) run.best_accuracy = accuracy, run.best_step = entry.at("step").as_int();
  }
}

// Checks, data, model and optimizer (resumed from the checkpoint with
// --resume), config.json, the first lines on stdout.
std::unique_ptr<Run> set_up(const TrainOptions& options) {
  try {
    validate_options(options);
  } catch (const Error& error) {
    fail(error.what());
  }
  distributed::Communicator& comm = distributed::world();
  comm.set_timeout(options.collective_timeout);
  auto run = std::make_unique<Run>(options, comm);
  run->checkpoint = (fs::path(options.out) / "checkpoint.safetensors").string();
  run->metrics_path = (fs::path(options.out) / "metrics.jsonl").string();
  run->best_checkpoint = (fs::path(options.out) / "best.safetensors").string();
  if (run->lead) claim_folder(*run);
  if (options.threads > 0) set_num_threads(options.threads);
  run->task = load_task(options);
  const data::Dataset& train = run->task.train;
  ModelConfig& config = run->config;
  config = options.model;
  config.vocab = train.vocab;
  config.classes = train.classes;
  config.max_len = train.seq_len;
  config.validate();
  check_model_size(config, options.batch, options.max_params,
                   options.resume ? (fs::path(options.out) / "config.json").string()
                                  : std::string("the options"));
  dispatch::require_device(options.device);  // before any output is written

  run->steps_per_epoch = std::max<int64_t>(1, train.count / options.batch);
  if (options.steps > 0) run->total = options.steps;
  else check(!__builtin_mul_overflow(options.epochs, run->steps_per_epoch, &run->total), "--epochs ",
             options.epochs, " of ", run->steps_per_epoch, " steps each is more steps than fit in 64 bits");
  check(run->total >= 1, "nothing to do (0 steps)");
  run->eval_every = options.eval_every > 0 ? options.eval_every : run->steps_per_epoch;
  run->checkpoint_every = options.checkpoint_every > 0 ? options.checkpoint_every : run->eval_every;
  run->schedule = {options.lr, options.warmup >= 0 ? options.warmup : run->total / 10, run->total, 0.0};


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
    check(run->step <= run->total, "checkpoint ", run->checkpoint, ": step ", run->step,
          " is past the run's last step, ", run->total);
    run->checkpoint_step = run->step;
    if (!loaded.checksum) resume_note += "\nnote: " + run->checkpoint + " has no checksum: not written by hkt-train";
    if (!loaded.optimizer_state)
      resume_note += "\nnote: " + run->checkpoint + " holds no optimizer state: AdamW starts fresh at step " +
                     std::to_string(run->step);
    if (run->step == run->total)
      resume_note += "\nnote: the run already finished its " + std::to_string(run->total) + " steps";
    if (run->lead) {
      truncate_metrics(run->metrics_path, run->step);
      if (fs::exists(run->best_checkpoint)) restore_best(*run);
    }
  } else if (run->lead) {
    fs::remove(run->best_checkpoint);  // a previous run's in this folder (--overwrite)
  }
  run->last_finite_step = run->step;
  distributed::broadcast_parameters(comm, model.named_parameters());
  if (run->lead) {
    Json options_json = options_to_json(options);
    options_json.set("model", config_to_json(config));
    // Absolute: --resume from another working folder must read the same data.
    if (!options.data.empty()) options_json.set("data", fs::absolute(options.data).lexically_normal().string());
    options_json.set("version", version());
    io::write_file_atomic((fs::path(options.out) / "config.json").string(), to_json(options_json) + "\n", "");
    run->metrics = std::make_unique<io::AppendFile>(run->metrics_path, "", /*truncate=*/!options.resume);
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

// Where the run can be picked up again, for the messages that stop it.
std::string kept_checkpoint(const Run& run) {
  if (run.checkpoint_step < 0) return "no checkpoint was written yet";
  return "the checkpoint of step " + std::to_string(run.checkpoint_step) + " is kept at " + run.checkpoint;
}

// Runs a write to the run folder; a failure (full disk, I/O error) stops
// the run, saying what is kept, instead of leaving a log with holes.
template <class Write>
void write_or_stop(const Run& run, Write&& write) {
  try {
    write();
  } catch (const Error& error) {
    fail(error.what(), "; the run stops at step ", run.step, ", ", kept_checkpoint(run));
  }
}

// The one way a run that stops being finite ends: what went non-finite and
// where, the last finite loss, and the checkpoint kept (every checkpoint
// written passed the checks of save_finite_checkpoint).
[[noreturn]] void diverged(const Run& run, int64_t step, const std::string& what) {
  std::ostringstream message;
  message << "the run diverged at step " << step << ": " << what << "; ";
  if (std::isnan(run.last_finite_loss)) message << "no earlier step of this session had a finite loss; ";
  else message << "the last finite loss was " << run.last_finite_loss << " at step " << run.last_finite_step << "; ";
  message << kept_checkpoint(run)
          << " (lower --lr, raise --warmup or set --clip)";
  throw Error(message.str());
}

// The name of the first tensor holding NaN or Inf, "" when all are finite.
std::string first_non_finite(const NamedTensors& tensors) {
  for (const auto& [name, tensor] : tensors)
    for (double value : tensor.to_vector<double>())
      if (!std::isfinite(value)) return name;
  return "";
}

NamedTensors gradients_of(const NamedTensors& parameters) {
  NamedTensors gradients;
  for (const auto& [name, parameter] : parameters)
    if (parameter.grad().defined()) gradients.emplace_back(name, parameter.grad());
  return gradients;
}

std::string number(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

// Writes the checkpoint of this step if it is finite: parameters, optimizer
// state and a loss computed with them (the evaluation of this step, else one
// validation batch), so the checkpoint a divergence keeps can be resumed.
void save_finite_checkpoint(Run& run, const std::optional<Evaluation>& evaluation) {
  const int64_t step = run.step;
  std::string culprit = first_non_finite(run.model->named_parameters());
  if (!culprit.empty()) diverged(run, step, "the parameters after the step hold NaN or Inf ('" + culprit + "')");
  culprit = first_non_finite(run.optimizer->state());
  if (!culprit.empty()) diverged(run, step, "the optimizer state after the step holds NaN or Inf ('" + culprit + "')");
  const double loss = evaluation ? evaluation->loss : evaluate(*run.model, run.task.val, run.options.batch, 1).loss;
  if (!std::isfinite(loss))
    diverged(run, step, "the parameters after the step give a validation loss of " + number(loss));
  write_or_stop(run, [&] {
    run.metrics->sync();
    save_checkpoint(run.checkpoint, *run.model, *run.optimizer, step);
  });
  run.checkpoint_step = step;
}

void log_metrics(Run& run, const Json& line) {
  write_or_stop(run, [&] { run.metrics->append(to_json(line) + "\n"); });
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
  if (!std::isfinite(result.loss)) diverged(run, step, "the loss is " + number(result.loss));
  if (loss.defined()) loss.backward(Tensor::full(loss.shape(), shard.weight, loss.dtype(), loss.device()));
  const auto reduce_start = std::chrono::steady_clock::now();
  const NamedTensors parameters = run.model->named_parameters();
  distributed::all_reduce_gradients(comm, parameters, run.bucket_bytes);
  result.allreduce_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - reduce_start).count();
  result.grad_norm = grad_norm(parameters);
  if (!std::isfinite(result.grad_norm)) {
    const std::string culprit = first_non_finite(gradients_of(parameters));
    diverged(run, step, "the gradient norm is " + number(result.grad_norm) + " (loss " + number(result.loss) + ")" +
                            (culprit.empty() ? "" : "; the gradient of '" + culprit + "' holds NaN or Inf"));
  }
  if (options.clip > 0) clip_grad_norm(parameters, options.clip, result.grad_norm);  // the norm just measured
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
    log_metrics(run, line);
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
    if (!std::isfinite(evaluation->loss))
      diverged(run, step, "the validation loss is " + number(evaluation->loss));
    if (run.lead)
      log_metrics(run, Json::object({{"type", "eval"}, {"step", step}, {"val_loss", evaluation->loss},
                                    {"val_accuracy", evaluation->accuracy}}));
    progress.message(format_evaluation("val", step, *evaluation));
    if (run.lead && evaluation->accuracy > run.best_accuracy) {  // ties keep the earlier step
      run.best_accuracy = evaluation->accuracy;
      run.best_step = step;
      write_or_stop(run, [&] { save_checkpoint(run.best_checkpoint, *run.model, *run.optimizer, step); });
    }
  }
  // Metrics first: a kill after the checkpoint's rename must find every line
  // up to its step on disk (resume drops only the lines after it).
  if (run.lead && (step % run.checkpoint_every == 0 || stopping)) save_finite_checkpoint(run, evaluation);
  return evaluation;
}

// The signal of a requested stop (train/stop_request.h), agreed by every
// rank: a rank that stops alone would leave the others waiting in the next
// all-reduce.
int agreed_stop_signal(Run& run) {
  int signal = stop_requested();
  if (run.comm.size() > 1) {
    double stopping = signal != 0;
    run.comm.all_reduce_sum(&stopping, 1);
    if (stopping > 0 && signal == 0) signal = SIGTERM;
  }
  return signal;
}

// After the last step: the test split, once, scored by the parameters of the
// best validation accuracy (every rank loads them once rank 0 has written them).
// A run folder from before best.safetensors existed, resumed at its last
// step, has none: its final parameters are tested.
void evaluate_test(Run& run) {
  run.comm.barrier();
  int64_t best_step = run.step;
  if (fs::exists(run.best_checkpoint)) best_step = load_checkpoint(run.best_checkpoint, *run.model, *run.optimizer).step;
  Evaluation test = evaluate_split(run, run.task.test);
  if (run.lead)
    log_metrics(run, Json::object({{"type", "test"}, {"step", run.step}, {"best_step", best_step},
                                   {"test_loss", test.loss}, {"test_accuracy", test.accuracy}}));
  std::printf("%s (the model of step %lld, the best validation accuracy)\n",
              format_evaluation("test", run.step, test).c_str(), (long long)best_step);
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
    const int signal = agreed_stop_signal(*run);
    const bool stopping = run->step == run->total || run->step == options.stop_at || signal != 0;
    if (auto evaluation = evaluate_and_checkpoint(*run, stopping, progress)) last_eval = evaluation;
    if (signal != 0) {
      progress.finish();
      throw Interrupted(signal, run->step,
                        std::string("stopped by ") + signal_name(signal) + " after step " +
                            std::to_string(run->step) + "; its checkpoint and metrics are written (" +
                            run->checkpoint + "); continue with --resume " + options.out);
    }
    if (stopping) break;
  }
  progress.finish();
  if (!last_eval) last_eval = evaluate_split(*run, run->task.val);
  if (run->step == run->total && run->task.test.count > 0) evaluate_test(*run);
  return *last_eval;
}

}  // namespace hkt::models
