// Matrix products: one differentiable strided-batched GEMM (its CPU kernel is
// OpenBLAS), with matmul and linear built on it.
#include "ops/matmul.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <iostream>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/dispatch.h"
#include "ops/attention_cpu.h"
#include "ops/blas.h"
#include "ops/common.h"
#include "ops/reduce.h"
#include "ops/shape.h"

namespace hkt {

// ---- CPU kernel -----------------------------------------------------------

namespace {

// Once per process: say so when OpenBLAS chose kernels below this CPU (ops/blas.h).
void warn_if_blas_core_is_slow() {
  static const bool warned = [] {
    const BlasInfo info = blas_info();
    if (!info.suggested_core.empty() && !std::getenv("OPENBLAS_CORETYPE"))
      std::cerr << "hkt: warning: OpenBLAS runs its " << info.core << " kernels on a CPU that can run "
                << info.suggested_core << "'s: GEMMs up to 5x slower. Set OPENBLAS_CORETYPE="
                << info.suggested_core << " before the program starts.\n";
    return true;
  }();
  (void)warned;
}

void blas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const float* a, int lda,
               const float* b, int ldb, float beta, float* c, int ldc) {
  warn_if_blas_core_is_slow();
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
}

void blas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const double* a, int lda,
               const double* b, int ldb, double beta, double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, 1.0, a, lda, b, ldb, beta, c, ldc);
}

int blas_int(int64_t value) {
  check(value <= INT_MAX, "gemm: extent ", value, " exceeds the BLAS integer range");
  return static_cast<int>(value);
}

// float32 GEMMs whose N is a multiple of the vector width run on the
// attention kernels' register-blocked micro-kernel (ops/attention_cpu.h): as
// fast as OpenBLAS's own kernels on this model's thin shapes (M = B·T, N and
// K = d or d_ff), and as fast on a CPU that OpenBLAS mis-detects. Threads
// split the rows of C, so every element is summed by one thread in one
// order. HKT_CPU_GEMM=blas sends every GEMM to BLAS (to compare the two).
bool own_gemm_enabled() {
  static const bool enabled = [] {
    const char* choice = std::getenv("HKT_CPU_GEMM");
    return !(choice && std::string(choice) == "blas");
  }();
  return enabled;
}

// A product with few rows of C and a long depth (a weight's gradient,
// Σ over B·T rows: M, N = d or d_ff, K = 16384): splitting C's rows would
// leave threads idle, and one micro-kernel pass over the whole depth streams
// B from memory once per 6 rows of C. Instead fixed chunks of the depth each
// make a whole partial C, walking their chunk in blocks short enough that B's
// block stays in L1 while every row of C reads it (64 deep: 16 KiB of B at
// N = 64; the 64 × 64 product ran 1.08× faster than in 256-deep blocks, which
// stay in L2 only, on a Sapphire Rapids core); the partials are added in
// chunk order, so the result does not depend on the thread count.
constexpr int64_t kDepthChunk = 2048, kDepthBlock = 64;
bool split_depth(int64_t m, int64_t k) { return m < 384 && k >= 2 * kDepthChunk; }

// Asks for `count` floats from p into L2 (one hint per 64-byte line). In the
// training step the GEMMs' streamed operand (the activations, 2–8 MiB) often
// comes from DRAM, and the hardware prefetcher, which stops at 4 KiB pages,
// leaves the micro-kernel waiting on it: the weight gradient ran at 57–76
// GFLOP/s inside the step against 82–115 with its operands in cache. Asking
// for the next block while this one computes took the 64 × 64 × 16384
// product from DRAM (640 MiB of operands rotated) from 61.7 to 65.3 GFLOP/s;
// in the step the GEMMs' time moved within the noise (docs/PERFORMANCE.md).
// Always inlined: GCC 12 proves a prefetch-only function free of side
// effects and deletes the calls it does not inline (gemm_split_depth's
// prefetch was absent from the library until `objdump` showed it).
[[gnu::always_inline]] inline void prefetch_to_l2(const float* p, int64_t count) {
  for (int64_t i = 0; i < count; i += 16) __builtin_prefetch(p + i, 0, 2);
}

// The a and b blocks of depth [k0, k0 + count) that gemm_split_depth reads.
[[gnu::always_inline]] inline void prefetch_depth_block(int64_t m, int64_t n, int64_t k0, int64_t count,
                                                        const float* a, int64_t a_row, int64_t a_col, const float* b) {
  if (a_row == 1) prefetch_to_l2(a + k0 * a_col, count * a_col);  // Aᵀ: the block is contiguous
  else
    for (int64_t row = 0; row < m; ++row) prefetch_to_l2(a + row * a_row + k0, count);
  prefetch_to_l2(b + k0 * n, count * n);
}

// Whether every value of the rows × cols block at p (rows `stride` apart) is
// ±0 (NaN is not), stopping at the first row that is not: a nonzero block
// costs about one row's read. A block of A that is all zero adds nothing to
// C, so the GEMMs skip it: in a training step's backward the output
// gradients of the padded positions are exactly zero rows (the pooling
// multiplies them by 0), a quarter of B·T at lengths spread over T/2 … T.
// Exact for finite B (0 · inf would be NaN).
bool block_is_zero(const float* p, int64_t rows, int64_t cols, int64_t stride) {
  for (int64_t r = 0; r < rows; ++r)
    if (!row_is_zero(p + r * stride, cols)) return false;
  return true;
}

// Calls run(first, count, zero) over the rows [0, rows) of a block (cols
// values each, `stride` apart) in order, in runs: zero = true for a run of
// at least kZeroRun rows that are all zero (it adds nothing to a product),
// false for the rows between, which a product then computes. Finer than
// block_is_zero: the padded rows of a sequence rarely fill the blocks they
// fall in (48 rows of C, 64 of depth); at lengths spread over T/2 … T a third
// of MHA's padded rows, and most of HKT's coarse levels' (256 and 128 rows a
// sequence), shared a block with valid ones. Shorter zero runs stay in the
// product: splitting it costs micro-kernel remainders (6 rows a kernel).
constexpr int64_t kZeroRun = 8;
template <class Run>
void for_each_row_run(const float* p, int64_t rows, int64_t cols, int64_t stride, Run&& run) {
  int64_t first = 0;  // the first row not yet handed to run
  // The first value decides most rows: a valid row's is rarely 0 (NaN is not 0 either).
  auto zero_row = [&](int64_t r) { return p[r * stride] == 0.0f && row_is_zero(p + r * stride, cols); };
  for (int64_t r = 0; r < rows;) {
    if (!zero_row(r)) {
      ++r;
      continue;
    }
    int64_t end = r + 1;
    while (end < rows && zero_row(end)) ++end;
    if (end - r >= kZeroRun) {
      if (r > first) run(first, r - first, false);
      run(r, end - r, true);
      first = end;
    }
    r = end;
  }
  if (rows > first) run(first, rows - first, false);
}

// sums[r] += Σ_{k < count} op(A)[r, k] for the m rows of op(A), element (r, k) at a[r · a_row + k · a_col].
template <class T>
void add_row_sums(int64_t m, int64_t count, const T* a, int64_t a_row, int64_t a_col, T* sums) {
  if (a_row == 1) {  // Aᵀ stored: each k is a contiguous row of m values
    for (int64_t k = 0; k < count; ++k)
      for (int64_t r = 0; r < m; ++r) sums[r] += a[k * a_col + r];
  } else {
    for (int64_t r = 0; r < m; ++r)
      for (int64_t k = 0; k < count; ++k) sums[r] += a[r * a_row + k * a_col];
  }
}

// With row_sums (not null), also row_sums[r] = Σ_k op(A)[r, k]: each chunk
// sums its blocks of A while they are in L1 for the product (a 64 × 64 block
// adds 1/64 to its FMAs) into a partial of its own, added in chunk order.
void gemm_split_depth(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_row, int64_t a_col, const float* b,
                      const float* bias, float* c, bool accumulate, const attention_cpu::Path& path,
                      float* row_sums) {
  const int64_t chunks = (k + kDepthChunk - 1) / kDepthChunk;
  // A tensor's storage comes from the caching allocator: a std::vector of
  // this size (128 KiB and up) is mmap'd, zeroed and page-faulted in again on
  // every call. Each chunk's first block overwrites its partial (beta = 0).
  const Tensor partials = Tensor::empty({chunks, m, n});
  float* partial = partials.data<float>();
  const Tensor sum_partials = row_sums ? Tensor::zeros({chunks, m}) : Tensor();
  float* sum_partial = row_sums ? sum_partials.data<float>() : nullptr;
  // Dynamic: a chunk of zero rows (for_each_row_run) is quick, and where they are depends on the batch.
#pragma omp parallel for schedule(dynamic)
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    const int64_t end = std::min(k, (chunk + 1) * kDepthChunk);
    bool started = false;  // the chunk's partial holds a product (else it is still to be zeroed)
    for (int64_t k0 = chunk * kDepthChunk; k0 < end; k0 += kDepthBlock) {
      // Two blocks ahead: one block's compute is shorter than a DRAM round trip.
      const int64_t ahead = k0 + 2 * kDepthBlock, count = std::min(kDepthBlock, end - k0);
      if (ahead < end) prefetch_depth_block(m, n, ahead, std::min(kDepthBlock, end - ahead), a, a_row, a_col, b);
      // Depth [k1, k1 + depth) of the product: adds to the chunk's partial and row sums.
      auto product = [&](int64_t k1, int64_t depth) {
        path.gemm(m, n, depth, a + k1 * a_col, a_row, a_col, b + k1 * n, n, partial + chunk * m * n, n, 1.0f,
                  started, nullptr);
        started = true;
        if (sum_partial) add_row_sums(m, depth, a + k1 * a_col, a_row, a_col, sum_partial + chunk * m);
      };
      // Zero depth rows of A add nothing to the product or the row sums. Aᵀ stored: the block is count rows of
      // m, and its zero runs drop out; else m rows of count, skipped only when all zero.
      if (a_row == 1) {
        for_each_row_run(a + k0 * a_col, count, m, a_col, [&](int64_t first, int64_t rows, bool zero) {
          if (!zero) product(k0 + first, rows);
        });
      } else if (!block_is_zero(a + k0 * a_col, m, count, a_row)) {
        product(k0, count);
      }
    }
    if (!started) std::fill(partial + chunk * m * n, partial + (chunk + 1) * m * n, 0.0f);
  }
  // Each element is its start value plus the chunks' partials in chunk order,
  // added a whole row of C at a time: vector adds, where element by element
  // the chunks lay m·n apart. This pass is serial: the other thread waits.
  for (int64_t row = 0; row < m; ++row) {
    float* out = c + row * n;
    if (!accumulate) {
      if (bias) std::copy(bias, bias + n, out);
      else std::fill(out, out + n, 0.0f);
    }
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      const float* part = partial + (chunk * m + row) * n;
      for (int64_t col = 0; col < n; ++col) out[col] += part[col];
    }
  }
  if (!row_sums) return;
  std::fill(row_sums, row_sums + m, 0.0f);
  for (int64_t chunk = 0; chunk < chunks; ++chunk)
    for (int64_t row = 0; row < m; ++row) row_sums[row] += sum_partial[chunk * m + row];
}

// rows × n values of c, each row set to bias (or to 0 without one): where a
// product is then added (beta = 1), or where there is none (an empty sum).
template <class T>
void fill_rows(T* c, int64_t rows, int64_t n, const T* bias) {
  for (int64_t row = 0; row < rows; ++row) {
    if (bias) std::copy(bias, bias + n, c + row * n);
    else std::fill(c + row * n, c + (row + 1) * n, T(0));
  }
}

// row_sums: null unless gemm_cpu chose to have the product sum op(A)'s rows
// (one item that takes gemm_split_depth).
void own_gemm(const float* pa, const float* pb, const float* bias, float* pc, const GemmDims& d,
              const attention_cpu::Path& path, float* row_sums) {
  // (A weight's gradient, Σ_i a[i]ᵀ b[i], arrives as one product with the
  // batch folded into the depth: gemm_compute merges it.)
  const int64_t m = d.m, n = d.n, k = d.k;
  const int64_t a_row = d.trans_a ? 1 : k, a_col = d.trans_a ? m : 1;
  std::vector<float> packed;  // bᵀ as [K, N] rows: the micro-kernel streams B by rows
  const int64_t kRows = m >= 384 ? 48 : 16;  // multiples of the micro-kernel's rows; small M still splits
  const int64_t blocks = (m + kRows - 1) / kRows;
  for (int64_t i = 0; i < d.batch; ++i) {
    const float* b = pb + i * d.stride_b;
    if (d.trans_b && (i == 0 || d.stride_b != 0)) {
      packed.resize(static_cast<size_t>(k * n));
      for (int64_t row = 0; row < n; ++row)
        for (int64_t col = 0; col < k; ++col) packed[col * n + row] = b[row * k + col];
    }
    const float* rows_b = d.trans_b ? packed.data() : b;
    const float* a = pa + i * d.stride_a;
    float* c = pc + i * d.stride_c;
    const bool summing = d.accumulate || (d.stride_c == 0 && i > 0);  // add to what c holds
    if (split_depth(m, k)) {
      gemm_split_depth(m, n, k, a, a_row, a_col, rows_b, bias, c, summing, path, row_sums);
      continue;
    }
    // Runs of 4 blocks, dealt out as threads come free: blocks of zero rows (for_each_row_run) are
    // quick, and a static split would leave the thread with the batch's longer examples the most work.
#pragma omp parallel for schedule(dynamic, 4) if (m * n * k > 8 * HKT_OMP_MIN_WORK && blocks > 1)
    for (int64_t block = 0; block < blocks; ++block) {
      const int64_t m0 = block * kRows, rows = std::min(kRows, m - m0);
      // The next block's rows of A (B is small and stays in cache).
      if (a_col == 1 && m0 + kRows < m) prefetch_to_l2(a + (m0 + kRows) * a_row, std::min(kRows, m - m0 - kRows) * k);
      // Rows [r0, r0 + count) of the block. linear's bias joins in the micro-kernel's store: C written once,
      // never read back.
      auto product = [&](int64_t r0, int64_t count) {
        path.gemm(count, n, k, a + r0 * a_row, a_row, a_col, rows_b, n, c + r0 * n, n, 1.0f, summing,
                  summing ? nullptr : bias);
      };
      if (a_col != 1) {
        product(m0, rows);
        continue;
      }
      // Runs of rows of A that are all zero (for_each_row_run): C's rows are the bias, 0, or what they hold.
      for_each_row_run(a + m0 * a_row, rows, k, a_row, [&](int64_t first, int64_t count, bool zero) {
        if (!zero) product(m0 + first, count);
        else if (!summing) fill_rows(c + (m0 + first) * n, count, n, bias);
      });
    }
  }
}

}  // namespace

// row_sums[r] = Σ_i Σ_k op(a[i])[r, k] in plain loops: where the product did not sum them as it ran.
template <class T>
void plain_row_sums(const T* a, const GemmDims& d, T* row_sums) {
  std::fill(row_sums, row_sums + d.m, T(0));
  for (int64_t i = 0; i < d.batch; ++i)
    add_row_sums(d.m, d.k, a + i * d.stride_a, d.trans_a ? 1 : d.k, d.trans_a ? d.m : 1, row_sums);
}

// Batch items run one after another: each BLAS call is already multithreaded,
// and summing into a shared c (beta = 1 after the first item) stays in a fixed order.
void gemm_cpu(const Tensor& a, const Tensor& b, const Tensor& bias, Tensor& c, const GemmDims& d, Tensor& row_sums) {
  visit_floating("gemm", c.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* pc = static_cast<T*>(c.raw_data());
    const T* pa = static_cast<const T*>(a.raw_data());
    const T* pbias = bias.defined() ? static_cast<const T*>(bias.raw_data()) : nullptr;
    T* psums = row_sums.defined() ? static_cast<T*>(row_sums.raw_data()) : nullptr;
    const bool empty = c.numel() == 0 || d.k == 0 || d.batch == 0;
    const attention_cpu::Path& path = attention_cpu::widest_path();
    const bool own = std::is_same_v<T, float> && path.width > 1 && d.n % path.width == 0 && own_gemm_enabled();
    // op(A)'s row sums come from the product itself where it streams A through gemm_split_depth, else from plain loops.
    const bool fused_sums = psums && own && !empty && d.batch == 1 && split_depth(d.m, d.k);
    if (psums && !fused_sums) plain_row_sums(pa, d, psums);
    if (empty) {  // an empty sum; BLAS may leave c untouched
      if (c.numel() > 0 && !d.accumulate) fill_rows(pc, c.numel() / d.n, d.n, pbias);
      return;
    }
    if constexpr (std::is_same_v<T, float>)
      if (own) return own_gemm(pa, static_cast<const float*>(b.raw_data()), pbias, pc, d, path, fused_sums ? psums : nullptr);
    const T* pb = static_cast<const T*>(b.raw_data());
    const int m = blas_int(d.m), n = blas_int(d.n), k = blas_int(d.k);
    // Row-major storage: a is [M, K] or, transposed, [K, M]; b is [K, N] or [N, K].
    const int lda = d.trans_a ? m : k, ldb = d.trans_b ? k : n;
    if (pbias) fill_rows(pc, d.batch * d.m, d.n, pbias);  // BLAS adds to c with beta = 1
    for (int64_t i = 0; i < d.batch; ++i) {
      const T beta = d.accumulate || (d.stride_c == 0 && i > 0) || pbias ? T(1) : T(0);
      blas_gemm(d.trans_a ? CblasTrans : CblasNoTrans, d.trans_b ? CblasTrans : CblasNoTrans, m, n, k,
                pa + i * d.stride_a, lda, pb + i * d.stride_b, ldb, beta, pc + i * d.stride_c, n);
    }
  });
}

HKT_REGISTER_KERNEL(kernels::gemm, DeviceType::CPU, gemm_cpu);

// ---- ops ------------------------------------------------------------------

namespace {

Shape batch_dims(const Tensor& t) { return Shape(t.shape().begin(), t.shape().end() - 2); }

// An operand in a message: "[4, 3]", or "[4, 3]ᵀ" as a product reads it transposed.
struct Operand {
  const Tensor& tensor;
  bool transposed;
};
void append_message(std::ostream& out, const Operand& operand) {
  hkt::append_message(out, operand.tensor.shape());
  if (operand.transposed) out << "ᵀ";
}

void check_gemm_args(const char* op, const Tensor& a, const Tensor& b, bool ta, bool tb) {
  check_floating(op, a);
  check_floating(op, b);
  check_compatible(op, {a, b});
  const Operand left{a, ta}, right{b, tb};
  check(a.dim() >= 2 && b.dim() >= 2, op, ": ", left, " x ", right, ": both operands need at least 2 dims");
  if (a.dim() > 2 && b.dim() > 2)
    check(batch_dims(a) == batch_dims(b), op, ": ", left, " x ", right, ": batch dims ", batch_dims(a), " and ",
          batch_dims(b), " differ (they must be equal, or one operand 2-D)");
  const int64_t inner_a = a.size(ta ? -2 : -1), inner_b = b.size(tb ? -1 : -2);
  check(inner_a == inner_b, op, ": ", left, " x ", right, ": inner sizes ", inner_a, " and ", inner_b, " differ");
}

// Not recorded: the forward of gemm and the GEMMs of its backward. Arguments
// are valid; with sum_batch both operands are batched and the result is [M, N]
// (and bias is undefined). A defined `into` (a gradient summed so far, of the
// result's shape) gets the product added and is returned.
Tensor gemm_compute(const Tensor& a, const Tensor& b, bool ta, bool tb, bool sum_batch, const Tensor& bias = Tensor(),
                    const Tensor& into = Tensor(), Tensor* row_sums = nullptr) {
  const Shape batch_shape = a.dim() > 2 ? batch_dims(a) : batch_dims(b);
  const int64_t batch = shape_numel(batch_shape);
  const int64_t rows_a = a.size(-2), cols_a = a.size(-1), rows_b = b.size(-2), cols_b = b.size(-1);
  GemmDims d;
  d.batch = batch;
  d.m = ta ? cols_a : rows_a;
  d.k = ta ? rows_a : cols_a;
  d.n = tb ? rows_b : cols_b;
  d.trans_a = ta;
  d.trans_b = tb;
  d.stride_a = a.dim() > 2 ? rows_a * cols_a : 0;
  d.stride_b = b.dim() > 2 ? rows_b * cols_b : 0;
  d.stride_c = sum_batch ? 0 : d.m * d.n;
  // A contiguous stack of row-major matrices is one taller matrix, so two
  // common cases become a single GEMM: x [B, M, K] times a shared weight
  // (M grows to B·M), and a shared weight's gradient Σ_i a[i]ᵀ b[i] (K grows to B·K).
  if (!sum_batch && d.stride_a != 0 && d.stride_b == 0 && !ta) {
    d.m *= batch;
    d.batch = 1;
  } else if (sum_batch && ta && !tb) {
    d.k *= batch;
    d.batch = 1;
  }
  Shape out_shape = sum_batch ? Shape{} : batch_shape;
  out_shape.push_back(ta ? cols_a : rows_a);
  out_shape.push_back(tb ? rows_b : cols_b);
  d.accumulate = into.defined();
  if (d.accumulate)
    check(into.shape() == out_shape && !bias.defined(), "gemm: internal: accumulating into ", into, " for ",
          out_shape, bias.defined() ? " with a bias" : "");
  Tensor c = d.accumulate ? into : Tensor::empty(out_shape, a.dtype(), a.device());
  Tensor sums = row_sums ? Tensor::empty({d.m}, a.dtype(), a.device()) : Tensor();
  dispatch::kernel<GemmKernel>(kernels::gemm, a.device())(a, b, bias, c, d, sums);
  if (row_sums) *row_sums = sums;
  return c;
}

// bias (linear's, [N] or undefined) is added to every row of the product.
Tensor gemm_op(const char* op, const Tensor& a, const Tensor& b, bool ta, bool tb, const Tensor& bias = Tensor()) {
  check_gemm_args(op, a, b, ta, tb);
  Tensor out = gemm_compute(a, b, ta, tb, /*sum_batch=*/false, bias);
  // For C = op(A) op(B) and G = dL/dC:  dL/dop(A) = G op(B)ᵀ,  dL/dop(B) = op(A)ᵀ G,
  // so dA = G op(B)ᵀ or, when A enters transposed, op(B) Gᵀ; dB = op(A)ᵀ G or Gᵀ op(A).
  // A 2-D operand shared over the batch gets the sum over batch items.
  // An undefined bias is no input of the graph node (the graph walk reads every input).
  const bool has_bias = bias.defined();
  std::vector<Tensor> inputs = {a, b};
  if (has_bias) inputs.push_back(bias);
  record(op, inputs, out,
         [a = a.detach(), b = b.detach(), ta, tb, has_bias, bias_shape = has_bias ? bias.shape() : Shape{},
          ra = a.requires_grad(), rb = b.requires_grad(),
          rbias = has_bias && bias.requires_grad()](const Tensor& g) -> std::vector<Tensor> {
           const bool a_shared = a.dim() == 2 && b.dim() > 2, b_shared = b.dim() == 2 && a.dim() > 2;
           // Each product adds into the gradient its input already has from other consumers, where
           // autograd can hand it over: one pass over memory instead of a product and an add.
           Tensor ga, gb, bias_grad;
           if (ra) {
             const Tensor sum = take_gradient_sum(0);
             ga = ta ? gemm_compute(b, g, tb, true, a_shared, {}, sum) : gemm_compute(g, b, false, !tb, a_shared, {}, sum);
           }
           if (rb) {
             const Tensor sum = take_gradient_sum(1);
             // linear's dW = Gᵀ·x: the rows of Gᵀ summed are the bias's gradient, taken as the product reads G.
             gb = tb ? gemm_compute(g, a, true, ta, b_shared, {}, sum, rbias ? &bias_grad : nullptr)
                     : gemm_compute(a, g, !ta, false, b_shared, {}, sum);
           }
           std::vector<Tensor> grads = {ga, gb};
           if (has_bias) grads.push_back(!rbias ? Tensor() : bias_grad.defined() ? reshape(bias_grad, bias_shape)
                                                                                 : sum_to(g, bias_shape));
           return grads;
         });
  return out;
}

}  // namespace

Tensor gemm(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  return gemm_op("gemm", a, b, trans_a, trans_b);
}

Tensor matmul(const Tensor& a, const Tensor& b) { return gemm_op("matmul", a, b, false, false); }

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  check_defined("linear", x);
  check_defined("linear", weight, "weight");
  check(weight.dim() == 2, "linear: weight ", weight.shape(), " is not 2-D [out, in]");
  check(x.dim() >= 1 && x.size(-1) == weight.size(1), "linear: input ", x.shape(), " but weight ",
        weight.shape());
  if (bias.defined()) {
    check_compatible("linear", {x, weight, bias});
    check(bias.dim() == 1 && bias.size(0) == weight.size(0), "linear: weight ", weight.shape(),
          " but bias ", bias.shape());
  }
  // x [..., in] with leading dims is a batch of [rows, in] items times a shared weight, which
  // gemm_compute runs as one GEMM over all rows. Not reshaped first: x itself is then the
  // node's input, so the backward can add dx into the gradient x has from other consumers
  // (q, k and v read one x), which a reshape of x, a node of its own, would hide.
  if (x.dim() >= 2) return gemm_op("linear", x, weight, false, true, bias);
  Shape out_shape = x.shape();
  out_shape.back() = weight.size(0);
  const int64_t rows = shape_numel(Shape(x.shape().begin(), x.shape().end() - 1));
  return reshape(gemm_op("linear", reshape(x, {rows, x.size(-1)}), weight, false, true, bias), out_shape);
}

}  // namespace hkt
