#pragma once
// The CPU kernels of the fused attention ops (ops/attention.cpp,
// ops/multiscale_attention.cpp) behind one table per instruction set:
// "avx512" (16 floats a vector), "avx2" (8), and "plain" (scalar C++, float
// and double, any head width). The ops pick the widest path this CPU runs
// whose width divides the head width; HKT_CPU_PATH=plain|avx2|avx512 or
// set_attention_cpu_path() forces one (tests run every path the CPU has).
//
// The problems are plain pointers and sizes so that the ISA translation
// units (ops/attention_cpu_{plain,avx2,avx512}.cpp, each compiled with its
// own -m flags) include nothing of the engine.
#include <cstdint>
#include <string>
#include <vector>

namespace hkt::attention_cpu {

// One (batch, head) is head_index = b · heads + h. The query, key, value,
// output and gradient tensors are contiguous [B, H, rows, dh], or with
// heads_interleaved [B, rows, H, dh] (FlashAttention's layout: a linear
// layer's output reshaped, so the op needs no permute copies); head_offset
// and row_stride locate a head's rows in either.
struct Problem {
  int64_t batch = 0, heads = 0, length = 0, head_dim = 0;
  bool causal = false;
  bool heads_interleaved = false;
  int64_t head_offset(int64_t head_index, int64_t rows) const {
    if (!heads_interleaved) return head_index * rows * head_dim;
    return ((head_index / heads) * rows * heads + head_index % heads) * head_dim;
  }
  int64_t row_stride() const { return heads_interleaved ? heads * head_dim : head_dim; }
  int64_t tile = 128;                // query and key rows per tile, ≤ 128
  const int64_t* lengths = nullptr;  // [batch], valid keys per example, in [1, length]
  bool zero_padded_rows = false;     // query rows from lengths[b] on: 0, no work spent (PaddedRows::Zero)
  bool parallel = true;              // false: one thread (small problems)
  // Multi-scale only: levels, stride, and per level l its rows and block s^l.
  int64_t levels = 1, stride = 2;
  std::vector<int64_t> level_rows, level_block;
  // The order the kernels' tasks take the (batch, head) pairs in, longest
  // valid length first ([batch · heads], from attention_tiles::cpu_problem).
  // A head's work grows with its valid keys; taken in batch order, a batch
  // whose longest examples come last left one thread finishing them while
  // the others waited. Results do not depend on it: no two tasks add to the
  // same values.
  std::vector<int64_t> head_order;
  // How many consecutive heads of head_order a thread takes at a time: a
  // whole example's (head_order keeps an example's heads together) when
  // they are interleaved in memory and the batch still gives every thread 4
  // examples or more. Interleaved, the heads of one example share every
  // row (at dh = 16 a head per 64-byte line, two heads to each 128-byte
  // pair of lines the L2 prefetcher fetches together), so two threads on
  // heads of one example passed the gradient rows they add to back and
  // forth: at 2 threads the adds into dQ_l, dK_l and dV took 1.2-1.6× the
  // cycles they took on one (docs/PERFORMANCE.md, "Emerald Rapids, sixth
  // session").
  int64_t head_group(int threads) const { return heads_interleaved && batch >= 4 * threads ? heads : 1; }
};

// HKT's hybrid head folded into the kernels (ops/hybrid_attention.h): the
// mix Y = β_h ⊙ out + (1 − β_h) ⊙ c, c the causal depthwise convolution of
// the values over time, c[t] = bias + Σ_r taps[r] ⊙ v[t − k + 1 + r] on the
// channels h · dh + d. The backward's grad_out is then dY, not dO.
template <class T>
struct HybridMix {
  const T* gates = nullptr;  // β [H]; null: no mix
  const T* taps = nullptr;   // the convolution's weight by tap, [k, H · dh]
  const T* bias = nullptr;   // [H · dh] or null
  int64_t taps_count = 0;    // k
  T* mixed = nullptr;        // forward: Y, laid out as out
  // Backward: per (batch, head) [k + 2, dh], written: dW by tap, dbias, dβ
  // per channel (summed over the batch by the caller, in batch order).
  T* partials = nullptr;
};

template <class T>
struct ForwardArgs {
  std::vector<const T*> queries, keys;  // per level [B, H, T_l, dh]; MHA: one level
  const T* values = nullptr;            // [B, H, T, dh]
  const T* level_weights = nullptr;     // λ [H, L]; MHA: null (λ = 1)
  T* out = nullptr;                     // [B, H, T, dh]
  // [B, H, T]: the softmax's row statistic in base 2, log2 Σ_j 2^(S_ij · log2 e)
  // = lse · log2 e. The CPU kernels' softmax runs on exp2 (one reduction step
  // fewer than exp); the CUDA kernels store it in base 2 too (ops/attention.h).
  T* log2_sum_exp = nullptr;
  HybridMix<T> mix;  // HKT's hybrid head, or none (gates null)
};

template <class T>
struct BackwardArgs {
  ForwardArgs<T> forward;  // out and log2_sum_exp as the forward wrote them
  const T* grad_out = nullptr;
  std::vector<T*> grad_queries, grad_keys;  // per level, every element written
  T* grad_values = nullptr;
  bool accumulate_values = false;   // grad_values holds a gradient summed so far: dV is added to it
  T* grad_level_weights = nullptr;  // dL/dλ [H, L]; MHA: null
};

// One instruction set's kernels. width: floats per vector; the kernels take
// head widths that are multiples of it. gemm and exp are the building blocks,
// exported for tests/test_attention_cpu.cpp to check against plain loops
// (and exp, exp2 against std::exp, std::exp2):
//   gemm: C[rows, cols] (= or +=) alpha · A · B, A(m, k) = a[m · a_row + k · a_col], cols % width == 0;
//         without accumulate, bias (cols values, or null) is added to every row as C is stored.
//   pack_transposed: out[d · ld + c] = rows[c · stride + d] for c < count, 0 for count ≤ c < ld;
//   unpack_transposed: its inverse, rows[c · stride + d] = in[d · ld + c] for c < count.
struct Path {
  const char* name;
  int width;
  void (*forward)(const Problem&, const ForwardArgs<float>&);
  void (*backward)(const Problem&, const BackwardArgs<float>&);
  void (*gemm)(int64_t rows, int64_t cols, int64_t depth, const float* a, int64_t a_row, int64_t a_col,
               const float* b, int64_t ldb, float* c, int64_t ldc, float alpha, bool accumulate, const float* bias);
  void (*pack_transposed)(const float* rows, int64_t count, int64_t dh, int64_t stride, int64_t ld, float* out);
  void (*unpack_transposed)(const float* in, int64_t count, int64_t dh, int64_t ld, int64_t stride, float* rows);
  void (*exp)(const float* in, float* out, int64_t count);
  void (*exp2)(const float* in, float* out, int64_t count);  // the softmax's (base 2)
  // Runs `iterations` rounds of register-only FMAs on this thread; returns the FLOPs done (hkt-bench's peak).
  double (*fma_loop)(int64_t iterations);
  // The vector math other ops borrow (ops/elementwise.cpp, float32): GELU
  // x Φ(x) and its backward grad_out · (Φ(x) + x φ(x)), relative error < 3e-6 for
  // x ≥ −5 (the rounding of x²/2 inside exp; tests/test_attention_cpu.cpp).
  void (*gelu)(const float* x, float* out, int64_t count);
  void (*gelu_backward)(const float* x, const float* grad_out, float* grad_in, int64_t count);
};

// Null where this build has no such path (a compiler without the flags).
const Path* plain_path();
const Path* avx2_path();
const Path* avx512_path();

// The plain path in float64 (gradient checks).
void forward_plain(const Problem&, const ForwardArgs<double>&);
void backward_plain(const Problem&, const BackwardArgs<double>&);

// The paths this build has and this CPU runs, widest first; "plain" is always last.
const std::vector<const Path*>& available_paths();
// The first of them.
const Path& widest_path();
// The path for float32 at this head width: the forced one (which must be
// available and divide head_dim, else an error naming both), or the widest that fits.
const Path& select_path(int64_t head_dim);

}  // namespace hkt::attention_cpu

namespace hkt {
// The name of the CPU path the fused attention ops use for float32 at this
// head width ("avx512", "avx2" or "plain"); float64 always runs "plain".
std::string attention_cpu_path(int64_t head_dim = 64);
// Forces a path by name for every later call ("" restores the automatic
// choice); throws if this build or CPU does not have it.
void set_attention_cpu_path(const std::string& name);
// The names of the paths available here, widest first.
std::vector<std::string> attention_cpu_paths();
}  // namespace hkt
