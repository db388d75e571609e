#pragma once
// The vector building blocks of the CPU fused-attention kernels
// (ops/attention_cpu_kernels.h): one traits type per instruction set, a
// vectorised exp, and a register-blocked micro-kernel for every tile product.
//
// Each ISA translation unit (ops/attention_cpu_{plain,avx2,avx512}.cpp) is
// compiled with its own -m flags and includes this header. Everything here is
// either a template over the traits type or has internal linkage, so no
// AVX-512 copy of a function can be chosen by the linker for the AVX2 or
// plain path (the ODR trap of per-file ISA flags).
//
// Traits types: Scalar<T> (W = 1, float or double, the plain path, std::exp),
// Avx2 (W = 8 floats) and Avx512 (W = 16 floats), each providing
//   V, Index                     a vector of W values / of W int32 lanes
//   zero, set1, load, store, add, sub, mul, fmadd, max
//   exp(v)                       e^v, 0 exactly where e^v < FLT_MIN, NaN kept (see exp_mantissa)
//   exp2(v)                      2^v for v ≤ 127 (the softmax's shifted scores, base 2), 0 exactly
//                                below 2^−126, NaN kept; +inf is not handled (see exp2_mantissa)
//   exp2<U, Saturate>(v[U])      the same for U vectors at once; Saturate = false only for inputs
//                                ≤ 127 (AVX2 leaves out its upper clamp)
//   keep_first(v, n, fill)       lanes ≥ n replaced by fill
//   any_nonzero(v)               some lane is not ±0 (NaN counts as nonzero)
//   reduce_add, reduce_max       over the W lanes
//   load_index, expand(base, i)  lane t = base[i[t]], 0 ≤ i[t] < W: one unaligned load and
//                                a one-source permute (nearest upsampling of a coarse row)
//   pair_sum(a, b)               lane t = x[2t] + x[2t + 1] of the 2W values x = (a, b)
//   transpose(v)                 v[0 … W−1] as a W × W block, transposed in registers (packing tiles)
//   div, abs, select_nonnegative(x, a, b)   x ≥ 0 ? a : b per lane (NaN: b)
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace hkt::attention_cpu {
namespace {

// Runs f(0), …, f(U − 1) in one instruction stream. An exponential is a chain
// of about a dozen dependent instructions; written one vector at a time, GCC
// emits each vector's whole chain before the next, and a core with a small
// out-of-order window (a Zen 2) overlaps only a few of them. Interleaved op by
// op, U independent vectors fill the pipes while each waits on its own chain.
template <int U, class F>
[[gnu::always_inline]] inline void for_lanes(F&& f) {
  [&]<int... u>(std::integer_sequence<int, u...>) { (f(u), ...); }(std::make_integer_sequence<int, U>{});
}

// ---- traits ----------------------------------------------------------------

template <class Scalar_>
struct Scalar {
  using T = Scalar_;
  using V = T;
  using Index = int32_t;
  static constexpr int W = 1;
  static constexpr int kMaxVectors = 4;  // columns per micro-kernel block
  static constexpr const char* name = "plain";
  static V zero() { return T(0); }
  static V set1(T x) { return x; }
  static V load(const T* p) { return *p; }
  static void store(T* p, V v) { *p = v; }
  static void stream(T* p, V v) { *p = v; }  // Avx2, Avx512: past the caches where aligned
  static void fence() {}                     // orders streamed stores before later ones
  static V add(V a, V b) { return a + b; }
  static V sub(V a, V b) { return a - b; }
  static V mul(V a, V b) { return a * b; }
  static V fmadd(V a, V b, V c) { return a * b + c; }
  static V max(V a, V b) { return a < b ? b : a; }
  static V exp(V v) { return std::exp(v); }
  static V exp2(V v) { return std::exp2(v); }
  template <int U, bool Saturate = true>
  [[gnu::always_inline]] static void exp2(V (&x)[U]) {
    for_lanes<U>([&](int u) { x[u] = std::exp2(x[u]); });
  }
  static V keep_first(V v, int64_t n, T fill) { return n > 0 ? v : fill; }
  static bool any_nonzero(V v) { return !(v == T(0)); }
  static T reduce_add(V v) { return v; }
  static T reduce_max(V v) { return v; }
  static Index load_index(const int32_t* p) { return *p; }
  static V expand(const T* base, Index index) { return base[index]; }
  static V pair_sum(V a, V b) { return a + b; }
  static void transpose(V*) {}
  static V div(V a, V b) { return a / b; }
  static V abs(V v) { return std::abs(v); }
  static V select_nonnegative(V x, V a, V b) { return x >= T(0) ? a : b; }
};

// e^x = 2^n · p(r): n = round(x·log2 e), r = x − n·ln 2 with ln 2 split in
// two constants (Cody–Waite: r is exact), p a degree-6 polynomial in Horner
// form fitted for relative error on |r| ≤ ln2/2 (1.8e-8 there, under float
// rounding). Returns p and sets n; the paths build 2^n as their ISA allows.
// Relative error ≤ 2.5 ulp where e^x ≥ FLT_MIN (tests/test_attention_cpu.cpp).
template <class S>
typename S::V exp_mantissa(typename S::V x, typename S::V (*round)(typename S::V), typename S::V& n) {
  using V = typename S::V;
  n = round(S::mul(x, S::set1(1.44269504088896341f)));
  V r = S::fmadd(n, S::set1(-0.693359375f), x);
  r = S::fmadd(n, S::set1(2.12194440e-4f), r);
  V p = S::set1(1.382942427881062e-3f);
  p = S::fmadd(p, r, S::set1(8.3747748285532e-3f));
  p = S::fmadd(p, r, S::set1(4.16683591902256e-2f));
  p = S::fmadd(p, r, S::set1(1.666642129421234e-1f));
  p = S::fmadd(p, r, S::set1(4.9999991059303284e-1f));
  p = S::fmadd(p, r, S::set1(1.0f));
  return S::fmadd(p, r, S::set1(1.0f));
}

// p = 2^f for |f| ≤ 1/2 (f = x − round(x), exact), U vectors at once
// (for_lanes): a degree-6 polynomial with constant term 1 (so 2^0 is exactly
// 1), fitted for relative error (2.0e-9; 1.0e-7 after float rounding). The
// softmax runs in base 2 — log2 e folded into the score scale — because then
// no Cody–Waite reduction is needed: four instructions fewer per vector than
// exp, which at dh = 16 costs about as much as a third of the tile products.
template <class S, int U>
[[gnu::always_inline]] inline void exp2_mantissa(const typename S::V (&f)[U], typename S::V (&p)[U]) {
  for_lanes<U>([&](int u) { p[u] = S::set1(1.535334886e-4f); });
#pragma GCC unroll 8
  for (float c : {1.339887036e-3f, 9.618436918e-3f, 5.550332367e-2f, 2.402264774e-1f, 6.931471825e-1f, 1.0f})
    for_lanes<U>([&](int u) { p[u] = S::fmadd(p[u], f[u], S::set1(c)); });
}

#if defined(__AVX2__) && defined(__FMA__)
struct Avx2 {
  using T = float;
  using V = __m256;
  using Index = __m256i;
  static constexpr int W = 8;
  static constexpr int kMaxVectors = 2;  // 6 rows × 2 vectors: 12 of the 16 ymm registers accumulate
  static constexpr const char* name = "avx2";
  static V zero() { return _mm256_setzero_ps(); }
  static V set1(T x) { return _mm256_set1_ps(x); }
  static V load(const T* p) { return _mm256_loadu_ps(p); }
  static void store(T* p, V v) { _mm256_storeu_ps(p, v); }
  static void stream(T* p, V v) {
    if ((reinterpret_cast<uintptr_t>(p) & 31) == 0)
      _mm256_stream_ps(p, v);
    else
      _mm256_storeu_ps(p, v);
  }
  static void fence() { _mm_sfence(); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static V min(V a, V b) { return _mm256_min_ps(a, b); }
  static V round(V v) { return _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // Inputs clamped to [−88, 88]: there n ≤ 127 stays a normal exponent, and
  // n = −127 builds the exponent field 0, so scores far below the row maximum
  // (masked keys are −inf) give exactly 0. NaN stays NaN: the clamps keep
  // their second operand when either is NaN.
  static V exp(V x) {
    x = min(set1(88.0f), max(set1(-88.0f), x));
    V n;
    const V p = exp_mantissa<Avx2>(x, &Avx2::round, n);
    const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return mul(p, _mm256_castsi256_ps(bits));
  }
  // As exp: n = −127 builds the exponent field 0 (exactly 0), NaN passes the clamps.
  // U vectors op by op (for_lanes); exp2(V) is the one-vector case. Always
  // inlined: once the forward and the backward both called it, GCC made it a
  // function of its own at one build, its arrays passed through the stack.
  // Saturate = false drops the upper clamp, for inputs known to be ≤ 127 (the
  // softmax's shifted scores, ≤ 0 up to rounding): one instruction fewer per
  // vector, 1 % of the attention ops on a Zen 2, the same results there.
  template <int U, bool Saturate = true>
  [[gnu::always_inline]] static void exp2(V (&x)[U]) {
    V n[U], f[U], p[U];
    for_lanes<U>([&](int u) {
      x[u] = max(set1(-127.0f), x[u]);
      if (Saturate) x[u] = min(set1(127.0f), x[u]);
      n[u] = round(x[u]);
    });
    for_lanes<U>([&](int u) { f[u] = sub(x[u], n[u]); });
    exp2_mantissa<Avx2, U>(f, p);
    for_lanes<U>([&](int u) {
      const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n[u]), _mm256_set1_epi32(127)), 23);
      x[u] = mul(p[u], _mm256_castsi256_ps(bits));
    });
  }
  static V exp2(V x) {
    V one[1] = {x};
    exp2(one);
    return one[0];
  }
  static V keep_first(V v, int64_t n, T fill) {
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i keep = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(n < W ? n : W)), lanes);
    return _mm256_blendv_ps(_mm256_set1_ps(fill), v, _mm256_castsi256_ps(keep));
  }
  static bool any_nonzero(V v) { return _mm256_movemask_ps(_mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_NEQ_UQ)) != 0; }
  static T reduce_add(V v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static T reduce_max(V v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static Index load_index(const int32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static V expand(const T* base, Index index) { return _mm256_permutevar8x32_ps(_mm256_loadu_ps(base), index); }
  static V pair_sum(V a, V b) {  // hadd interleaves 128-bit halves: (a01 a23 b01 b23 | a45 a67 b45 b67)
    const __m256d sums = _mm256_castps_pd(_mm256_hadd_ps(a, b));
    return _mm256_castpd_ps(_mm256_permute4x64_pd(sums, 0xD8));
  }
  // Pairs of rows interleaved, then pairs of pairs, then the 128-bit halves swapped.
  static void transpose(V* v) {
    V t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
      t[i] = _mm256_unpacklo_ps(v[i], v[i + 1]);  // row i, i + 1 at columns 0 1 | 4 5
      t[i + 1] = _mm256_unpackhi_ps(v[i], v[i + 1]);  // columns 2 3 | 6 7
    }
    for (int i = 0; i < 8; i += 4) {
      u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);  // rows i … i + 3 at column 0 | 4
      u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);  // 1 | 5
      u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);  // 2 | 6
      u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);  // 3 | 7
    }
    for (int j = 0; j < 4; ++j) {
      v[j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x20);
      v[j + 4] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x31);
    }
  }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  static V abs(V v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }
  static V select_nonnegative(V x, V a, V b) {
    return _mm256_blendv_ps(b, a, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GE_OQ));
  }
};
#endif

#if defined(__AVX512F__)
struct Avx512 {
  using T = float;
  using V = __m512;
  using Index = __m512i;
  static constexpr int W = 16;
  static constexpr int kMaxVectors = 4;  // 6 rows × 4 vectors: 24 of the 32 zmm registers accumulate
  static constexpr const char* name = "avx512";
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(T x) { return _mm512_set1_ps(x); }
  static V load(const T* p) { return _mm512_loadu_ps(p); }
  static void store(T* p, V v) { _mm512_storeu_ps(p, v); }
  static void stream(T* p, V v) {
    if ((reinterpret_cast<uintptr_t>(p) & 63) == 0)
      _mm512_stream_ps(p, v);
    else
      _mm512_storeu_ps(p, v);
  }
  static void fence() { _mm_sfence(); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static V min(V a, V b) { return _mm512_min_ps(a, b); }
  static V round(V v) { return _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // scalef builds p · 2^n in one instruction (overflow gives inf). Results
  // below FLT_MIN (x < ln FLT_MIN, masked keys at −inf) are zeroed by the
  // mask, which keeps NaN (unordered compares true) so that NaN stays NaN;
  // the clamps only keep r finite for ±inf.
  static V exp(V x) {
    const __mmask16 normal = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.33654f), _CMP_NLT_UQ);
    x = min(set1(100.0f), max(set1(-88.0f), x));
    V n;
    const V p = exp_mantissa<Avx512>(x, &Avx512::round, n);
    return _mm512_maskz_scalef_ps(normal, p, n);
  }
  // No clamps: scalef saturates to inf above 2^128, and the mask zeroes
  // everything below 2^−126 (−inf included) while keeping NaN.
  // U vectors op by op (for_lanes); exp2(V) is the one-vector case.
  template <int U, bool Saturate = true>
  [[gnu::always_inline]] static void exp2(V (&x)[U]) {
    __mmask16 normal[U];
    V n[U], f[U], p[U];
    for_lanes<U>([&](int u) {
      normal[u] = _mm512_cmp_ps_mask(x[u], _mm512_set1_ps(-126.0f), _CMP_NLT_UQ);
      n[u] = round(x[u]);
    });
    for_lanes<U>([&](int u) { f[u] = sub(x[u], n[u]); });
    exp2_mantissa<Avx512, U>(f, p);
    for_lanes<U>([&](int u) { x[u] = _mm512_maskz_scalef_ps(normal[u], p[u], n[u]); });
  }
  static V exp2(V x) {
    V one[1] = {x};
    exp2(one);
    return one[0];
  }
  static V keep_first(V v, int64_t n, T fill) {
    const __mmask16 keep = n >= W ? __mmask16(0xFFFF) : __mmask16((1u << (n > 0 ? n : 0)) - 1u);
    return _mm512_mask_blend_ps(keep, _mm512_set1_ps(fill), v);
  }
  static bool any_nonzero(V v) { return _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_NEQ_UQ) != 0; }
  static T reduce_add(V v) { return _mm512_reduce_add_ps(v); }
  static T reduce_max(V v) { return _mm512_reduce_max_ps(v); }
  static Index load_index(const int32_t* p) { return _mm512_loadu_si512(p); }
  static V expand(const T* base, Index index) { return _mm512_permutexvar_ps(index, _mm512_loadu_ps(base)); }
  static V pair_sum(V a, V b) {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    return _mm512_add_ps(_mm512_permutex2var_ps(a, even, b), _mm512_permutex2var_ps(a, odd, b));
  }
  // Pairs of rows interleaved (per 128-bit lane), then pairs of pairs: lane l
  // of v[4i + j] holds rows 4i … 4i + 3 at column 4l + j; two rounds of
  // 128-bit lane shuffles gather each column's four lanes.
  static void transpose(V* v) {
    V t[16];
    for (int i = 0; i < 16; i += 2) {
      t[i] = _mm512_unpacklo_ps(v[i], v[i + 1]);
      t[i + 1] = _mm512_unpackhi_ps(v[i], v[i + 1]);
    }
    auto pd = [](V x) { return _mm512_castps_pd(x); };
    for (int i = 0; i < 16; i += 4) {
      v[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(pd(t[i]), pd(t[i + 2])));
      v[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(pd(t[i]), pd(t[i + 2])));
      v[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(pd(t[i + 1]), pd(t[i + 3])));
      v[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(pd(t[i + 1]), pd(t[i + 3])));
    }
    for (int j = 0; j < 4; ++j) {
      const V low_even = _mm512_shuffle_f32x4(v[j], v[4 + j], 0x88), low_odd = _mm512_shuffle_f32x4(v[j], v[4 + j], 0xDD);
      const V high_even = _mm512_shuffle_f32x4(v[8 + j], v[12 + j], 0x88),
              high_odd = _mm512_shuffle_f32x4(v[8 + j], v[12 + j], 0xDD);
      t[j] = _mm512_shuffle_f32x4(low_even, high_even, 0x88);       // column j
      t[j + 8] = _mm512_shuffle_f32x4(low_even, high_even, 0xDD);   // column j + 8
      t[j + 4] = _mm512_shuffle_f32x4(low_odd, high_odd, 0x88);     // column j + 4
      t[j + 12] = _mm512_shuffle_f32x4(low_odd, high_odd, 0xDD);    // column j + 12
    }
    for (int j = 0; j < 16; ++j) v[j] = t[j];
  }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  static V abs(V v) { return _mm512_abs_ps(v); }
  static V select_nonnegative(V x, V a, V b) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ), b, a);
  }
};
#endif

// ---- micro-kernel ------------------------------------------------------------

// The strided view of a GEMM's left operand: A(m, k) = data[m · row + k · col].
// Every tile product broadcasts A one element at a time, so A may be read
// transposed (Pᵀ, dSᵀ) at no cost; only B needs contiguous rows.
template <class T>
struct Strided {
  const T* data;
  int64_t row, col;
  T at(int64_t m, int64_t k) const { return data[m * row + k * col]; }
};

// What a GEMM adds to row m of its product as it stores it:
// rows[m · step] + col. step 0 adds one row to every row (linear's bias);
// step 1 reads a row pointer per row. rows == null: nothing.
template <class T>
struct RowAddend {
  const T* const* rows = nullptr;
  int64_t step = 0, col = 0;
  RowAddend shifted(int64_t rows_down, int64_t cols_right) const {
    return rows ? RowAddend{rows + rows_down * step, step, col + cols_right} : RowAddend{};
  }
  // Row m's addend for the vector of columns v of the current block.
  template <class S>
  typename S::V vector(int m, int v) const {
    return S::load(rows[m * step] + col + v * S::W);
  }
};

// The fused scores' addend: a row per row, coarser than the product — each
// level's GEMM adds the next coarser level's row, nearest upsampled: output
// column c = col + v·W + t reads rows[m][window_base[(col + v·W) / W] +
// window_index[c]], one expand per vector (load_index, expand in the traits
// above). paired: rows m and m + 1 of every even m read the same row
// (stride-2 levels from an even first row), so a micro-kernel expands once
// per pair; every row block starts at an even row. rows == null: C = alpha·AB.
// A store of its own (store_block), never accumulating: column by column, so
// that a vector of columns' window base and index are loaded once for the
// block's rows. Stored row by row through the generic store, GCC reloaded
// them, and the addend's pointers, for every row: the HKT attention ran
// about 2 % slower on a Zen 2 (docs/PERFORMANCE.md).
template <class T>
struct UpsampledAddend {
  const T* const* rows = nullptr;
  int64_t col = 0;
  const int32_t* window_base = nullptr;   // [columns / W]
  const int32_t* window_index = nullptr;  // [columns]
  bool paired = false;
  UpsampledAddend shifted(int64_t rows_down, int64_t cols_right) const {
    return rows ? UpsampledAddend{rows + rows_down, col + cols_right, window_base, window_index, paired}
                : UpsampledAddend{};
  }
  template <class S, int MR, int NV>
  void store_block(typename S::V (&acc)[MR][NV], T* c, int64_t ldc, T alpha) const {
    using V = typename S::V;
    const V scale = S::set1(alpha);
    if (!rows) {
#pragma GCC unroll 8
      for (int m = 0; m < MR; ++m)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) S::store(c + m * ldc + v * S::W, S::mul(scale, acc[m][v]));
      return;
    }
    // Rows per expand: 2 when paired, as a compile-time step.
    auto store_columns = [&]<int Step>(std::integral_constant<int, Step>) {
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        const int64_t column = col + v * S::W;
        const int32_t base = window_base[column / S::W];
        const auto index = S::load_index(window_index + column);
#pragma GCC unroll 8
        for (int m = 0; m < MR; m += Step) {
          const V added = S::expand(rows[m] + base, index);
          S::store(c + m * ldc + v * S::W, S::fmadd(scale, acc[m][v], added));
          const int pair = m + 1 < MR ? m + 1 : m;  // the row sharing the addend, paired
          if (Step == 2 && pair != m) S::store(c + pair * ldc + v * S::W, S::fmadd(scale, acc[pair][v], added));
        }
      }
    };
    if (paired) store_columns(std::integral_constant<int, 2>{});
    else store_columns(std::integral_constant<int, 1>{});
  }
};

// C[m, 0 : NV·W] (= or +=) alpha · Σ_k A(m, k) · B[k, 0 : NV·W] for m < MR:
// MR × NV accumulators stay in registers through the whole k loop. With an
// addend and no accumulate, C = alpha·AB + addend: it joins in the store, so
// C is written once and never read. An addend with a store_block member
// stores the block itself (the fused scores' upsampled rows, the backward's
// dS computed from dP in registers); accumulate does not apply to it.
//
// Always inlined: GCC 12 otherwise calls one out-of-line copy from every row
// loop, and that copy, with the same inner loop, ran the feed-forward's GEMMs
// (N or K = 128) 16 % slower and the attention backward 4 % slower on a Zen 4
// (docs/PERFORMANCE.md, "2026-12-04").
template <class S, int MR, int NV, class Addend>
[[gnu::always_inline]] inline void micro_kernel(int64_t depth, Strided<typename S::T> a, const typename S::T* b,
                                                int64_t ldb, typename S::T* c, int64_t ldc,
                                                const volatile typename S::T& alpha_slot, bool accumulate,
                                                const Addend& addend) {
  using V = typename S::V;
  V acc[MR][NV];
#pragma GCC unroll 8
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[m][v] = S::zero();
  for (int64_t k = 0; k < depth; ++k) {
    V row[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) row[v] = S::load(b + k * ldb + v * S::W);
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) {
      const V am = S::set1(a.at(m, k));
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[m][v] = S::fmadd(am, row[v], acc[m][v]);
    }
  }
  const typename S::T alpha = alpha_slot;
  if constexpr (requires { addend.template store_block<S, MR, NV>(acc, c, ldc, alpha); }) {
    addend.template store_block<S, MR, NV>(acc, c, ldc, alpha);  // its own epilogue; such GEMMs never accumulate
  } else {
    const V scale = S::set1(alpha);
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        typename S::T* out = c + m * ldc + v * S::W;
        if (accumulate) {
          S::store(out, S::fmadd(scale, acc[m][v], S::load(out)));
        } else if (addend.rows) {
          S::store(out, S::fmadd(scale, acc[m][v], addend.template vector<S>(m, v)));
        } else {
          S::store(out, S::mul(scale, acc[m][v]));
        }
      }
  }
}

// Rows per micro-kernel for NV vectors of columns: enough independent
// accumulators to hide the FMA latency, few enough to leave registers for B.
template <class S>
constexpr int rows_for(int vectors) {
  if (S::W == 1) return 4;
  return vectors <= 2 ? (S::W == 8 && vectors == 2 ? 6 : 8) : 6;
}

// The remainder rows of a column block: MR − 1 down to 1.
template <class S, int MR, int NV, class Addend>
void micro_kernel_rows(int64_t rows, int64_t depth, Strided<typename S::T> a, const typename S::T* b, int64_t ldb,
                       typename S::T* c, int64_t ldc, const volatile typename S::T& alpha_slot, bool accumulate,
                       const Addend& addend) {
  if constexpr (MR >= 1) {
    if (rows == MR) return micro_kernel<S, MR, NV>(depth, a, b, ldb, c, ldc, alpha_slot, accumulate, addend);
    micro_kernel_rows<S, MR - 1, NV>(rows, depth, a, b, ldb, c, ldc, alpha_slot, accumulate, addend);
  }
}

template <class S, int NV, class Addend>
void gemm_columns(int64_t rows, int64_t depth, Strided<typename S::T> a, const typename S::T* b, int64_t ldb,
                  typename S::T* c, int64_t ldc, typename S::T alpha, bool accumulate, const Addend& addend) {
  constexpr int MR = rows_for<S>(NV);
  // alpha waits in memory while the k loops run and is read once per block,
  // after its loop. Passed by value, GCC kept it and its broadcast in two
  // vector registers through the whole row loop, which left AVX2's 6 × 2
  // kernel (15 of 16 ymm registers) short: one row of B was stored to the
  // stack and reloaded at every FMA (docs/PERFORMANCE.md, "Zen 2").
  const volatile typename S::T alpha_slot = alpha;
  int64_t m = 0;
  for (; m + MR <= rows; m += MR)
    micro_kernel<S, MR, NV>(depth, {a.data + m * a.row, a.row, a.col}, b, ldb, c + m * ldc, ldc, alpha_slot,
                            accumulate, addend.shifted(m, 0));
  if (m < rows)
    micro_kernel_rows<S, MR - 1, NV>(rows - m, depth, {a.data + m * a.row, a.row, a.col}, b, ldb, c + m * ldc, ldc,
                                     alpha_slot, accumulate, addend.shifted(m, 0));
}

// C[rows, cols] (= or +=) alpha · A[rows, depth] · B[depth, cols], cols a
// multiple of W, B and C row-major with leading dimensions ldb and ldc.
// depth 0 writes (or adds) zeros. Without accumulate, addend's rows are
// added as C is stored.
template <class S, class Addend = RowAddend<typename S::T>>
void gemm(int64_t rows, int64_t cols, int64_t depth, Strided<typename S::T> a, const typename S::T* b, int64_t ldb,
          typename S::T* c, int64_t ldc, typename S::T alpha, bool accumulate, const Addend& addend = {}) {
  constexpr int NB = S::kMaxVectors;
  const int64_t vectors = cols / S::W;
  for (int64_t v0 = 0; v0 < vectors; v0 += NB) {
    const int64_t nv = vectors - v0 < NB ? vectors - v0 : NB;
    const int64_t col = v0 * S::W;
    switch (nv) {
      case 1:
        gemm_columns<S, 1>(rows, depth, a, b + col, ldb, c + col, ldc, alpha, accumulate, addend.shifted(0, col));
        break;
      case 2:
        if constexpr (NB >= 2) gemm_columns<S, 2>(rows, depth, a, b + col, ldb, c + col, ldc, alpha, accumulate,
                                                  addend.shifted(0, col));
        break;
      case 3:
        if constexpr (NB >= 3) gemm_columns<S, 3>(rows, depth, a, b + col, ldb, c + col, ldc, alpha, accumulate,
                                                  addend.shifted(0, col));
        break;
      default:
        if constexpr (NB >= 4) gemm_columns<S, 4>(rows, depth, a, b + col, ldb, c + col, ldc, alpha, accumulate,
                                                  addend.shifted(0, col));
        break;
    }
  }
}

// C += alpha · A · B for a product with few rows (the backward's dVᵀ and
// dK₀ᵀ, dh rows): with AVX-512 and rows a multiple of 8, blocks of 8 rows ×
// 2 vectors, which ran 1.09× faster than gemm's 6 × 4 (rows 6, 6, 4) and
// 1.23× faster than the untransposed product, one vector wide, on a
// Sapphire Rapids core (docs/PERFORMANCE.md, "2026-12-05"): the 4-row
// remainder block leaves FMA slots empty. Otherwise gemm.
template <class S>
void gemm_few_rows(int64_t rows, int64_t cols, int64_t depth, Strided<typename S::T> a, const typename S::T* b,
                   int64_t ldb, typename S::T* c, int64_t ldc, typename S::T alpha) {
  constexpr int NV = 2;
  if constexpr (S::W == 16 && rows_for<S>(NV) == 8) {
    const int64_t vectors = cols / S::W;
    if (rows % 8 == 0 && vectors % NV == 0) {
      for (int64_t col = 0; col < cols; col += NV * S::W)
        gemm_columns<S, NV>(rows, depth, a, b + col, ldb, c + col, ldc, alpha, true, RowAddend<typename S::T>{});
      return;
    }
  }
  gemm<S>(rows, cols, depth, a, b, ldb, c, ldc, alpha, true);
}

}  // namespace
}  // namespace hkt::attention_cpu
