// models::train: the loop of tools/hkt-train. Data order, learning rate and
// parameters depend only on the seed, the step and the thread count, so a
// resumed run continues exactly where the checkpoint left off.
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "distributed/gradients.h"
#include "engine/autograd.h"
#include "engine/device_choice.h"
#include "engine/threads.h"
#include "io/files.h"
#include "io/json.h"
#include "nn/optim.h"
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
void truncate_metrics(const std::string& path, int64_t step) {
  std::ifstream in(path);
  if (!in) return;
  std::string line, kept;
  while (std::getline(in, line)) {
    try {
      if (parse_json(line).at("step").as_int() <= step) kept += line + "\n";
    } catch (const Error&) {
      break;  // a line cut short by a crash ends the usable log
    }
  }
  in.close();
  io::write_file_atomic(path, kept, "train: " + path);
}

std::string format_evaluation(const char* split, int64_t step, const Evaluation& e) {
  char line[160];
  std::snprintf(line, sizeof line, "eval %s  step %lld  loss %.4f  accuracy %.4f  (%lld examples)", split,
                (long long)step, e.loss, e.accuracy, (long long)e.examples);
  return line;
}

}  // namespace

Evaluation train(const TrainOptions& options) {
  check(options.batch >= 1, "train: --batch must be at least 1");
  // Data parallelism: every rank runs this loop on its shard of each global
  // batch; rank 0 alone writes the metrics, config and checkpoints.
  distributed::Communicator& comm = distributed::world();
  comm.set_timeout(options.collective_timeout);
  check(options.bucket_mb > 0, "train: --bucket-mb must be positive, got ", options.bucket_mb);
  const int64_t bucket_bytes = std::max<int64_t>(1, static_cast<int64_t>(options.bucket_mb * (1 << 20)));
  const bool lead = comm.rank() == 0;
  if (options.threads > 0) set_num_threads(options.threads);
  DetectAnomalyGuard anomaly_mode(options.detect_anomaly || detect_anomaly());  // on if the caller turned it on
  TaskData task = load_task(options);
  ModelConfig config = options.model;
  config.vocab = task.train.vocab;
  config.classes = task.train.classes;
  config.max_len = task.train.seq_len;
  config.validate();
  dispatch::require_device(options.device);  // before any output is written

  const int64_t steps_per_epoch = std::max<int64_t>(1, task.train.count / options.batch);
  const int64_t total = options.steps > 0 ? options.steps : options.epochs * steps_per_epoch;
  check(total >= 1, "train: nothing to do (0 steps)");
  const int64_t eval_every = options.eval_every > 0 ? options.eval_every : steps_per_epoch;
  const int64_t checkpoint_every = options.checkpoint_every > 0 ? options.checkpoint_every : eval_every;
  LearningRateSchedule schedule{options.lr, options.warmup >= 0 ? options.warmup : total / 10, total, 0.0};

  fs::create_directories(options.out);
  const std::string checkpoint = (fs::path(options.out) / "checkpoint.safetensors").string();
  const std::string metrics_path = (fs::path(options.out) / "metrics.jsonl").string();

  Classifier model(config, options.seed);
  model.set_fused_attention(options.fused_attention);
  model.to(options.device);  // before the optimizer, whose state follows the parameters
  AdamW optimizer(model.named_parameters(), {.lr = options.lr, .beta1 = 0.9, .beta2 = 0.98, .eps = 1e-8,
                                             .weight_decay = options.weight_decay});
  int64_t step = 0;
  if (options.resume) {
    check(fs::exists(checkpoint), "train: --resume: no checkpoint at ", checkpoint);
    step = load_checkpoint(checkpoint, model, optimizer);
    if (lead) truncate_metrics(metrics_path, step);
  } else if (lead) {
    std::ofstream(metrics_path, std::ios::trunc);
  }
  distributed::broadcast_parameters(comm, model.named_parameters());
  if (lead) {
    Json run = options_to_json(options);
    run.set("model", config_to_json(config));
    io::write_file_atomic((fs::path(options.out) / "config.json").string(), to_json(run) + "\n", "train");
  }
  std::ofstream metrics;  // rank 0's; writes to it elsewhere go nowhere
  if (lead) metrics.open(metrics_path, std::ios::app);
  std::printf("%s: %s, %lld parameters, %lld train / %lld val examples, T = %lld, %lld steps (%lld per epoch)%s\n",
              options.task.c_str(), config.attention.c_str(), (long long)model.parameter_count(),
              (long long)task.train.count, (long long)task.val.count, (long long)config.max_len, (long long)total,
              (long long)steps_per_epoch, step > 0 ? (", resuming at step " + std::to_string(step)).c_str() : "");
  if (comm.size() > 1)
    std::printf("data parallel: %d ranks (%s), global batch %lld, gradient buckets of %.3g MB\n", comm.size(),
                comm.backend().c_str(), (long long)options.batch, options.bucket_mb);

  Progress progress(total, options.log_every, step);
  std::vector<int64_t> order;
  int64_t order_epoch = -1, last_finite_step = step;
  double last_finite_loss = NAN;
  Evaluation last_eval;
  bool evaluated = false;
  while (step < total) {
    ++step;
    const int64_t epoch = (step - 1) / steps_per_epoch, position = (step - 1) % steps_per_epoch;
    if (epoch != order_epoch) {
      order = shuffled_order(task.train.count, options.seed, static_cast<uint64_t>(epoch));
      order_epoch = epoch;
    }
    const int64_t global_begin = position * options.batch;
    const int64_t global_size = std::min<int64_t>(task.train.count, global_begin + options.batch) - global_begin;
    const distributed::Shard shard = distributed::shard_of(global_size, comm.rank(), comm.size());
    std::vector<int64_t> indices(order.begin() + global_begin + shard.begin, order.begin() + global_begin + shard.end);
    if (options.test_die_at_step == step && comm.size() > 1 && comm.rank() == comm.size() - 1) {
      std::fprintf(stderr, "rank %d: dying at step %lld (--test-die-at-step)\n", comm.rank(), (long long)step);
      std::raise(SIGKILL);
    }

    const auto start = std::chrono::steady_clock::now();
    const double lr = schedule.at(step);
    optimizer.set_lr(lr);
    optimizer.zero_grad();
    // This rank's share of the global mean loss (shard mean × shard share).
    Tensor loss;
    double loss_value = 0;
    if (!indices.empty()) {
      data::Batch batch = batch_on(data::make_batch(task.train, indices), options.device);
      loss = cross_entropy(model.forward(batch.tokens, batch.lengths), batch.labels);
      loss_value = loss.item() * shard.weight;
    }
    if (comm.size() > 1) comm.all_reduce_sum(&loss_value, 1);  // a NaN anywhere stops every rank here
    if (!std::isfinite(loss_value))
      fail("train: the loss is ", loss_value, " at step ", step, "; the last finite loss was ", last_finite_loss,
           " at step ", last_finite_step, "; the last good checkpoint is kept at ", checkpoint);
    if (loss.defined()) loss.backward(Tensor::full(loss.shape(), shard.weight, loss.dtype(), loss.device()));
    const auto reduce_start = std::chrono::steady_clock::now();
    distributed::all_reduce_gradients(comm, model.named_parameters(), bucket_bytes);
    const double allreduce_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - reduce_start).count();
    const double norm = options.clip > 0 ? clip_grad_norm(model.named_parameters(), options.clip)
                                         : grad_norm(model.named_parameters());
    optimizer.step();
    const double step_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    last_finite_loss = loss_value;
    last_finite_step = step;

    if (lead && (step % options.log_every == 0 || step == total)) {
      Json line = Json::object({{"type", "train"}, {"step", step}, {"epoch", epoch}, {"loss", loss_value},
                                {"lr", lr}, {"grad_norm", norm}, {"step_ms", step_ms}});
      if (comm.size() > 1) line.set("allreduce_ms", allreduce_ms);
      write_json_line(metrics, line);
    }
    progress.update(step, epoch + 1, loss_value, lr);

    const bool stopping = step == total || step == options.stop_at;
    if (step % eval_every == 0 || step == total) {
      last_eval = evaluate_data_parallel(comm, model, task.val, options.batch, options.eval_batches);
      evaluated = true;
      if (lead)
        write_json_line(metrics, Json::object({{"type", "eval"}, {"step", step}, {"val_loss", last_eval.loss},
                                               {"val_accuracy", last_eval.accuracy}}));
      progress.message(format_evaluation("val", step, last_eval));
    }
    // Metrics first: a kill after the checkpoint's rename must find every line
    // up to its step on disk (resume drops only the lines after it).
    if (lead) metrics.flush();
    if (lead && (step % checkpoint_every == 0 || stopping)) save_checkpoint(checkpoint, model, optimizer, step);
    if (stopping) break;
  }
  progress.finish();
  if (!evaluated) last_eval = evaluate_data_parallel(comm, model, task.val, options.batch, options.eval_batches);
  if (step == total && task.test.count > 0) {
    Evaluation test = evaluate_data_parallel(comm, model, task.test, options.batch, options.eval_batches);
    if (lead)
      write_json_line(metrics, Json::object({{"type", "test"}, {"step", step}, {"test_loss", test.loss},
                                             {"test_accuracy", test.accuracy}}));
    std::printf("%s\n", format_evaluation("test", step, test).c_str());
  }
  return last_eval;
}

}  // namespace hkt::models
