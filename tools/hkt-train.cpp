// hkt-train: trains an MHA or HKT classifier on a task, with validation,
// metrics.jsonl, config.json and atomic checkpoints; --resume continues a run.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "data/dataset.h"
#include "distributed/communicator.h"
#include "engine/device_choice.h"
#include "io/cli.h"
#include "ops/blas.h"
#include "train/stop_request.h"
#include "train/training.h"

using namespace hkt;

namespace {

cli::Flags declare_flags() {
  using cli::kIntMax;
  cli::Flags flags("hkt-train", "Trains an MHA or HKT sequence classifier (SPEC sections 2-5).");
  flags.add_choice("task", "listops", {"listops", "fmnist", "imdb", "cifar10"}, "the task");
  flags.add("data", "", "folder of the task's files (listops: train.tsv, val.tsv, test.tsv)");
  flags.add_choice("model", "hkt", {"mha", "hkt"}, "the attention");
  flags.add_int("d-model", 64, "model width d", 1, 1 << 16);
  flags.add_int("layers", 2, "number of blocks", 1, 1024);
  flags.add_int("heads", 4, "attention heads H", 1, 1024);
  flags.add_int("d-ff", 128, "feed-forward width", 1, 1 << 20);
  flags.add_int("levels", 3, "HKT levels L", 1, 32);
  flags.add_int("stride", 2, "HKT stride s", 2, 1024);
  flags.add_int("down-kernel", 3, "HKT downsampling kernel k", 1, 1024);
  flags.add_int("conv-kernel", 5, "HKT hybrid-head convolution kernel kc", 1, 1024);
  flags.add_choice("down-pointwise", "true", {"true", "false"}, "HKT pointwise projection after downsampling");
  flags.add_switch("causal", "causal attention (default: bidirectional)");
  flags.add_choice("attention-impl", "fused", {"fused", "composed"},
                   "fused (tiled ops, memory linear in T) | composed (the T x T reference)");
  flags.add_int("seq-len", 512, "sequence length T (text tasks; images have theirs)", 1, 1 << 24);
  flags.add_int("batch", 32, "batch size", 1, 1 << 20);
  flags.add_int("epochs", 1, "epochs (ignored when --steps is given)", 1, 1'000'000);
  flags.add_int("steps", 0, "optimizer steps (overrides --epochs; 0: use --epochs)", 0, int64_t{1} << 40);
  flags.add_int("train-limit", 0, "use only the first N training examples (0: all)", 0, kIntMax);
  flags.add_int("val-size", 0, "examples held out of train for validation (tasks without a val split; 0: 10 %)", 0,
                kIntMax);
  flags.add_real("lr", 1e-3, "peak learning rate (linear warm-up, cosine decay)", 0);
  flags.add_int("warmup", -1, "warm-up steps (-1: 10 % of the steps)", -1, int64_t{1} << 40);
  flags.add_real("weight-decay", 0.01, "AdamW decoupled weight decay", 0);
  flags.add_real("clip", 1.0, "global gradient-norm clip (0: none)", 0);
  flags.add_int("seed", 0, "seed of initialisation and data order", 0, models::kMaxSeed);
  flags.add_int("threads", 0, "CPU threads (0: OMP_NUM_THREADS or all cores)", 0, cli::kThreadsMax);
  flags.add("device", "cpu", "cpu | cuda | cuda:N (CUDA builds: batches are moved to the GPU, checkpoints to the host)");
  flags.add_int("log-every", 10, "steps between metric lines", 1, kIntMax);
  flags.add_int("eval-every", 0, "steps between evaluations (0: each epoch)", 0, kIntMax);
  flags.add_int("eval-batches", 0, "evaluate on this many batches only (0: all)", 0, kIntMax);
  flags.add_int("checkpoint-every", 0, "steps between checkpoints (0: at each evaluation)", 0, kIntMax);
  flags.add("out", "runs/hkt", "output folder (created with its parents)");
  flags.add_switch("overwrite", "start afresh in an --out folder that already holds a run, replacing it");
  flags.add("resume", "", "continue the run in DIR from DIR/checkpoint.safetensors with the options of DIR/config.json");
  flags.add_real("max-params", 1e9, "refuse a model with more parameters than this (a typo in a size)", 1);
  flags.add_int("stop-at", 0, "stop after this step as if interrupted (for tests)", 0, kIntMax);
  // Reliability (docs/RELIABILITY.md); allowed beside --resume.
  flags.add_switch("detect-anomaly", "stop at the first op whose output or gradient holds NaN/Inf, naming it (slow)");
  // Data parallelism: start under mpirun (README "Data-parallel training").
  flags.add_real("collective-timeout", 300, "seconds an all-reduce may wait for the other ranks before the job aborts",
                 0, cli::kInfinity, /*min_exclusive=*/true);
  flags.add_real("bucket-mb", 4, "gradient all-reduce bucket size in MB", 0, 1 << 16, /*min_exclusive=*/true);
  flags.add_int("test-die-at-step", 0, "the last of several ranks kills itself at this step (for tests)", 0, kIntMax);
  return flags;
}

// --device: a bad name or a device this machine lacks is a usage error.
Device device_flag(const std::string& name) {
  Device device;
  try {
    device = dispatch::parse_device(name);
  } catch (const hkt::Error& error) {
    throw cli::UsageError(error.what());
  }
  try {
    dispatch::require_device(device);
  } catch (const hkt::Error& error) {
    throw cli::UsageError("--device " + name + ": " + error.what(), /*point_to_help=*/false);
  }
  return device;
}

// The data-parallel flags, which may also be given with --resume.
void read_parallel_flags(const cli::Flags& flags, models::TrainOptions& o) {
  o.collective_timeout = flags.get_double("collective-timeout");
  o.bucket_mb = flags.get_double("bucket-mb");
  o.test_die_at_step = flags.get_int("test-die-at-step");
}

// --resume DIR: the run's own options, from DIR/config.json; only the thread
// count, --stop-at and the data-parallel flags may be given beside it
// (anything else would change the run).
// The ranges of models::validate_options, as a usage error (exit 2).
// Options read from config.json (--resume) get the command line's checks; a bad one is a usage error.
void validate(const models::TrainOptions& o) {
  try {
    models::validate_options(o);
  } catch (const cli::UsageError&) {
    throw;
  } catch (const hkt::Error& error) {
    throw cli::UsageError(error.what());
  }
}

models::TrainOptions resumed_options(const cli::Flags& flags) {
  const std::string folder = flags.get("resume");
  for (const char* flag : {"task", "data", "model", "d-model", "layers", "heads", "d-ff", "levels", "stride",
                           "down-kernel", "down-pointwise", "conv-kernel", "causal", "attention-impl", "seq-len",
                           "batch", "epochs", "steps", "train-limit", "val-size", "lr", "warmup", "weight-decay",
                           "clip", "seed", "log-every", "eval-every", "eval-batches", "checkpoint-every", "out",
                           "overwrite"})
    cli::usage_check(!flags.was_given(flag), "--resume takes the run's options from ", folder,
                     "/config.json; drop --", flag);
  models::TrainOptions o = models::read_run_options(folder);
  o.out = folder;
  o.resume = true;
  if (flags.was_given("threads")) o.threads = static_cast<int>(flags.get_int("threads"));
  if (flags.was_given("device")) o.device = device_flag(flags.get("device"));
  o.stop_at = flags.get_int("stop-at");
  o.max_params = flags.get_double("max-params");
  o.detect_anomaly = flags.get_bool("detect-anomaly");
  read_parallel_flags(flags, o);
  validate(o);
  return o;
}

models::TrainOptions to_options(const cli::Flags& flags) {
  if (flags.was_given("resume")) return resumed_options(flags);
  models::TrainOptions o;
  o.task = flags.get("task");
  o.data = flags.get("data");
  o.out = flags.get("out");
  o.overwrite = flags.get_bool("overwrite");
  o.model.attention = flags.get("model");
  o.model.d_model = flags.get_int("d-model");
  o.model.n_layers = flags.get_int("layers");
  o.model.n_heads = flags.get_int("heads");
  o.model.d_ff = flags.get_int("d-ff");
  o.model.levels = o.model.attention == "mha" ? 1 : flags.get_int("levels");
  o.model.stride = flags.get_int("stride");
  o.model.down_kernel = flags.get_int("down-kernel");
  o.model.conv_kernel = flags.get_int("conv-kernel");
  // MHA has no downsampling
  o.model.down_pointwise = o.model.attention == "hkt" && flags.get("down-pointwise") == "true";
  o.model.causal = flags.get_bool("causal");
  o.fused_attention = flags.get("attention-impl") == "fused";
  o.seq_len = flags.get_int("seq-len");
  o.batch = flags.get_int("batch");
  o.epochs = flags.get_int("epochs");
  o.steps = flags.get_int("steps");
  o.train_limit = flags.get_int("train-limit");
  o.val_size = flags.get_int("val-size");
  o.lr = flags.get_double("lr");
  o.warmup = flags.get_int("warmup");
  o.weight_decay = flags.get_double("weight-decay");
  o.clip = flags.get_double("clip");
  o.seed = static_cast<uint64_t>(flags.get_int("seed"));
  o.threads = static_cast<int>(flags.get_int("threads"));
  o.log_every = flags.get_int("log-every");
  o.eval_every = flags.get_int("eval-every");
  o.eval_batches = flags.get_int("eval-batches");
  o.checkpoint_every = flags.get_int("checkpoint-every");
  o.stop_at = flags.get_int("stop-at");
  o.max_params = flags.get_double("max-params");
  o.device = device_flag(flags.get("device"));
  o.detect_anomaly = flags.get_bool("detect-anomaly");
  read_parallel_flags(flags, o);
  validate(o);
  return o;
}

// SIGINT and SIGTERM: the first lets the run finish its step and write its
// checkpoint and metrics (exit 128 + signal); a second quits at once.
extern "C" void on_stop_signal(int signal) {
  if (models::stop_requested() != 0) {
    const char text[] = "\nhkt-train: second signal: exiting at once (the last checkpoint written is kept)\n";
    (void)!::write(STDERR_FILENO, text, sizeof text - 1);
    ::_exit(128 + signal);
  }
  models::request_stop(signal);
  const char text[] = "\nhkt-train: stopping after this step (checkpoint and metrics are written; "
                      "signal again to quit at once)\n";
  (void)!::write(STDERR_FILENO, text, sizeof text - 1);
}

void catch_stop_signals() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  for (int signal : {SIGINT, SIGTERM}) sigaction(signal, &action, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  hkt::reexec_with_blas_core(argv);  // before any work: OpenBLAS picks its kernels when it loads
  cli::Flags flags = declare_flags();
  // Under mpirun, rank 0 alone prints; an error on any rank ends them all
  // (the others would otherwise wait for it in the next all-reduce).
  distributed::Communicator& world = distributed::world();
  if (world.rank() != 0 && !std::freopen("/dev/null", "w", stdout)) return 1;
  const std::string program = world.size() > 1 ? "hkt-train: rank " + std::to_string(world.rank()) : "hkt-train";
  const int code = cli::run_guarded(program, [&] {
    if (!flags.parse(argc, argv)) return 0;
    models::TrainOptions options = to_options(flags);
    catch_stop_signals();
    try {
      const models::Evaluation final_eval = models::train(options);
      std::printf("final: val_accuracy %.4f val_loss %.4f\n", final_eval.accuracy, final_eval.loss);
      return 0;
    } catch (const models::Interrupted& stop) {  // the step finished, metrics and checkpoint written
      std::fflush(stdout);
      std::fprintf(stderr, "%s: %s\n", program.c_str(), stop.what());
      return 128 + stop.signal;
    }
  });
  if (code != 0 && code < 128) world.abort(code);
  return code;
}
