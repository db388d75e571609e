// hkt-bench: wall time and peak memory of the fused attention ops
// (ops/attention.h, ops/multiscale_attention.h) against their composed
// references (ops/attention_reference.h), float32: on the CPU B = 1, H = 4,
// dh = 16; with --device cuda, the CUDA kernels (cuda/attention.cu,
// cuda/multiscale_attention.cu) against the composed ops on the GPU (cuBLAS
// gemm, ...) at B = 4, H = 8, dh = 64, with achieved TFLOP/s.
//
//   hkt-bench [--device cpu|cuda] [--min-t 256] [--max-t 8192] [--batch B] [--heads H] [--head-dim dh]
//             [--threads N] [--repeats 3] [--causal] [--fused-only]        (--help: every flag)
//   hkt-bench step [--model mha|hkt|both] [--threads N] [--profile] ...   (tools/bench/step.h)
//   hkt-bench gemm [--threads N] [--rows M] [--repeats N]                   (tools/bench/gemm.h)
//
// On the CPU it first measures the machine's limit: a register-only FMA loop
// on every thread at once with the widest SIMD path this CPU runs (printed
// once); each case then reports its GFLOP/s as a share of that peak, and the
// CPU path (ops/attention_cpu.h) the fused ops ran.
//
// Each case runs in its own child process (fork + exec of this program), so
// its peak RSS (getrusage ru_maxrss) is its own. One JSON line per case, then
// a table. HKT's time over MHA's (same implementation, same T) is printed
// beside the paper's score-cost bound Σ_{l<L} 4^-l (SPEC's table, stride 2).
// A benchmark reports; it never decides pass/fail.
//
// FLOPs (the model's, not what a kernel happens to execute): a level with P_l
// (coarse query, coarse key) pairs costs 2·dh·P_l for its scores, and P v
// 2·dh·P_0, per batch item and head; P_l = T_l² bidirectional, T_l(T_l+1)/2
// causal. MHA is L = 1: 4·dh·P_0. The backward counts 2.5 times the forward
// (FlashAttention-2's convention: S, dP, dV, dQ, dK), so forward+backward is 3.5 times.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#ifdef HKT_WITH_CUDA
#include <cuda_runtime.h>
#endif

#include "hkt.h"
#include "engine/dispatch.h"
#include "ops/attention_cpu.h"
#include "ops/blas.h"
#include "tools/bench/child.h"
#include "tools/bench/gemm.h"
#include "tools/bench/step.h"
#include "io/cli.h"
#include "ops/attention_reference.h"

using namespace hkt;

namespace {

constexpr int64_t kStride = 2;

struct Case {
  std::string op;    // "mha" or "hkt"
  std::string impl;  // "fused" or "composed"
  int64_t levels = 1, length = 0;
};

struct Options {
  Device device = Device::cpu();
  int64_t batch = 1, heads = 4, head_dim = 16;  // --device cuda: 4, 8, 64
  double composed_limit_bytes = 4.0 * (1LL << 30);  // --device cuda: 32 GiB
  int64_t min_length = 256, max_length = 8192;
  bool fused_only = false;
  int threads = 0;  // 0: OpenMP's default
  int repeats = 3;
  bool causal = false;
  std::string tile = "auto";  // the CPU kernels' tile edge (set_attention_cpu_tile)
};

double paper_bound(int64_t levels) {
  double total = 0, term = 1;
  for (int64_t l = 0; l < levels; ++l, term /= 4) total += term;
  return total;
}

// A rough count of the [B, H, T, T] float32 tensors the composed version holds
// at its peak in forward + backward (scores, their masked and softmaxed
// copies, gradients; per level the upsampled and weighted scores).
double composed_bytes(const Case& c, const Options& options) {
  const double square =
      4.0 * options.batch * options.heads * static_cast<double>(c.length) * static_cast<double>(c.length);
  return square * (c.op == "mha" ? 6 : 4 + 4 * c.levels);
}

// The model FLOPs of one forward (see the top of this file).
double forward_flops(const Case& c, const Options& options) {
  double pairs = 0;
  for (int64_t l = 0; l < c.levels; ++l) {
    const double rows = static_cast<double>(level_length(c.length, l, kStride));
    pairs += options.causal ? rows * (rows + 1) / 2 : rows * rows;
  }
  const double fine = options.causal ? c.length * (c.length + 1.0) / 2 : static_cast<double>(c.length) * c.length;
  return 2.0 * options.head_dim * options.batch * options.heads * (pairs + fine);
}

// Kernels run asynchronously on a GPU: wait for them before reading the clock.
void wait_for_device(const Options& options) {
#ifdef HKT_WITH_CUDA
  if (options.device.type == DeviceType::CUDA) {
    const cudaError_t status = cudaDeviceSynchronize();
    if (status != cudaSuccess) fail("hkt-bench: CUDA error: ", cudaGetErrorString(status));
  }
#else
  (void)options;
#endif
}

double milliseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// The machine's FMA limit: every thread runs the widest path's register-only
// FMA loop at once for about 0.3 s; FLOPs over wall time.
double fma_peak_gflops(int threads) {
  const attention_cpu::Path& path = attention_cpu::widest_path();
  constexpr int64_t kIterations = 1 << 22;
  path.fma_loop(kIterations / 16);  // warm up: clocks settle, threads start
  double best = 0;
  for (int round = 0; round < 3; ++round) {
    double flops = 0;
    const auto start = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads) reduction(+ : flops)
    flops += path.fma_loop(kIterations);
    best = std::max(best, flops / (milliseconds_since(start) * 1e6));
  }
  return best;
}

// ---- child: one case ------------------------------------------------------

int run_case(const Case& c, const Options& options) {
  if (options.threads > 0) set_num_threads(options.threads);
  Generator generator(42);
  const int64_t length = c.length;
  const Device device = options.device;
  auto leaf = [&](int64_t rows) {
    return randn({options.batch, options.heads, rows, options.head_dim}, generator, DType::Float32)
        .to(device)
        .requires_grad_(true);
  };
  std::vector<Tensor> queries, keys, leaves;
  for (int64_t l = 0; l < (c.op == "hkt" ? c.levels : 1); ++l) {
    queries.push_back(leaf(level_length(length, l, kStride)));
    keys.push_back(leaf(level_length(length, l, kStride)));
  }
  Tensor values = leaf(length);
  Tensor level_logits = randn({options.heads, c.levels}, generator, DType::Float32).to(device).requires_grad_(true);
  Tensor lengths = Tensor::from_vector<int64_t>(std::vector<int64_t>(options.batch, length), {options.batch});
  Tensor grad_out = randn(values.shape(), generator, DType::Float32).to(device);
  const bool fused = c.impl == "fused", causal = options.causal;
  std::function<Tensor()> forward;
  if (c.op == "mha")
    forward = [&] {
      return fused ? attention(queries[0], keys[0], values, lengths, causal)
                   : attention_reference(queries[0], keys[0], values, lengths, causal);
    };
  else
    forward = [&] {
      return fused ? multiscale_attention(queries, keys, values, level_logits, lengths, kStride, causal)
                   : multiscale_attention_reference(queries, keys, values, level_logits, lengths, kStride, causal);
    };

  forward().backward(grad_out);  // warm-up: OpenMP's threads start, memory is first touched, CUDA modules load
  wait_for_device(options);
  double best_forward = 1e300, best_both = 1e300;
  for (int r = 0; r < options.repeats; ++r) {
    NoGradGuard no_grad;
    const auto start = std::chrono::steady_clock::now();
    Tensor out = forward();
    wait_for_device(options);
    best_forward = std::min(best_forward, milliseconds_since(start));
  }
  for (int r = 0; r < options.repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    forward().backward(grad_out);
    wait_for_device(options);
    best_both = std::min(best_both, milliseconds_since(start));
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("%.4f %.4f %.2f\n", best_forward, best_both, static_cast<double>(usage.ru_maxrss) / 1024.0);
  return 0;
}

// ---- parent: every case in a child ----------------------------------------

struct Measurement {
  bool ok = false;
  double forward_ms = 0, both_ms = 0, peak_mib = 0;
  std::string error;
};

Measurement measure(const Case& c, const Options& options, const char* self) {
  const bench::ChildOutput child = bench::run_self(
      {self, "--case", c.op + "," + c.impl + "," + std::to_string(c.levels) + "," + std::to_string(c.length), "--threads",
       std::to_string(options.threads), "--repeats", std::to_string(options.repeats),
       options.causal ? "--causal" : "--causal=false", "--batch", std::to_string(options.batch), "--heads",
       std::to_string(options.heads), "--head-dim", std::to_string(options.head_dim), "--tile", options.tile, "--device",
       options.device.type == DeviceType::CUDA ? "cuda" : "cpu"});
  Measurement m;
  std::istringstream in(child.output);
  if (child.ok && (in >> m.forward_ms >> m.both_ms >> m.peak_mib))
    m.ok = true;
  else
    m.error = child.ok ? "child failed" : child.error;
  return m;
}

std::string case_name(const Case& c) {
  return c.impl + " " + (c.op == "mha" ? std::string("MHA") : "HKT L=" + std::to_string(c.levels));
}

void declare_flags(cli::Flags& flags) {
  flags.add_choice("device", "cpu", {"cpu", "cuda"}, "where the ops run");
  flags.add_int("min-t", 256, "shortest sequence length T", 1, 1 << 24);
  flags.add_int("max-t", 8192, "longest sequence length T (T doubles from --min-t)", 1, 1 << 24);
  flags.add_int("batch", 1, "batch size B (--device cuda: 4)", 1, 1 << 20);
  flags.add_int("heads", 4, "heads H (--device cuda: 8)", 1, 1024);
  flags.add_int("head-dim", 16, "head width dh (--device cuda: 64)", 1, 4096);
  flags.add_int("threads", 0, "CPU threads (0: OMP_NUM_THREADS or all cores)", 0, cli::kThreadsMax);
  flags.add_int("repeats", 3, "timed runs per case (the best counts)", 1, 1000);
  flags.add_switch("causal", "causal attention (default: bidirectional)");
  flags.add_choice("tile", "auto", {"auto", "8", "16", "32", "64", "128"},
                   "CPU kernels' tile edge, queries x keys (auto: the library's default, 128; causal 64)");
  flags.add_switch("fused-only", "skip the composed references");
  flags.add("case", "", "internal: the one case a child process runs (op,impl,levels,length)");
}

// The options; a child (--case) also gets its case.
Options to_options(const cli::Flags& flags, Case& child) {
  Options options;
  options.device = flags.get("device") == "cuda" ? Device::cuda(0) : Device::cpu();
  options.min_length = flags.get_int("min-t");
  options.max_length = flags.get_int("max-t");
  options.threads = static_cast<int>(flags.get_int("threads"));
  options.repeats = static_cast<int>(flags.get_int("repeats"));
  options.causal = flags.get_bool("causal");
  options.fused_only = flags.get_bool("fused-only");
  options.tile = flags.get("tile");
  const bool cuda = options.device.type == DeviceType::CUDA;
  options.batch = flags.was_given("batch") || !cuda ? flags.get_int("batch") : 4;
  options.heads = flags.was_given("heads") || !cuda ? flags.get_int("heads") : 8;
  options.head_dim = flags.was_given("head-dim") || !cuda ? flags.get_int("head-dim") : 64;
  if (cuda) options.composed_limit_bytes = 32.0 * (1LL << 30);
  if (flags.was_given("case")) {
    std::istringstream fields(flags.get("case"));
    char comma = 0;
    std::getline(fields, child.op, ',');
    std::getline(fields, child.impl, ',');
    cli::usage_check(static_cast<bool>(fields >> child.levels >> comma >> child.length) && comma == ',',
                     "--case must be op,impl,levels,length, got '", flags.get("case"), "'");
  }
  return options;
}

// A device the machine lacks is a failure (exit 1), named.
void require_cuda(const Options& options) {
  if (options.device.type != DeviceType::CUDA) return;
#ifndef HKT_WITH_CUDA
  fail("--device cuda: this build has no CUDA backend (configure with -DHKT_CUDA=ON)");
#endif
  check(dispatch::device_count(DeviceType::CUDA) > 0, "--device cuda: no CUDA device is present on this machine");
}

int run_bench(const cli::Flags& flags, char** argv);

// The first JSON line of `step` and `gemm`: the machine's FMA peak on this
// many threads, the SIMD path that reached it, and the BLAS. Returns the peak.
double print_machine_line() {
  const double peak = fma_peak_gflops(num_threads());
  std::printf("{\"machine\":\"cpu\",\"threads\":%d,\"fma_peak_gflops\":%.1f,\"fma_peak_path\":\"%s\","
              "\"blas\":\"%s\",\"blas_core\":\"%s\"}\n",
              num_threads(), peak, attention_cpu::widest_path().name, blas_info().library.c_str(),
              blas_info().core.c_str());
  return peak;
}

}  // namespace

int main(int argc, char** argv) {
  reexec_with_blas_core(argv);  // before any work: OpenBLAS picks its kernels when it loads
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "step" || mode == "--step-child") {  // the training step (tools/bench/step.h)
    cli::Flags flags("hkt-bench step", "Times the training step of the SPEC-size classifiers on the CPU.");
    bench::declare_step_flags(flags);
    return cli::run(flags, argc - 1, argv + 1, [&] {
      const bench::StepOptions step = bench::step_options(flags);
      if (mode == "--step-child") return bench::run_step_child(step);
      if (step.threads > 0) set_num_threads(step.threads);
      const double peak = print_machine_line();
      return bench::run_step_bench(step, argv, peak, [] { return fma_peak_gflops(num_threads()); });
    });
  }
  if (mode == "gemm") {  // the step's GEMMs, in cache and from memory (tools/bench/gemm.h)
    cli::Flags flags("hkt-bench gemm",
                     "Times the training step's float32 GEMMs (each linear's forward, input and weight gradient)\n"
                     "with their operands in cache and coming from memory.");
    bench::declare_gemm_flags(flags);
    return cli::run(flags, argc - 1, argv + 1, [&] {
      const bench::GemmOptions options = bench::gemm_options(flags);
      if (options.threads > 0) set_num_threads(options.threads);
      const double peak = print_machine_line();
      return bench::run_gemm_bench(options, peak);
    });
  }
  cli::Flags flags("hkt-bench",
                   "Wall time and peak memory of the fused attention ops against their composed references.\n"
                   "hkt-bench step --help: the training step instead; hkt-bench gemm --help: its GEMMs.");
  declare_flags(flags);
  return cli::run(flags, argc, argv, [&] { return run_bench(flags, argv); });
}

namespace {

int run_bench(const cli::Flags& flags, char** argv) {
  Case child;
  const Options options = to_options(flags, child);
  set_attention_cpu_tile(options.tile == "auto" ? 0 : std::stoll(options.tile));  // parent and child alike
  require_cuda(options);
  if (flags.was_given("case")) return run_case(child, options);

  double peak_gflops = 0;
  if (options.device.type == DeviceType::CPU) {
    const auto& path = attention_cpu::select_path(options.head_dim);
    peak_gflops = fma_peak_gflops(options.threads > 0 ? options.threads : num_threads());
    const BlasInfo blas = blas_info();
    std::printf("{\"machine\":\"cpu\",\"threads\":%d,\"fma_peak_gflops\":%.1f,\"fma_peak_path\":\"%s\","
                "\"attention_cpu_path\":\"%s\",\"blas\":\"%s\",\"blas_core\":\"%s\"}\n",
                options.threads > 0 ? options.threads : num_threads(), peak_gflops,
                attention_cpu::widest_path().name, path.name, blas.library.c_str(), blas.core.c_str());
  }

  struct Row {
    Case c;
    Measurement m;
    double ratio_forward = 0, ratio_both = 0;
    std::string skipped;
  };
  std::vector<Row> rows;
  for (int64_t length = options.min_length; length <= options.max_length; length *= 2) {
    Measurement mha[2];  // fused, composed
    for (const char* impl_name : {"fused", "composed"})
      for (int64_t levels : {1, 2, 3, 4}) {
        const std::string impl = impl_name;
        Row row;
        row.c = {levels == 1 ? "mha" : "hkt", impl, levels, length};
        const double bytes = composed_bytes(row.c, options);
        if (impl == "composed" && options.fused_only) continue;
        if (impl == "composed" && bytes > options.composed_limit_bytes) {
          std::ostringstream reason;
          reason << "its T x T tensors would take about " << bytes / (1LL << 30) << " GiB";
          row.skipped = reason.str();
        } else {
          row.m = measure(row.c, options, argv[0]);
          Measurement& baseline = mha[impl == "fused" ? 0 : 1];
          if (levels == 1)
            baseline = row.m;
          else if (row.m.ok && baseline.ok) {
            row.ratio_forward = row.m.forward_ms / baseline.forward_ms;
            row.ratio_both = row.m.both_ms / baseline.both_ms;
          }
        }
        std::printf(
            "{\"op\":\"%s\",\"impl\":\"%s\",\"T\":%lld,\"B\":%lld,\"H\":%lld,\"dh\":%lld,\"levels\":%lld,"
            "\"stride\":%lld,\"causal\":%s,\"device\":\"%s\",\"threads\":%d,\"repeats\":%d",
            row.c.op.c_str(), impl.c_str(), static_cast<long long>(length), static_cast<long long>(options.batch),
            static_cast<long long>(options.heads), static_cast<long long>(options.head_dim),
            static_cast<long long>(levels),
            static_cast<long long>(kStride), options.causal ? "true" : "false", options.device.str().c_str(),
            options.threads > 0 ? options.threads : num_threads(), options.repeats);
        if (!row.skipped.empty())
          std::printf(",\"skipped\":\"%s\"}\n", row.skipped.c_str());
        else if (!row.m.ok)
          std::printf(",\"error\":\"%s\"}\n", row.m.error.c_str());
        else {
          const double flops = forward_flops(row.c, options);
          std::printf(",\"backward_ms\":%.3f", row.m.both_ms - row.m.forward_ms);
          std::printf(",\"forward_ms\":%.3f,\"forward_backward_ms\":%.3f,\"peak_rss_mib\":%.1f", row.m.forward_ms,
                      row.m.both_ms, row.m.peak_mib);
          std::printf(",\"forward_tflops\":%.4f,\"forward_backward_tflops\":%.4f",
                      flops / (row.m.forward_ms * 1e9), 3.5 * flops / (row.m.both_ms * 1e9));
          if (peak_gflops > 0)
            std::printf(",\"forward_gflops\":%.2f,\"forward_backward_gflops\":%.2f,\"share_of_peak\":%.4f",
                        flops / (row.m.forward_ms * 1e6), 3.5 * flops / (row.m.both_ms * 1e6),
                        3.5 * flops / (row.m.both_ms * 1e6) / peak_gflops);
          if (levels > 1 && row.ratio_forward > 0)
            std::printf(",\"hkt_over_mha_forward\":%.4f,\"hkt_over_mha_forward_backward\":%.4f,\"paper_bound\":%.4f",
                        row.ratio_forward, row.ratio_both, paper_bound(levels));
          std::printf("}\n");
        }
        std::fflush(stdout);
        rows.push_back(row);
      }
  }

  if (peak_gflops > 0)
    std::printf("\nFMA peak %.1f GFLOP/s on %d threads (%s); B %lld, H %lld, dh %lld, %s; fused ops on the %s path\n",
                peak_gflops, options.threads > 0 ? options.threads : num_threads(),
                attention_cpu::widest_path().name, static_cast<long long>(options.batch),
                static_cast<long long>(options.heads), static_cast<long long>(options.head_dim),
                options.causal ? "causal" : "bidirectional", attention_cpu::select_path(options.head_dim).name);
  if (peak_gflops > 0) std::printf("BLAS: %s (kernels: %s)\n", blas_info().library.c_str(), blas_info().core.c_str());
  std::printf("\n%6s  %-18s %11s %12s %14s %10s %9s %7s %9s %9s %7s\n", "T", "case", "forward ms", "backward ms",
              "fwd+bwd ms", "peak MiB",
              "GFLOP/s", "% peak", "HKT/MHA", "HKT/MHA", "bound");
  std::printf("%6s  %-18s %11s %12s %14s %10s %9s %7s %9s %9s %7s\n", "", "", "", "", "", "host RSS", "fwd+bwd", "",
              "fwd",
              "fwd+bwd", "");
  for (const Row& row : rows) {
    std::printf("%6lld  %-18s ", static_cast<long long>(row.c.length), case_name(row.c).c_str());
    if (!row.skipped.empty())
      std::printf("skipped: %s\n", row.skipped.c_str());
    else if (!row.m.ok)
      std::printf("error: %s\n", row.m.error.c_str());
    else {
      const double gflops = 3.5 * forward_flops(row.c, options) / (row.m.both_ms * 1e6);
      std::printf("%11.2f %12.2f %14.2f %10.1f %9.1f", row.m.forward_ms, row.m.both_ms - row.m.forward_ms, row.m.both_ms,
                  row.m.peak_mib, gflops);
      if (peak_gflops > 0)
        std::printf(" %6.1f%%", 100.0 * gflops / peak_gflops);
      else
        std::printf(" %7s", "-");
      if (row.ratio_forward > 0)
        std::printf(" %9.3f %9.3f %7.4f", row.ratio_forward, row.ratio_both, paper_bound(row.c.levels));
      std::printf("\n");
    }
  }
  return 0;
}

}  // namespace
