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
#include "io/files.h"
#include "io/json.h"
#include "ops/blas.h"
#include "train/stop_request.h"
#include "train/training.h"

using namespace hkt;

namespace {

cli::Flags declare_flags() {
  cli::Flags flags("hkt-train", "Trains an MHA or HKT sequence classifier (SPEC sections 2-5).");
  flags.add("task", "listops", "listops | fmnist | imdb | cifar10");
  flags.add("data", "", "folder of the task's files (listops: train.tsv, val.tsv, test.tsv)");
  flags.add("model", "hkt", "mha | hkt");
  flags.add("d-model", "64", "model width d");
  flags.add("layers", "2", "number of blocks");
  flags.add("heads", "4", "attention heads H");
  flags.add("d-ff", "128", "feed-forward width");
  flags.add("levels", "3", "HKT levels L");
  flags.add("stride", "2", "HKT stride s");
  flags.add("down-kernel", "3", "HKT downsampling kernel k");
  flags.add("conv-kernel", "5", "HKT hybrid-head convolution kernel kc");
  flags.add("down-pointwise", "true", "HKT pointwise projection after downsampling: true | false");
  flags.add_switch("causal", "causal attention (default: bidirectional)");
  flags.add("attention-impl", "fused", "fused (tiled ops, memory linear in T) | composed (the T x T reference)");
  flags.add("seq-len", "512", "sequence length T (text tasks; images have theirs)");
  flags.add("batch", "32", "batch size");
  flags.add("epochs", "1", "epochs (ignored when --steps is given)");
  flags.add("steps", "0", "optimizer steps (overrides --epochs)");
  flags.add("train-limit", "0", "use only the first N training examples");
  flags.add("val-size", "0", "examples held out of train for validation (tasks without a val split; 0: 10 %)");
  flags.add("lr", "1e-3", "peak learning rate (linear warm-up, cosine decay)");
  flags.add("warmup", "-1", "warm-up steps (-1: 10 % of the steps)");
  flags.add("weight-decay", "0.01", "AdamW decoupled weight decay");
  flags.add("clip", "1.0", "global gradient-norm clip (0: none)");
  flags.add("seed", "0", "seed of initialisation and data order");
  flags.add("threads", "0", "CPU threads (0: OMP_NUM_THREADS or all cores)");
  flags.add("device", "cpu", "cpu | cuda | cuda:N (CUDA builds: batches are moved to the GPU, checkpoints to the host)");
  flags.add("log-every", "10", "steps between metric lines");
  flags.add("eval-every", "0", "steps between evaluations (0: each epoch)");
  flags.add("eval-batches", "0", "evaluate on this many batches only (0: all)");
  flags.add("checkpoint-every", "0", "steps between checkpoints (0: at each evaluation)");
  flags.add("out", "runs/hkt", "output folder");
  flags.add_switch("overwrite", "start afresh in an --out folder that already holds a run, replacing it");
  flags.add("resume", "", "continue the run in DIR from DIR/checkpoint.safetensors with the options of DIR/config.json");
  flags.add("max-params", "1e9", "refuse a model with more parameters than this (a typo in a size; raise it for large runs)");
  flags.add("stop-at", "0", "stop after this step as if interrupted (for tests)");
  // Reliability (docs/RELIABILITY.md); allowed beside --resume.
  flags.add_switch("detect-anomaly", "stop at the first op whose output or gradient holds NaN/Inf, naming it (slow)");
  // Data parallelism: start under mpirun (README "Data-parallel training").
  flags.add("collective-timeout", "300", "seconds an all-reduce may wait for the other ranks before the job aborts");
  flags.add("bucket-mb", "4", "gradient all-reduce bucket size in MB");
  flags.add("test-die-at-step", "0", "the last of several ranks kills itself at this step (for tests)");
  return flags;
}

// The data-parallel flags, which may also be given with --resume.
void read_parallel_flags(const cli::Flags& flags, models::TrainOptions& o) {
  o.collective_timeout = flags.get_double("collective-timeout");
  o.bucket_mb = flags.get_double("bucket-mb");
  o.test_die_at_step = flags.get_int("test-die-at-step");
  hkt::check(o.collective_timeout > 0, "hkt-train: --collective-timeout must be positive");
  hkt::check(o.bucket_mb > 0, "hkt-train: --bucket-mb must be positive");
}

// --resume DIR: the run's own options, from DIR/config.json; only the thread
// count, --stop-at and the data-parallel flags may be given beside it
// (anything else would change the run).
// The ranges of models::validate_options, as a usage error (exit 2).
void validate(const models::TrainOptions& o) {
  try {
    models::validate_options(o);
  } catch (const hkt::Error& error) {
    hkt::fail("hkt-train: ", error.what());
  }
}

models::TrainOptions resumed_options(const cli::Flags& flags) {
  const std::string folder = flags.get("resume");
  for (const char* flag : {"task", "data", "model", "d-model", "layers", "heads", "d-ff", "levels", "stride",
                           "down-kernel", "down-pointwise", "conv-kernel", "causal", "attention-impl", "seq-len",
                           "batch", "epochs", "steps", "train-limit", "val-size", "lr", "warmup", "weight-decay",
                           "clip", "seed", "log-every", "eval-every", "eval-batches", "checkpoint-every", "out",
                           "overwrite"})
    hkt::check(!flags.was_given(flag), "hkt-train: --resume takes the run's options from ", folder,
               "/config.json; drop --", flag);
  const std::string path = (std::filesystem::path(folder) / "config.json").string();
  models::TrainOptions o;
  try {
    o = models::options_from_json(parse_json(io::read_file_bytes(path, "hkt-train")));
  } catch (const hkt::Error& error) {
    hkt::fail("hkt-train: --resume ", folder, ": ", path, ": ", error.what());
  }
  o.out = folder;
  o.resume = true;
  if (flags.was_given("threads")) o.threads = static_cast<int>(flags.get_int("threads"));
  if (flags.was_given("device")) o.device = dispatch::parse_device(flags.get("device"));
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
  const std::string pointwise = flags.get("down-pointwise");
  hkt::check(pointwise == "true" || pointwise == "false", "hkt-train: --down-pointwise must be true or false, got '",
             pointwise, "'");
  o.model.down_pointwise = o.model.attention == "hkt" && pointwise == "true";  // MHA has no downsampling
  o.model.causal = flags.get_bool("causal");
  const std::string impl = flags.get("attention-impl");
  hkt::check(impl == "fused" || impl == "composed", "hkt-train: --attention-impl must be fused or composed, got '",
             impl, "'");
  o.fused_attention = impl == "fused";
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
  int64_t seed = flags.get_int("seed");
  hkt::check(seed >= 0, "hkt-train: --seed must be non-negative, got ", seed);
  o.seed = static_cast<uint64_t>(seed);
  o.threads = static_cast<int>(flags.get_int("threads"));
  o.log_every = flags.get_int("log-every");
  o.eval_every = flags.get_int("eval-every");
  o.eval_batches = flags.get_int("eval-batches");
  o.checkpoint_every = flags.get_int("checkpoint-every");
  o.stop_at = flags.get_int("stop-at");
  o.max_params = flags.get_double("max-params");
  o.device = dispatch::parse_device(flags.get("device"));
  o.detect_anomaly = flags.get_bool("detect-anomaly");
  read_parallel_flags(flags, o);
  hkt::check(o.log_every >= 1, "hkt-train: --log-every must be at least 1");
  hkt::check(o.threads >= 0, "hkt-train: --threads must be non-negative");
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
  models::TrainOptions options;
  try {
    if (!flags.parse(argc, argv)) return 0;
    options = to_options(flags);
    dispatch::require_device(options.device);  // a missing GPU is a usage error, before any output
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s\n", error.what());
    world.abort(2);
    return 2;
  }
  catch_stop_signals();
  try {
    models::Evaluation final_eval = models::train(options);
    std::printf("final: val_accuracy %.4f val_loss %.4f\n", final_eval.accuracy, final_eval.loss);
    return 0;
  } catch (const models::Interrupted& stop) {
    std::fflush(stdout);
    std::fprintf(stderr, "hkt-train: %s\n", stop.what());
    return 128 + stop.signal;
  } catch (const std::exception& error) {
    std::fflush(stdout);
    if (world.size() > 1) std::fprintf(stderr, "hkt-train: rank %d: %s\n", world.rank(), error.what());
    else std::fprintf(stderr, "hkt-train: %s\n", error.what());
    world.abort(1);
    return 1;
  }
}
