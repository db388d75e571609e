// `hkt-bench step` (tools/bench/step.h).
#include "tools/bench/step.h"

#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

#include "engine/cpu_allocator.h"
#include "engine/profiler.h"
#include "hkt.h"
#include "models/classifier.h"
#include "tools/bench/child.h"

namespace hkt::bench {

namespace {

models::ModelConfig model_config(const StepOptions& o, const std::string& model) {
  models::ModelConfig config;
  config.attention = model;
  config.vocab = 18;
  config.max_len = o.seq_len;
  config.d_model = o.d_model;
  config.n_layers = o.layers;
  config.n_heads = o.heads;
  config.d_ff = o.d_ff;
  config.classes = 10;
  config.levels = model == "hkt" ? o.levels : 1;
  config.down_pointwise = model == "hkt" && o.down_pointwise;
  config.validate();
  return config;
}

// The model FLOPs of one training step (tools/bench/step.h).
double step_flops(const StepOptions& o, const std::string& model) {
  const double tokens = double(o.batch) * o.seq_len, d = double(o.d_model), dh = d / o.heads;
  double gemm = 2 * 2 * tokens * d * o.d_ff;  // the feed-forward block
  double attention = 0;
  for (int64_t valid : step_lengths(o)) {
    const double n = double(valid);
    if (model == "mha") {
      attention += 4.0 * dh * o.heads * n * n;
      continue;
    }
    double pairs = 0;
    for (int64_t l = 0; l < o.levels; ++l) pairs += std::pow(double(level_length(valid, l, 2)), 2);
    attention += 2.0 * dh * o.heads * (pairs + n * n);
  }
  if (model == "mha") {
    gemm += 4 * 2 * tokens * d * d;  // q, k, v, out
  } else {
    gemm += 2 * 2 * tokens * d * d;  // v, out
    for (int64_t l = 0; l < o.levels; ++l) {
      const double rows = double(level_length(o.seq_len, l, 2));
      gemm += 2 * 2 * o.batch * rows * d * d;                                     // q_l, k_l
      if (l > 0 && o.down_pointwise) gemm += 2 * double(o.batch) * rows * d * d;  // the pointwise projection
    }
  }
  return o.layers * (3 * gemm + 3.5 * attention);
}

struct StepResult {
  std::string model;
  double median_ms = 0, min_ms = 0, max_ms = 0, cpu_ms = 0, peak_mib = 0, gflop = 0;
  double fma_peak_gflops = 0;  // the parent's: its share's denominator, in the JSON line and the table alike
  int64_t allocations = 0;
  std::vector<profiler::OpTime> ops;
  bool ok = false;
  std::string error;
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// CPU time of every thread of this process: unlike wall time it does not grow
// when other jobs share the cores, so before/after comparisons on a busy
// machine use it (with OMP_WAIT_POLICY=passive, idle threads add nothing).
double process_cpu_ms() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return double(now.tv_sec) * 1e3 + double(now.tv_nsec) / 1e6;
}

}  // namespace

void declare_step_flags(cli::Flags& flags) {
  flags.add_choice("model", "both", {"mha", "hkt", "both"}, "the models to time");
  flags.add_int("batch", 32, "batch size", 1, 1 << 20);
  flags.add_int("seq-len", 512, "sequence length T", 1, 1 << 24);
  flags.add_int("d-model", 64, "model width d", 1, 1 << 16);
  flags.add_int("layers", 2, "number of blocks", 1, 1024);
  flags.add_int("heads", 4, "attention heads H", 1, 1024);
  flags.add_int("d-ff", 128, "feed-forward width", 1, 1 << 20);
  flags.add_int("levels", 3, "HKT levels L", 1, 32);
  flags.add_int("steps", 10, "timed steps", 1, 1'000'000);
  flags.add_int("warmup", 2, "untimed steps first", 0, 1'000'000);
  flags.add_int("threads", 0, "CPU threads (0: OMP_NUM_THREADS or all cores)", 0, cli::kThreadsMax);
  flags.add_switch("profile", "time per kernel, forward and backward apart (engine/profiler.h)");
  flags.add_switch("down-pointwise", "HKT with SPEC section 2's pointwise projection (hkt-train's default)");
  flags.add_choice("lengths", "spread", {"spread", "full"},
                   "valid tokens per example: spread from T/2 to T (bench/pytorch_step.py's batch) or T for all");
}

std::vector<int64_t> step_lengths(const StepOptions& o) {
  std::vector<int64_t> lengths(o.batch, o.seq_len);
  if (o.full_length || o.batch == 1) return lengths;
  const int64_t half = o.seq_len / 2;
  for (int64_t b = 0; b < o.batch; ++b) lengths[b] = half + b * (o.seq_len - half) / (o.batch - 1);
  return lengths;
}

StepOptions step_options(const cli::Flags& flags) {
  StepOptions o;
  const std::string model = flags.get("model");
  o.models = model == "both" ? std::vector<std::string>{"mha", "hkt"} : std::vector<std::string>{model};
  o.batch = flags.get_int("batch");
  o.seq_len = flags.get_int("seq-len");
  o.d_model = flags.get_int("d-model");
  o.layers = flags.get_int("layers");
  o.heads = flags.get_int("heads");
  o.d_ff = flags.get_int("d-ff");
  o.levels = flags.get_int("levels");
  o.steps = static_cast<int>(flags.get_int("steps"));
  o.warmup = static_cast<int>(flags.get_int("warmup"));
  o.threads = static_cast<int>(flags.get_int("threads"));
  o.profile = flags.get_bool("profile");
  o.down_pointwise = flags.get_bool("down-pointwise");
  o.full_length = flags.get("lengths") == "full";
  return o;
}

namespace {

// One model's training step on fixed random tokens of step_lengths: forward,
// cross-entropy, backward, clipping, AdamW.
class StepRunner {
 public:
  StepRunner(const StepOptions& o, const std::string& model_name) {
    const models::ModelConfig config = model_config(o, model_name);
    if (model_name == "mha")
      model_ = std::make_unique<models::MHAClassifier>(config, 0);
    else
      model_ = std::make_unique<models::HKTClassifier>(config, 0);
    optimizer_ = std::make_unique<AdamW>(model_->named_parameters(), AdamWOptions{.lr = 1e-3});
    Generator generator(7);
    std::vector<int64_t> ids(o.batch * o.seq_len), classes(o.batch);
    for (int64_t& id : ids) id = 1 + static_cast<int64_t>(generator.next_u64() % 17);
    for (int64_t& c : classes) c = static_cast<int64_t>(generator.next_u64() % 10);
    tokens_ = Tensor::from_vector(ids, {o.batch, o.seq_len});
    lengths_ = Tensor::from_vector(step_lengths(o), {o.batch});
    labels_ = Tensor::from_vector(classes, {o.batch});
  }
  void step() {
    Tensor loss = cross_entropy(model_->forward(tokens_, lengths_), labels_);
    loss.backward();
    clip_grad_norm(model_->named_parameters(), 1.0);
    optimizer_->step();
    optimizer_->zero_grad();
  }
  // Wall ms of one step.
  double timed_step() {
    const auto start = std::chrono::steady_clock::now();
    step();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }

 private:
  std::unique_ptr<models::Classifier> model_;
  std::unique_ptr<AdamW> optimizer_;
  Tensor tokens_, lengths_, labels_;
};

// Both models in one process, their steps alternating (MHA, HKT, MHA, ...):
// a burst of load from the machine's other tenants lands on both, so the
// ratio is steadier than that of two runs one after the other. Prints
// "pair MHA_MEDIAN HKT_MEDIAN MEDIAN_OF_STEP_PAIR_RATIOS".
int run_pair_child(const StepOptions& o) {
  StepRunner mha(o, "mha"), hkt(o, "hkt");
  for (int s = 0; s < o.warmup; ++s) {
    mha.step();
    hkt.step();
  }
  std::vector<double> mha_ms, hkt_ms, ratios;
  for (int s = 0; s < o.steps; ++s) {
    mha_ms.push_back(mha.timed_step());
    hkt_ms.push_back(hkt.timed_step());
    ratios.push_back(hkt_ms.back() / mha_ms.back());
  }
  std::printf("pair %.4f %.4f %.4f\n", median(mha_ms), median(hkt_ms), median(ratios));
  return 0;
}

}  // namespace

int run_step_child(const StepOptions& o) {
  if (o.threads > 0) set_num_threads(o.threads);
  if (o.models.size() == 2) return run_pair_child(o);
  const std::string model_name = o.models.front();
  StepRunner runner(o, model_name);
  for (int s = 0; s < o.warmup; ++s) runner.step();
  std::vector<double> times, cpu_times;
  int64_t allocations = 0;
  if (o.profile) {
    profiler::reset();
    profiler::enable(true);
  }
  for (int s = 0; s < o.steps; ++s) {
    const int64_t before = cpu_allocator_stats().system_allocations;
    const double cpu_start = process_cpu_ms();
    times.push_back(runner.timed_step());
    cpu_times.push_back(process_cpu_ms() - cpu_start);
    allocations = cpu_allocator_stats().system_allocations - before;
  }
  profiler::enable(false);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("%s %.4f %.4f %.4f %.4f %.2f %lld", model_name.c_str(), median(times),
              *std::min_element(times.begin(), times.end()), *std::max_element(times.begin(), times.end()),
              median(cpu_times), double(usage.ru_maxrss) / 1024.0, static_cast<long long>(allocations));
  for (const profiler::OpTime& op : profiler::snapshot())
    std::printf(" %s %lld %.4f", op.op.c_str(), static_cast<long long>(op.calls), op.ms / o.steps);
  std::printf("\n");
  return 0;
}

namespace {

// The arguments of a child that times `model` ("both": the interleaved pair).
std::vector<std::string> child_args(const StepOptions& o, const std::string& model, char** argv) {
  std::vector<std::string> args = {argv[0],       "--step-child", "--model",           model,
                                   "--batch",     std::to_string(o.batch),             "--seq-len",
                                   std::to_string(o.seq_len),     "--d-model",         std::to_string(o.d_model),
                                   "--layers",    std::to_string(o.layers),            "--heads",
                                   std::to_string(o.heads),       "--d-ff",            std::to_string(o.d_ff),
                                   "--levels",    std::to_string(o.levels),            "--steps",
                                   std::to_string(o.steps),       "--warmup",          std::to_string(o.warmup),
                                   "--threads",   std::to_string(o.threads)};
  if (o.down_pointwise) args.push_back("--down-pointwise");
  args.insert(args.end(), {"--lengths", o.full_length ? "full" : "spread"});
  return args;
}

struct PairResult {
  double mha_ms = 0, hkt_ms = 0, ratio = 0;  // the medians, and the median of the per-pair ratios
  bool ok = false;
  std::string error;
};

PairResult measure_pair(const StepOptions& o, char** argv) {
  PairResult result;
  const ChildOutput child = run_self(child_args(o, "both", argv));
  std::istringstream in(child.output);
  std::string tag;
  result.ok = child.ok && (in >> tag >> result.mha_ms >> result.hkt_ms >> result.ratio) && tag == "pair";
  if (!result.ok) result.error = child.ok ? "child failed" : child.error;
  return result;
}

StepResult measure_step(const StepOptions& o, const std::string& model, char** argv) {
  StepResult result;
  result.model = model;
  result.gflop = step_flops(o, model) / 1e9;
  std::vector<std::string> args = child_args(o, model, argv);
  if (o.profile) args.push_back("--profile");
  const ChildOutput child = run_self(args);
  std::istringstream in(child.output);
  std::string name;
  long long allocations = 0;
  if (!child.ok ||
      !(in >> name >> result.median_ms >> result.min_ms >> result.max_ms >> result.cpu_ms >> result.peak_mib >>
        allocations)) {
    result.error = child.ok ? "child failed" : child.error;
    return result;
  }
  result.allocations = allocations;
  profiler::OpTime op;
  while (in >> op.op >> op.calls >> op.ms) result.ops.push_back(op);
  result.ok = true;
  return result;
}

}  // namespace

int run_step_bench(const StepOptions& o, char** argv, double peak_gflops,
                   const std::function<double()>& measure_peak) {
  std::vector<StepResult> results;
  for (const std::string& model : o.models) {
    StepResult r = measure_step(o, model, argv);
    peak_gflops = std::max(peak_gflops, measure_peak());
    r.fma_peak_gflops = peak_gflops;
    std::printf("{\"bench\":\"step\",\"model\":\"%s\",\"B\":%lld,\"T\":%lld,\"d\":%lld,\"layers\":%lld,\"heads\":%lld,"
                "\"d_ff\":%lld,\"levels\":%lld,\"down_pointwise\":%s,\"lengths\":\"%s\",\"threads\":%d,\"steps\":%d",
                model.c_str(), (long long)o.batch, (long long)o.seq_len, (long long)o.d_model, (long long)o.layers,
                (long long)o.heads, (long long)o.d_ff, (long long)(model == "hkt" ? o.levels : 1),
                model == "hkt" && o.down_pointwise ? "true" : "false", o.full_length ? "full" : "spread",
                o.threads > 0 ? o.threads : num_threads(), o.steps);
    if (!r.ok) {
      std::printf(",\"error\":\"%s\"}\n", r.error.c_str());
    } else {
      const double gflops = r.gflop / (r.median_ms / 1e3);
      std::printf(",\"median_ms\":%.3f,\"min_ms\":%.3f,\"max_ms\":%.3f,\"cpu_ms\":%.3f,\"gflop\":%.3f,\"gflops\":%.2f",
                  r.median_ms, r.min_ms, r.max_ms, r.cpu_ms, r.gflop, gflops);
      if (r.fma_peak_gflops > 0)
        std::printf(",\"fma_peak_gflops\":%.1f,\"share_of_peak\":%.4f", r.fma_peak_gflops, gflops / r.fma_peak_gflops);
      std::printf(",\"peak_rss_mib\":%.1f,\"system_allocations_per_step\":%lld", r.peak_mib, (long long)r.allocations);
      if (!r.ops.empty()) {
        std::printf(",\"ops_ms_per_step\":{");
        for (size_t i = 0; i < r.ops.size(); ++i)
          std::printf("%s\"%s\":%.3f", i ? "," : "", r.ops[i].op.c_str(), r.ops[i].ms);
        std::printf("}");
      }
      std::printf("}\n");
    }
    std::fflush(stdout);
    results.push_back(r);
  }
  std::printf("\n%-6s %10s %10s %10s %10s %9s %8s %9s %12s\n", "model", "median ms", "min ms", "max ms", "CPU ms",
              "GFLOP/s", "% peak", "peak MiB", "allocs/step");
  for (const StepResult& r : results) {
    if (!r.ok) {
      std::printf("%-6s error: %s\n", r.model.c_str(), r.error.c_str());
      continue;
    }
    const double gflops = r.gflop / (r.median_ms / 1e3);
    std::printf("%-6s %10.1f %10.1f %10.1f %10.1f %9.1f %7.1f%% %9.1f %12lld\n", r.model.c_str(), r.median_ms,
                r.min_ms, r.max_ms, r.cpu_ms, gflops, r.fma_peak_gflops > 0 ? 100 * gflops / r.fma_peak_gflops : 0.0,
                r.peak_mib, (long long)r.allocations);
    if (r.fma_peak_gflops > 0 && gflops > r.fma_peak_gflops)
      std::fprintf(stderr,
                   "hkt-bench step: %s runs above the measured FMA peak: the peak was timed while other work held "
                   "the cores, so the share of peak is not reliable; rerun on a quiet machine\n",
                   r.model.c_str());
  }
  if (results.size() == 2 && results[0].ok && results[1].ok) {
    std::printf("HKT/MHA step-time ratio of the runs above: %.3f\n", results[1].median_ms / results[0].median_ms);
    const PairResult pair = measure_pair(o, argv);
    if (pair.ok) {
      std::printf("HKT/MHA step-time ratio, steps interleaved in one process: %.3f (medians: MHA %.1f ms, HKT %.1f ms)\n",
                  pair.ratio, pair.mha_ms, pair.hkt_ms);
      std::printf("{\"bench\":\"step_pair\",\"threads\":%d,\"steps\":%d,\"levels\":%lld,\"down_pointwise\":%s,"
                  "\"mha_median_ms\":%.3f,\"hkt_median_ms\":%.3f,\"ratio\":%.4f}\n",
                  o.threads > 0 ? o.threads : num_threads(), o.steps, (long long)o.levels,
                  o.down_pointwise ? "true" : "false", pair.mha_ms, pair.hkt_ms, pair.ratio);
    } else {
      std::printf("HKT/MHA interleaved steps: error: %s\n", pair.error.c_str());
    }
  }
  for (const StepResult& r : results) {
    if (r.ops.empty()) continue;
    double total = 0;
    for (const auto& op : r.ops) total += op.ms;
    std::printf("\n%s: time per step by kernel (ms; %.1f of %.1f ms in kernels)\n", r.model.c_str(), total,
                r.median_ms);
    for (const auto& op : r.ops)
      if (op.ms >= 0.005 * total) std::printf("  %-34s %9.2f  %5.1f%%  %6lld calls\n", op.op.c_str(), op.ms,
                                              100 * op.ms / r.median_ms, (long long)op.calls / o.steps);
  }
  return 0;
}

}  // namespace hkt::bench
