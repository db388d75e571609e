#include "tools/bench/gemm.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "engine/cpu_allocator.h"
#include "hkt.h"

namespace hkt::bench {
namespace {

// One product as a linear layer's pass makes it: C = op(A)·op(B).
struct Product {
  const char* pass;  // "forward", "grad_input", "grad_weight"
  int64_t in, out;   // the layer's widths
  bool trans_a, trans_b;
  // A's and B's shapes, the product's M, N, K, and its FLOPs, for `rows` rows of x.
  bool is(const char* name) const { return std::string(pass) == name; }
  Shape a_shape(int64_t rows) const { return is("forward") ? Shape{rows, in} : Shape{rows, out}; }
  Shape b_shape(int64_t rows) const { return is("grad_weight") ? Shape{rows, in} : Shape{out, in}; }
  std::array<int64_t, 3> mnk(int64_t rows) const {
    if (is("forward")) return {rows, out, in};
    if (is("grad_input")) return {rows, in, out};
    return {out, in, rows};
  }
  double flops(int64_t rows) const { return 2.0 * double(rows) * double(in) * double(out); }
};

// The step's layers: attention projections d → d, feed-forward d → d_ff and d_ff → d.
std::vector<Product> step_products() {
  std::vector<Product> products;
  for (auto [in, out] : {std::pair<int64_t, int64_t>{64, 64}, {64, 128}, {128, 64}}) {
    products.push_back({"forward", in, out, false, true});      // x·Wᵀ
    products.push_back({"grad_input", in, out, false, false});  // dY·W
    products.push_back({"grad_weight", in, out, true, false});  // dYᵀ·x
  }
  return products;
}

// Bytes the from-memory copies must span: --memory-mib, or by default twice
// the last-level cache, so that none of them is still cached when its turn
// comes again (at least 64 MiB, at most 1 GiB).
int64_t eviction_bytes(const GemmOptions& o) {
  if (o.memory_mib > 0) return o.memory_mib << 20;
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  const int64_t cache = l3 > 0 ? int64_t(l3) : int64_t(32) << 20;
  return std::clamp<int64_t>(2 * cache, int64_t(64) << 20, int64_t(1) << 30);
}

double seconds_of(const std::function<void()>& work) {
  const auto start = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct Timing {
  double in_cache_gflops = 0, from_memory_gflops = 0;
  int64_t copies = 0;
};

Timing time_product(const Product& p, const GemmOptions& o, Generator& generator) {
  NoGradGuard no_grad;
  const Tensor a = randn(p.a_shape(o.rows), generator), b = randn(p.b_shape(o.rows), generator);
  Timing t;
  gemm(a, b, p.trans_a, p.trans_b);  // warm-up: threads started, pages touched
  double best = 1e30;
  for (int r = 0; r < o.repeats; ++r) best = std::min(best, seconds_of([&] { gemm(a, b, p.trans_a, p.trans_b); }));
  t.in_cache_gflops = p.flops(o.rows) / best / 1e9;

  const int64_t pair_bytes = (a.numel() + b.numel()) * int64_t(sizeof(float));
  t.copies = std::max<int64_t>(2, (eviction_bytes(o) + pair_bytes - 1) / pair_bytes);
  std::vector<Tensor> as, bs;
  for (int64_t c = 0; c < t.copies; ++c) {
    as.push_back(copy(a));
    bs.push_back(copy(b));
  }
  best = 1e30;
  // Each call's operands were last touched t.copies − 1 calls ago.
  const int64_t calls = std::max<int64_t>(o.repeats, t.copies);
  for (int64_t r = 0; r < calls; ++r) {
    const Tensor& x = as[r % t.copies];
    const Tensor& y = bs[r % t.copies];
    best = std::min(best, seconds_of([&] { gemm(x, y, p.trans_a, p.trans_b); }));
  }
  t.from_memory_gflops = p.flops(o.rows) / best / 1e9;
  as.clear();
  bs.clear();
  cpu_empty_cache();  // the copies' memory goes back to the system before the next product
  return t;
}

}  // namespace

void declare_gemm_flags(cli::Flags& flags) {
  flags.add_int("rows", 16384, "M, the rows of x and dY (the step's B·T)", 1, int64_t(1) << 24);
  flags.add_int("repeats", 20, "timed calls per product and column (the best counts)", 1, 1000);
  flags.add_int("threads", 0, "CPU threads (0: OMP_NUM_THREADS or all cores)", 0, cli::kThreadsMax);
  flags.add_int("memory-mib", 0, "MiB the from-memory operand copies span (0: twice the last-level cache)", 0,
                1 << 20);
}

GemmOptions gemm_options(const cli::Flags& flags) {
  GemmOptions o;
  o.rows = flags.get_int("rows");
  o.repeats = static_cast<int>(flags.get_int("repeats"));
  o.threads = static_cast<int>(flags.get_int("threads"));
  o.memory_mib = flags.get_int("memory-mib");
  return o;
}

int run_gemm_bench(const GemmOptions& o, double peak_gflops) {
  Generator generator(7);
  struct Row {
    Product p;
    Timing t;
  };
  std::vector<Row> rows;
  for (const Product& p : step_products()) {
    const Timing t = time_product(p, o, generator);
    rows.push_back({p, t});
    const auto [m, n, k] = p.mnk(o.rows);
    std::printf("{\"bench\":\"gemm\",\"pass\":\"%s\",\"layer_in\":%lld,\"layer_out\":%lld,\"m\":%lld,\"n\":%lld,"
                "\"k\":%lld,\"trans_a\":%s,\"trans_b\":%s,\"threads\":%d,\"in_cache_gflops\":%.2f,"
                "\"from_memory_gflops\":%.2f,\"from_memory_copies\":%lld,\"fma_peak_gflops\":%.1f}\n",
                p.pass, (long long)p.in, (long long)p.out, (long long)m, (long long)n, (long long)k,
                p.trans_a ? "true" : "false", p.trans_b ? "true" : "false", num_threads(), t.in_cache_gflops,
                t.from_memory_gflops, (long long)t.copies, peak_gflops);
    std::fflush(stdout);
  }
  std::printf("\n%-12s %-10s %12s %8s %14s %8s\n", "pass", "layer", "in cache", "% peak", "from memory", "% peak");
  for (const Row& r : rows) {
    const std::string layer = std::to_string(r.p.in) + "->" + std::to_string(r.p.out);
    std::printf("%-12s %-10s %12.1f %7.1f%% %14.1f %7.1f%%\n", r.p.pass, layer.c_str(), r.t.in_cache_gflops,
                100 * r.t.in_cache_gflops / peak_gflops, r.t.from_memory_gflops,
                100 * r.t.from_memory_gflops / peak_gflops);
  }
  std::printf("(GFLOP/s; %lld rows; %d thread(s); FMA peak %.1f GFLOP/s)\n", (long long)o.rows, num_threads(),
              peak_gflops);
  return 0;
}

}  // namespace hkt::bench
