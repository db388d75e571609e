#pragma once
// The fused attention kernels on the CPU, written once over a traits type S
// (ops/attention_simd.h) and instantiated by each ISA translation unit.
// MHA is the multi-scale op with one level and λ = 1.
//
// Forward (FlashAttention-2's plan): one task per (batch, head, query tile),
// dealt out a whole head at a time when there are 8 heads a thread or more.
// A thread packs every key tile of a head once (transposed, per level, with
// its key map) and keeps them while it works on that head. For each key tile
// the levels' score GEMMs run coarsest first, each adding the next coarser
// level's result as it stores, nearest upsampled (one load and permute per
// vector; the maps nest): G_l = λ_l q_l k_lᵀ/√dh + up(G_{l+1}), causally
// masked in coarse space (column b > row a is 0), and S = G_0. No pass over a
// tile is spent on the levels' sum. O += P·V is another GEMM.
//
// The softmax runs in base 2 (scores scaled by log2 e, exp2, lse kept as
// log2_sum_exp), which is the same P for a cheaper exponential.
//
// Backward: S recomputed the same way, P = exp(S − lse) in place; dP = dO·Vᵀ,
// and in that product's store dS = P ⊙ (dP − D) per tile (SoftmaxGradient);
// then dVᵀ += dOᵀ·P, dK₀ᵀ += λ₀ Q₀ᵀ·dS/√dh
// (transposed, a key tile's worth, written to dV and dK₀ once per key tile),
// dQ₀ += λ₀ dS·K₀/√dh, and for l ≥ 1 the tile's dS pooled onto coarse rows
// (vector adds) and columns (vector pair sums for power-of-two blocks), P_l,
// with the coarse gradients as GEMMs. dq_l gathers P_l k_l/√dh without λ_l
// over all of a head's tiles; then dλ_l = Σ q_l ⊙ dq_l, and dq_l is scaled
// by λ_l, once per head. Tasks are (batch, head, key chunk): a chunk owns its key
// tiles' dK₀ and dV rows; the gradients that several chunks touch (every
// dQ_l, dK_l for l ≥ 1) go to a buffer per chunk, summed in chunk order
// afterwards. The chunk count depends on the problem only, never on the
// thread count, so results are bitwise the same for any number of threads.
// With one chunk (8 (batch, head) pairs or more) the gradients go straight to
// their tensors, and the first key tile writes dQ_l where it is added to
// later (dK_l too where key tiles own disjoint coarse columns): only the
// rows that no tile writes are zeroed. A thread takes a whole example's
// heads at a time when they are interleaved in memory (Problem::head_group).
// A head's query tiles stop at its last row whose dO is not zero: a row with
// dO = 0 has dP = 0 and D = 0, so dS = P ⊙ (dP − D) = 0 and it adds exactly
// nothing to any gradient (for finite q, k, v). In the models these are the
// padded positions, which nothing downstream of the attention reads (the
// pooling multiplies them by 0): with lengths uniform in [T/2, T] the
// backward skips about a fifth of its work, as FlashAttention's varlen
// kernels skip padding.
#include <omp.h>

#include <algorithm>
#include <type_traits>
#include <utility>

#include "engine/cpu_allocator.h"
#include "ops/attention_cpu.h"
#include "ops/attention_simd.h"

namespace hkt::attention_cpu {
namespace {

// An array owned by one thread or call, zero-initialised unless asked not to
// be, from the engine's caching allocator (large scratch from malloc would
// come back as fresh zeroed pages every call). No std::vector here: its
// out-of-line members would be emitted under this file's -m flags.
template <class T>
struct Buffer {
  T* data = nullptr;
  explicit Buffer(int64_t count, bool zeroed = true) {
    if (count <= 0) return;
    data = static_cast<T*>(cpu_allocator::allocate(static_cast<size_t>(count) * sizeof(T)));
    if (zeroed) std::memset(static_cast<void*>(data), 0, static_cast<size_t>(count) * sizeof(T));
  }
  ~Buffer() { cpu_allocator::deallocate(data); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
};

// The softmax runs in base 2 (exp2_mantissa): scores scaled by log2 e.
template <class T>
constexpr T kLog2e = T(1.44269504088896340735992468100189214);

inline int64_t round_up(int64_t x, int64_t multiple) { return (x + multiple - 1) / multiple * multiple; }
inline int64_t key_limit(int64_t i, int64_t valid, bool causal) { return causal ? std::min(valid, i + 1) : valid; }
// How many of the key tile [j0, j1)'s keys query row i sees (≤ 0: none).
inline int64_t keys_in_tile(int64_t i, int64_t valid, bool causal, int64_t j0, int64_t j1) {
  return std::min(key_limit(i, valid, causal), j1) - j0;
}

// Where one level's coarse tile sits for the current fine tile: its coarse
// key rows (fixed by the key tile) and coarse query rows (by the query tile).
struct KeyGeometry {
  int64_t col0 = 0, cols = 0;  // coarse key rows [col0, col0 + cols)
  int64_t padded = 0;          // cols rounded up to the vector width
};
struct QueryGeometry {
  int64_t row0 = 0, rows = 0;  // coarse query rows [row0, row0 + rows); rows ≤ 0: none complete yet
};

// One key tile of one (batch, head), ready for the score GEMMs: per level the
// coarse keys packed transposed [dh, np], their extent, and for l ≥ 1 the
// map from level l − 1's columns to level l's (load_keys). In the forward
// each thread keeps every tile of its current head (KeyTileStore); the
// backward loads one at a time.
template <class T>
struct KeyTile {
  T* keys_t = nullptr;              // [levels][dh × np]
  KeyGeometry* geometry = nullptr;  // [levels]
  int32_t* window_base = nullptr;   // [levels][np / W]
  int32_t* window_index = nullptr;  // [levels][np]
};

template <class T>
struct KeyTileStore {
  const int64_t levels, dh, np, width;
  Buffer<T> keys_t;
  Buffer<KeyGeometry> geometry;
  Buffer<int32_t> window_base, window_index;
  KeyTileStore(int64_t count, int64_t levels_, int64_t dh_, int64_t np_, int64_t width_)
      : levels(levels_),
        dh(dh_),
        np(np_),
        width(width_),
        keys_t(count * levels * dh * np, /*zeroed=*/false),  // load_keys writes every column it reads
        geometry(count * levels),
        window_base(count * levels * (np / width)),
        window_index(count * levels * np) {}
  KeyTile<T> at(int64_t n) const {
    return {keys_t.data + n * levels * dh * np, geometry.data + n * levels, window_base.data + n * levels * (np / width),
            window_index.data + n * levels * np};
  }
};

// The per-thread state: score tiles, coarse tiles, the current key tile, and
// the current (batch, head).
template <class S>
struct Workspace {
  using T = typename S::T;
  const Problem& p;
  const int64_t dh, rs, np, ld;  // head width; the tensors' row stride (Problem::row_stride); tile columns
                                 // padded to W; coarse row stride (np + W: expand reads W past a column < np)
  Buffer<T> values_t, grad_values_t, grad_keys_t, coarse, scores, grads, acc, pooled, level_sums, level_grad, delta;
  // The forward's online-softmax state per query row of the task (rounded up
  // to W rows: the rescale runs over rows as vectors): the running maximum,
  // the next tile's maximum, the rescale factor, and the running sum as W
  // lanes per row (reduced once per task).
  Buffer<T> row_max, next_max, correction, row_sums;
  KeyTileStore<T> own_keys;  // the backward's current key tile
  KeyTile<T> keys;
  Buffer<QueryGeometry> query_rows;
  Buffer<const T*> q, k;
  Buffer<T> weight;
  // What depends on the query tile alone, the same for every head and key
  // tile, so built once per tile index and call (query_tables): per level
  // l < L − 1 and row of it, the row of level l + 1's coarse slot its score
  // GEMM adds (a row of zeros before level l + 1's first complete block,
  // causal); pool_level's [level][coarse row] run of finer rows (first,
  // count).
  Buffer<const T*> level_addends;
  Buffer<int32_t> pool_runs;
  Buffer<int32_t> tables_rows;  // [query tile]: the rows its tables were built for (0: none yet)
  Buffer<T> zero_row;
  const T* v = nullptr;
  int64_t valid = 0;

  explicit Workspace(const Problem& problem, bool backward)
      : p(problem),
        dh(problem.head_dim),
        rs(problem.row_stride()),
        np(round_up(problem.tile, S::W)),
        ld(np + S::W),
        values_t(backward ? problem.head_dim * np : 0),
        grad_values_t(backward ? problem.head_dim * np : 0),  // the key tile's dVᵀ and dK_lᵀ
        grad_keys_t(backward ? problem.levels * problem.head_dim * np : 0),  // [level][dh, np]
        coarse(problem.levels * (problem.tile + 1) * ld),
        scores(problem.tile * np),
        grads(backward ? problem.tile * np : 0),
        acc(backward ? 0 : problem.tile * problem.head_dim),
        pooled(backward ? np : 0),  // pool_level's row sums when columns do not pair
        level_sums(backward ? 2 * (problem.tile + 1) * np : 0),  // U_l and U_{l−1} (pool_level)
        level_grad(backward ? (problem.tile + 1) * np : 0),
        delta(backward ? problem.length : 0),
        row_max(backward ? 0 : round_up(problem.tile, S::W)),
        next_max(backward ? 0 : round_up(problem.tile, S::W)),
        correction(backward ? 0 : round_up(problem.tile, S::W)),
        row_sums(backward ? 0 : problem.tile * S::W),
        own_keys(backward ? 1 : 0, problem.levels, problem.head_dim, np, S::W),
        keys(own_keys.at(0)),
        query_rows(problem.levels),
        q(problem.levels),
        k(problem.levels),
        weight(problem.levels),
        level_addends(query_tiles(problem) * (problem.tile + 1) * problem.levels),
        pool_runs(backward ? query_tiles(problem) * problem.levels * (problem.tile + 1) * 2 : 0),
        tables_rows(query_tiles(problem)),
        zero_row(np + S::W) {}

  static int64_t query_tiles(const Problem& problem) { return (problem.length + problem.tile - 1) / problem.tile; }

  const T* level_keys(int64_t l) const { return keys.keys_t + l * dh * np; }
  T* level_coarse(int64_t l) { return coarse.data + l * (p.tile + 1) * ld; }
  // SPEC section 3's query map q_l(i) (−1: no complete block yet, causal),
  // tabulated once per call (QueryMaps): no division in the inner loops.
  const int32_t* query_maps = nullptr;  // [levels][length]
  int64_t query_index(int64_t l, int64_t i) const { return query_maps[l * p.length + i]; }

  void bind_head(const ForwardArgs<T>& args, int64_t head_index) {
    for (int64_t l = 0; l < p.levels; ++l) {
      q.data[l] = args.queries[l] + p.head_offset(head_index, p.level_rows[l]);
      k.data[l] = args.keys[l] + p.head_offset(head_index, p.level_rows[l]);
      weight.data[l] = args.level_weights ? args.level_weights[(head_index % p.heads) * p.levels + l] : T(1);
    }
    v = args.values + p.head_offset(head_index, p.length);
    valid = p.lengths[head_index / p.heads];
  }
};

// q_l(i) for every level and fine row.
struct QueryMaps {
  Buffer<int32_t> maps;
  explicit QueryMaps(const Problem& p) : maps(p.levels * p.length) {
    for (int64_t l = 0; l < p.levels; ++l) {
      const int64_t block = p.level_block[l];
      for (int64_t i = 0; i < p.length; ++i)
        maps.data[l * p.length + i] = static_cast<int32_t>(p.causal ? (i + 1) / block - 1 : i / block);
    }
  }
};

// dst[j · dst_stride + i] = (or +=) src[i · src_stride + j] for i < rows,
// j < cols, both multiples of W: W × W blocks transposed in registers
// (S::transpose).
template <class S, bool Accumulate = false>
void transpose_blocks(const typename S::T* src, int64_t src_stride, int64_t rows, int64_t cols, typename S::T* dst,
                      int64_t dst_stride) {
  constexpr int W = S::W;
  for (int64_t i0 = 0; i0 < rows; i0 += W)
    for (int64_t j0 = 0; j0 < cols; j0 += W) {
      typename S::V block[W];
      for (int t = 0; t < W; ++t) block[t] = S::load(src + (i0 + t) * src_stride + j0);
      S::transpose(block);
      for (int t = 0; t < W; ++t) {
        typename S::T* out = dst + (j0 + t) * dst_stride + i0;
        S::store(out, Accumulate ? S::add(S::load(out), block[t]) : block[t]);
      }
    }
}

// out[d · ld + c] = rows[c · stride + d] for c < count, 0 for count ≤ c < end
// (end ≤ ld). Whole W × W blocks in registers: the scalar loop, a load from a
// new cache line per value, was 70 % of load_keys, itself 5 % of the HKT
// attention op on a Sapphire Rapids core, and gathers still 1.9 % of the HKT step.
template <class S>
void pack_transposed_to(const typename S::T* rows, int64_t count, int64_t dh, int64_t stride, int64_t ld,
                        int64_t end, typename S::T* out) {
  using T = typename S::T;
  const int64_t whole_c = count / S::W * S::W, whole_d = dh / S::W * S::W;
  transpose_blocks<S>(rows, stride, whole_c, whole_d, out, ld);
  for (int64_t d = 0; d < dh; ++d) {  // what the blocks left: the last columns, the last rows of d
    T* line = out + d * ld;
    for (int64_t c = d < whole_d ? whole_c : 0; c < count; ++c) line[c] = rows[c * stride + d];
    std::fill(line + count, line + std::max(count, end), T(0));
  }
}

// The same with zeros up to ld (Path::pack_transposed).
template <class S>
void pack_transposed(const typename S::T* rows, int64_t count, int64_t dh, int64_t stride, int64_t ld,
                     typename S::T* out) {
  pack_transposed_to<S>(rows, count, dh, stride, ld, ld, out);
}

// pack_transposed's inverse: rows[c · stride + d] = (or +=) in[d · ld + c]
// for c < count.
template <class S, bool Accumulate = false>
void unpack_transposed(const typename S::T* in, int64_t count, int64_t dh, int64_t ld, int64_t stride,
                       typename S::T* rows) {
  const int64_t whole_c = count / S::W * S::W, whole_d = dh / S::W * S::W;
  transpose_blocks<S, Accumulate>(in, ld, whole_d, whole_c, rows, stride);
  for (int64_t c = 0; c < count; ++c)
    for (int64_t d = c < whole_c ? whole_d : 0; d < dh; ++d) {
      typename S::T& out = rows[c * stride + d];
      out = Accumulate ? out + in[d * ld + c] : in[d * ld + c];
    }
}

// Each level's coarse keys for fine keys [j0, j1) of one head (keys[l]:
// level l's rows), packed transposed, and for l ≥ 1 the key map from level
// l − 1: column c of level l − 1's tile lies in column column(c) of level
// l's; a vector of W columns starting at c0 = v·W reads its values from the
// W that start at window_base[v] (its first column: W columns span at most W
// coarser ones), permuted by window_index[c0 …]. Columns past the tile map
// to its last.
template <class S>
void load_keys(const Problem& p, const typename S::T* const* keys, int64_t np, int64_t j0, int64_t j1,
               const KeyTile<typename S::T>& out) {
  const int64_t dh = p.head_dim, rs = p.row_stride();
  for (int64_t l = 0; l < p.levels; ++l) {
    KeyGeometry& t = out.geometry[l];
    const int64_t block = p.level_block[l];
    t.col0 = j0 / block;
    t.cols = (j1 - 1) / block - t.col0 + 1;
    t.padded = round_up(t.cols, S::W);
    // The GEMMs read t.padded columns: zeros past the keys up to there, not to np (at the coarse
    // levels most of np, a memset per row).
    pack_transposed_to<S>(keys[l] + t.col0 * rs, t.cols, dh, rs, np, t.padded, out.keys_t + l * dh * np);
    if (l == 0) continue;
    // A finer column's first fine key lies in the same coarse column as all its others (the maps
    // nest: block = ratio · finer block), so column c of level l − 1's tile is coarse column
    // ⌊(finer_col0 + c) / ratio⌋ − t.col0, clamped to the tile's last: walked with a running quotient
    // instead of a 64-bit division per lane.
    const int64_t ratio = block / p.level_block[l - 1], finer_col0 = out.geometry[l - 1].col0;
    int64_t quotient = finer_col0 / ratio, remainder = finer_col0 % ratio;
    int32_t* window_base = out.window_base + l * (np / S::W);
    int32_t* window_index = out.window_index + l * np;
    for (int64_t c = 0; c < np; ++c) {
      const auto column = static_cast<int32_t>(std::min(quotient - t.col0, t.cols - 1));
      if (c % S::W == 0) window_base[c / S::W] = column;
      window_index[c] = column - window_base[c / S::W];
      if (++remainder == ratio) {
        remainder = 0;
        ++quotient;
      }
    }
  }
}

template <class T>
struct QueryTables;
template <class S>
QueryTables<typename S::T> query_tables(Workspace<S>& w, int64_t i0, int64_t rows);

// The fused scores of queries [i0, i1) × the loaded key tile, scale and λ
// included, in w.scores[r · np + c]. Coarsest level first: level l's GEMM
// stores G_l = λ_l C_l + up(G_{l+1}) in its coarse slot (the coarser level's
// row per row from query_tables, its columns through the key map), causally
// masked; level 0's stores S = λ_0 C_0 + up(G_1). Each slot keeps its G_l,
// its query rows are in w.query_rows.
template <class S>
void fused_scores(Workspace<S>& w, int64_t i0, int64_t i1, typename S::T scale) {
  using T = typename S::T;
  const Problem& p = w.p;
  const int64_t rows = i1 - i0, np = w.np, dh = w.dh, rs = w.rs, per_level = np / S::W;
  w.query_rows.data[0] = {i0, rows};
  for (int64_t l = 1; l < p.levels; ++l) {
    QueryGeometry& g = w.query_rows.data[l];
    g.row0 = std::max<int64_t>(0, w.query_index(l, i0));
    g.rows = w.query_index(l, i1 - 1) - g.row0 + 1;
  }
  const T* const* addends = p.levels > 1 ? query_tables(w, i0, rows).addends : nullptr;
  // Level l's GEMM adds the rows of level l + 1's slot through level l + 1's
  // key map; bidirectionally with stride 2, rows 2a and 2a + 1 of an even
  // first row share one.
  auto coarser_terms = [&](int64_t l) -> UpsampledAddend<T> {
    if (l + 1 >= p.levels) return {};
    const bool paired = !p.causal && p.stride == 2 && w.query_rows.data[l].row0 % 2 == 0;
    return {addends + l * (p.tile + 1), 0, w.keys.window_base + (l + 1) * per_level,
            w.keys.window_index + (l + 1) * np, paired};
  };
  for (int64_t l = p.levels - 1; l >= 1; --l) {
    const KeyGeometry& t = w.keys.geometry[l];
    const QueryGeometry& g = w.query_rows.data[l];
    if (g.rows <= 0) continue;  // no complete block yet (causal): its rows read zeros
    T* coarse = w.level_coarse(l);
    gemm<S>(g.rows, t.padded, dh, {w.q.data[l] + g.row0 * rs, rs, 1}, w.level_keys(l), np, coarse, w.ld,
            scale * w.weight.data[l], false, coarser_terms(l));
    if (p.causal)  // term l is allowed only where coarse key ≤ coarse query (coarser terms are 0 there too)
      for (int64_t a = 0; a < g.rows; ++a) {
        const int64_t first_masked = std::clamp<int64_t>(g.row0 + a - t.col0 + 1, 0, t.padded);
        std::fill(coarse + a * w.ld + first_masked, coarse + a * w.ld + t.padded, T(0));
      }
  }
  gemm<S>(rows, w.keys.geometry[0].padded, dh, {w.q.data[0] + i0 * rs, rs, 1}, w.level_keys(0), np, w.scores.data,
          np, scale * w.weight.data[0], false, coarser_terms(0));
}

// The query tile at i0's tables (Workspace::level_addends, pool_runs), built
// on the tile's first use in a call with this many rows (the backward ends a
// head's tiles at its last row with a nonzero dO); fused_scores has set
// w.query_rows.
template <class T>
struct QueryTables {
  const T* const* addends;  // [level < L − 1][row of the level]
  const int32_t* runs;      // [level][coarse row][first finer row − the finer tile's first, count]; backward only
};

template <class S>
QueryTables<typename S::T> query_tables(Workspace<S>& w, int64_t i0, int64_t rows) {
  using T = typename S::T;
  const Problem& p = w.p;
  const int64_t tile = i0 / p.tile;
  const T** addends = w.level_addends.data + tile * (p.tile + 1) * p.levels;
  int32_t* runs = w.pool_runs.data ? w.pool_runs.data + tile * p.levels * (p.tile + 1) * 2 : nullptr;
  if (w.tables_rows.data[tile] != rows) {
    // Row a of level l < L − 1 adds row q_{l+1}(i) of level l + 1's slot for
    // any fine row i of it (the maps nest); zeros where that is −1 (causal).
    for (int64_t l = 0; l + 1 < p.levels; ++l) {
      const QueryGeometry& g = w.query_rows.data[l];
      const QueryGeometry& coarser = w.query_rows.data[l + 1];
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t row = l == 0 ? i0 + r : w.query_index(l, i0 + r);
        if (row < g.row0) continue;  // causal: fine rows before level l's first complete block
        const int64_t parent = w.query_index(l + 1, i0 + r);
        addends[l * (p.tile + 1) + row - g.row0] =
            coarser.rows <= 0 || parent < 0 ? w.zero_row.data : w.level_coarse(l + 1) + (parent - coarser.row0) * w.ld;
      }
    }
    // Coarse row a of level l sums a run of level l − 1's rows (fine rows for
    // l = 1; before the first complete block the map is −1, causal).
    for (int64_t l = 1; runs && l < p.levels; ++l) {
      const QueryGeometry& g = w.query_rows.data[l];
      const int64_t finer_row0 = l == 1 ? i0 : w.query_rows.data[l - 1].row0;
      auto finer_row = [&](int64_t fine) { return l == 1 ? i0 + fine : w.query_index(l - 1, i0 + fine); };
      int64_t fine = 0;
      for (int64_t a = 0; a < g.rows; ++a) {
        while (fine < rows && w.query_index(l, i0 + fine) < g.row0 + a) ++fine;
        const int64_t begin = finer_row(fine);
        while (fine < rows && w.query_index(l, i0 + fine) == g.row0 + a) ++fine;
        const int64_t end = finer_row(fine - 1) + 1;
        runs[(l * (p.tile + 1) + a) * 2] = static_cast<int32_t>(begin - finer_row0);
        runs[(l * (p.tile + 1) + a) * 2 + 1] = static_cast<int32_t>(end - begin);
      }
    }
    w.tables_rows.data[tile] = static_cast<int32_t>(rows);
  }
  return {addends, runs};
}

// s[c] = 2^(s[c] − shift) for c < count, 0 from there to `end` (the
// forward's and the backward's probabilities; shift is at least the row's
// maximum, up to rounding, so exp2 need not saturate); returns `total` plus
// those values, W lanes. Whole vectors of keys unmasked (the mask cost a blend
// per vector, a tenth of the exponential's work), then the last partial one,
// then zeros. Four vectors' exponentials interleaved (for_lanes): 1.06× faster
// forward on a Zen 2 than one after another (docs/PERFORMANCE.md).
template <class S>
[[gnu::always_inline]] inline typename S::V exp2_shifted_row(typename S::T* s, int64_t count, int64_t end,
                                                             typename S::V shift, typename S::V total) {
  using T = typename S::T;
  using V = typename S::V;
  // U vectors from s + at, the lanes from count on zeroed (masked) or not.
  auto step = [&]<int U>(int64_t at, bool masked, std::integral_constant<int, U>) {
    V e[U];
    for_lanes<U>([&](int u) { e[u] = S::sub(S::load(s + at + u * S::W), shift); });
    S::template exp2<U, false>(e);
    for_lanes<U>([&](int u) {
      if (masked) e[u] = S::keep_first(e[u], count - at - u * S::W, T(0));
      S::store(s + at + u * S::W, e[u]);
      total = S::add(total, e[u]);
    });
  };
  constexpr int kLanes = 4;
  int64_t c = 0;
  for (; c + kLanes * S::W <= count; c += kLanes * S::W) step(c, false, std::integral_constant<int, kLanes>{});
  for (; c + S::W <= count; c += S::W) step(c, false, std::integral_constant<int, 1>{});
  if (c < count) {
    step(c, true, std::integral_constant<int, 1>{});
    c += S::W;
  }
  std::fill(s + c, s + std::max(c, end), T(0));
  return total;
}

// ---- forward -------------------------------------------------------------------

// The online softmax's step for one key tile (FlashAttention-2):
//   m' = max(m, max_c s_c),  l' = l·e^(m−m') + Σ_c e^(s_c−m'),  O' = O·e^(m−m') (+ P·V, by the caller);
// the scores become P = e^(s − m'), 0 past the row's last key. A row's step
// is a chain of latencies (a horizontal maximum feeds its exponentials), so
// it runs in passes over all the tile's rows, which leaves the core
// independent rows to overlap: the maxima, then the rescale factors as
// vectors over rows, then the exponentials. l stays W lanes per row, reduced
// once at the end of the task.
template <class S>
void softmax_tile(Workspace<S>& w, int64_t i0, int64_t rows, int64_t j0, int64_t j1) {
  using T = typename S::T;
  using V = typename S::V;
  const Problem& p = w.p;
  // Columns past the tile's keys (rounded up to W) are never read: the
  // P·V GEMM's depth is the tile's key count.
  const int64_t np = w.np, dh = w.dh, padded = w.keys.geometry[0].padded;
  constexpr T inf = std::numeric_limits<T>::infinity();
  auto key_count = [&](int64_t r) { return keys_in_tile(i0 + r, w.valid, p.causal, j0, j1); };
  for (int64_t r = 0; r < rows; ++r) {
    T* s = w.scores.data + r * np;
    const int64_t count = key_count(r);
    if (count <= 0) {  // no key of this tile for the row: nothing changes
      w.next_max.data[r] = w.row_max.data[r];
      continue;
    }
    V tile_max = S::set1(-inf);
    int64_t c = 0;
    for (; c + S::W <= count; c += S::W) tile_max = S::max(tile_max, S::load(s + c));
    if (c < count) tile_max = S::max(tile_max, S::keep_first(S::load(s + c), count - c, -inf));
    w.next_max.data[r] = std::max(w.row_max.data[r], S::reduce_max(tile_max));
  }
  // e^(m − m'): 1 where the maximum stays (also at −inf, before any finite
  // score), 0 on the first tile (m = −inf). The clamp to the lowest finite
  // value keeps −inf − (−inf) from becoming NaN.
  const V lowest = S::set1(std::numeric_limits<T>::lowest());
  for (int64_t r = 0; r < rows; r += S::W) {
    const V next = S::load(w.next_max.data + r);
    const V old = S::max(S::load(w.row_max.data + r), lowest);
    S::store(w.correction.data + r, S::exp2(S::sub(old, S::max(next, lowest))));
    S::store(w.row_max.data + r, next);
  }
  for (int64_t r = 0; r < rows; ++r) {
    T* s = w.scores.data + r * np;
    const int64_t count = key_count(r);
    const V correction = S::set1(w.correction.data[r]);
    T* o = w.acc.data + r * dh;
    for (int64_t d = 0; d < dh; d += S::W) S::store(o + d, S::mul(correction, S::load(o + d)));
    T* sums = w.row_sums.data + r * S::W;
    if (count <= 0) {
      std::fill(s, s + padded, T(0));
      continue;
    }
    const V shift = S::set1(w.row_max.data[r]);
    S::store(sums, exp2_shifted_row<S>(s, count, padded, shift, S::mul(correction, S::load(sums))));
  }
}

// Zeroes rows [first, last) of dh values each (a multiple of W, as every path
// requires), `stride` apart. Strided rows in vector stores with the row loop
// innermost: a row's contiguous stores, as std::fill or as a loop of vector
// stores over d, GCC compiles to a memset call per row (one 64-byte row of a
// [B, T, H, 16] gradient), and those calls were 1.4–1.9 % of a training step
// (`perf`: memset inside the attention backward).
template <class S>
void zero_rows(typename S::T* base, int64_t first, int64_t last, int64_t dh, int64_t stride) {
  using T = typename S::T;
  if (stride == dh) return std::fill(base + first * dh, base + last * dh, T(0));
  for (int64_t d = 0; d < dh; d += S::W)
    for (int64_t r = first; r < last; ++r) S::store(base + r * stride + d, S::zero());
}

// ---- the hybrid head's mix (HybridMix) -----------------------------------------

// One head's part of HybridMix: its channels h · dh + d of the taps and bias, its β.
template <class S>
struct HeadMix {
  using T = typename S::T;
  using V = typename S::V;
  const T* taps;  // tap r at taps + r · channels
  const T* bias;
  int64_t k, channels;
  T beta;
  HeadMix(const HybridMix<T>& mix, const Problem& p, int64_t head_index)
      : taps(mix.taps + (head_index % p.heads) * p.head_dim),
        bias(mix.bias ? mix.bias + (head_index % p.heads) * p.head_dim : nullptr),
        k(mix.taps_count),
        channels(p.heads * p.head_dim),
        beta(mix.gates[head_index % p.heads]) {}
  // c[t] for the vector of channels at d: the bias, then the taps whose row
  // is ≥ 0, r ascending (hybrid_mix's order). v: the head's rows from
  // channel d on, stride rs.
  V conv(const T* v, int64_t rs, int64_t t, int64_t d) const {
    V sum = bias ? S::load(bias + d) : S::zero();
    for (int64_t r = std::max<int64_t>(0, k - 1 - t); r < k; ++r)
      sum = S::fmadd(S::load(taps + r * channels + d), S::load(v + (t - k + 1 + r) * rs), sum);
    return sum;
  }
};

// The hybrid forward's outputs, the mix Y and the attention's A (saved for
// the backward), are streamed past the caches where a head's row is whole
// 64-byte lines (a part line would go to memory as a read-modify-write).
// Each row lands in a buffer last touched a step ago, so an ordinary store
// first read its line from memory: streamed, the mix's pass and the store of
// A each took about a third less time on a Zen 4, the output projection's
// GEMM that reads Y next included (docs/PERFORMANCE.md, "eighth session").
// MHA's output, read by that GEMM alone, gained nothing streamed.
template <class T>
constexpr bool whole_lines(int64_t head_dim) {
  return (head_dim * int64_t(sizeof(T))) % 64 == 0;
}
template <class S>
inline void store_row(typename S::T* p, typename S::V v, bool stream) {
  if (stream)
    S::stream(p, v);
  else
    S::store(p, v);
}

// Tap counts up to this run with the taps, the window of value rows and the
// dW sums in registers (MixTaps); more take the loops over k (MixAnyTaps).
constexpr int kMixTaps = 8;

// Calls f(std::integral_constant<int, k>{}) for k in 1 … kMixTaps, and
// f(std::integral_constant<int, 0>{}) for any other k.
template <class F>
void with_mix_taps(int64_t k, F&& f) {
  const bool found = [&]<int... R>(std::integer_sequence<int, R...>) {
    return ((k == R + 1 ? (f(std::integral_constant<int, R + 1>{}), true) : false) || ...);
  }(std::make_integer_sequence<int, kMixTaps>{});
  if (!found) f(std::integral_constant<int, 0>{});
}

// One head's mix, forward and backward, for a vector of channels at d, with
// K taps: a pass over the rows keeps the last K value rows (and in the
// backward the last K rows of dc) in registers, so that each row is loaded
// once where the loops over k loaded it 2k + 1 times. Rows before 0 read as
// 0, which adds exactly nothing to c, dW or dV.
template <class S, int K>
struct MixTaps {
  using T = typename S::T;
  using V = typename S::V;
  V taps[K], bias;
  MixTaps(const HeadMix<S>& m, int64_t d) : bias(m.bias ? S::load(m.bias + d) : S::zero()) {
#pragma GCC unroll 8
    for (int r = 0; r < K; ++r) taps[r] = S::load(m.taps + r * m.channels + d);
  }
  // window[r]: the row r − K + 1 of the current one, the newest last.
  static void push(V (&window)[K], V row) {
#pragma GCC unroll 8
    for (int r = 0; r + 1 < K; ++r) window[r] = window[r + 1];
    window[K - 1] = row;
  }
  V conv(const V (&window)[K]) const {
    V sum = bias;
#pragma GCC unroll 8
    for (int r = 0; r < K; ++r) sum = S::fmadd(taps[r], window[r], sum);
    return sum;
  }
  // a: row i0 of the attention's output, row i at a + (i − i0) · a_stride.
  void forward(const T* v, const T* a, int64_t a_stride, T* y, int64_t rs, int64_t i0, int64_t i1, V beta,
               bool stream) const {
    V window[K];
#pragma GCC unroll 8
    for (int r = 0; r < K; ++r) window[r] = i0 - K + r >= 0 ? S::load(v + (i0 - K + r) * rs) : S::zero();
    for (int64_t i = i0; i < i1; ++i) {
      push(window, S::load(v + i * rs));
      const V c = conv(window);
      store_row<S>(y + i * rs, S::fmadd(beta, S::sub(S::load(a + (i - i0) * a_stride), c), c), stream);
    }
  }
  // dW by tap, dbias and dβ into partial (row stride dh); dV rows added to.
  void backward(const T* grad_out, const T* a, const T* v, T* dv, int64_t rs, int64_t rows, V rest, T* partial,
                int64_t dh) const {
    V window[K], grads[K], dw[K], dbias = S::zero(), dbeta = S::zero();
#pragma GCC unroll 8
    for (int r = 0; r < K; ++r) window[r] = grads[r] = dw[r] = S::zero();
    // dV[s] = Σ_r taps[r] ⊙ dc[s + K − 1 − r], complete once row t = s + K − 1 is in grads.
    auto add_to_dv = [&](int64_t t) {
      const int64_t s = t - K + 1;
      if (s < 0) return;
      V sum = S::zero();
#pragma GCC unroll 8
      for (int r = 0; r < K; ++r) sum = S::fmadd(taps[r], grads[K - 1 - r], sum);
      S::store(dv + s * rs, S::add(S::load(dv + s * rs), sum));
    };
    for (int64_t t = 0; t < rows; ++t) {
      const V grad = S::load(grad_out + t * rs), dc = S::mul(rest, grad);
      push(window, S::load(v + t * rs));
      push(grads, dc);
      dbeta = S::fmadd(grad, S::sub(S::load(a + t * rs), conv(window)), dbeta);
      dbias = S::add(dbias, dc);
#pragma GCC unroll 8
      for (int r = 0; r < K; ++r) dw[r] = S::fmadd(dc, window[r], dw[r]);
      add_to_dv(t);
    }
    for (int64_t t = rows; t < rows + K - 1; ++t) {  // the last rows' dV: dc past the rows is 0
      push(grads, S::zero());
      add_to_dv(t);
    }
#pragma GCC unroll 8
    for (int r = 0; r < K; ++r) S::store(partial + r * dh, dw[r]);
    S::store(partial + K * dh, dbias);
    S::store(partial + (K + 1) * dh, dbeta);
  }
};

// The same for any k, c recomputed by the loop over k (HeadMix::conv), the
// dW sums kMixTaps taps a pass.
template <class S>
struct MixAnyTaps {
  using T = typename S::T;
  using V = typename S::V;
  const HeadMix<S>& m;
  int64_t d;
  void forward(const T* v, const T* a, int64_t a_stride, T* y, int64_t rs, int64_t i0, int64_t i1, V beta,
               bool stream) const {
    for (int64_t i = i0; i < i1; ++i) {
      const V c = m.conv(v, rs, i, d);
      store_row<S>(y + i * rs, S::fmadd(beta, S::sub(S::load(a + (i - i0) * a_stride), c), c), stream);
    }
  }
  void backward(const T* grad_out, const T* a, const T* v, T* dv, int64_t rs, int64_t rows, V rest, T* partial,
                int64_t dh) const {
    const int64_t k = m.k;
    for (int64_t r0 = 0; r0 < k; r0 += kMixTaps) {
      const int64_t count = std::min<int64_t>(kMixTaps, k - r0);
      V dw[kMixTaps], dbias = S::zero(), dbeta = S::zero();
      for (auto& sum : dw) sum = S::zero();
      for (int64_t t = 0; t < rows; ++t) {
        const V grad = S::load(grad_out + t * rs), dc = S::mul(rest, grad);
        if (r0 == 0) {
          dbeta = S::fmadd(grad, S::sub(S::load(a + t * rs), m.conv(v, rs, t, d)), dbeta);
          dbias = S::add(dbias, dc);
        }
#pragma GCC unroll 8
        for (int r = 0; r < kMixTaps; ++r) {
          const int64_t source = t - k + 1 + r0 + r;
          if (r < count && source >= 0) dw[r] = S::fmadd(dc, S::load(v + source * rs), dw[r]);
        }
      }
      for (int64_t r = 0; r < count; ++r) S::store(partial + (r0 + r) * dh, dw[r]);
      if (r0 > 0) continue;
      S::store(partial + k * dh, dbias);
      S::store(partial + (k + 1) * dh, dbeta);
    }
    for (int64_t s = 0; s < rows; ++s) {
      V sum = S::zero();
      for (int64_t r = std::max<int64_t>(0, s + k - rows); r < k; ++r)
        sum = S::fmadd(S::load(m.taps + r * m.channels + d), S::mul(rest, S::load(grad_out + (s + k - 1 - r) * rs)),
                       sum);
      S::store(dv + s * rs, S::add(S::load(dv + s * rs), sum));
    }
  }
};

// Calls f(mix) with the head's MixTaps or MixAnyTaps for the vector of channels at d.
template <class S, class F>
void with_head_mix(const HeadMix<S>& m, int64_t d, F&& f) {
  with_mix_taps(m.k, [&](auto taps) {
    constexpr int K = decltype(taps)::value;
    if constexpr (K == 0)
      f(MixAnyTaps<S>{m, d});
    else
      f(MixTaps<S, K>(m, d));
  });
}

// Y = c + β (out − c) for rows [i0, i1) of a head, and Y = 0 for the padded
// rows [i1, i_end). a: those rows of the attention's output as forward_task
// left them in its tile (row i0 first, row stride dh), in L1.
template <class S>
void mix_rows(const Problem& p, const ForwardArgs<typename S::T>& args, int64_t head_index, const typename S::T* a,
              int64_t i0, int64_t i1, int64_t i_end) {
  using T = typename S::T;
  const HeadMix<S> m(args.mix, p, head_index);
  const int64_t offset = p.head_offset(head_index, p.length), rs = p.row_stride(), dh = p.head_dim;
  const T* v = args.values + offset;
  T* y = args.mix.mixed + offset;
  const bool stream = whole_lines<T>(dh);
  for (int64_t d = 0; d < dh; d += S::W)
    with_head_mix(m, d, [&](const auto& mix) {
      mix.forward(v + d, a + d, dh, y + d, rs, i0, i1, S::set1(m.beta), stream);
    });
  zero_rows<S>(y, i1, i_end, dh, rs);
}

// The mix's gradients of one head, once its dV rows hold the attention's
// (the backward read dY as dO = β dY): per row t (the valid ones with
// zero_padded_rows), c recomputed, dβ += dY ⊙ (out − c), dc = (1 − β) dY,
// dbias += dc, dW[r] += dc ⊙ v[t − k + 1 + r], into the head's partial
// [k + 2, dh]; and dV[s] += Σ_r taps[r] ⊙ dc[s + k − 1 − r], gathered per row
// s so that each row is added to once. Every sum runs over t ascending.
template <class S>
void mix_head_backward(const Problem& p, const BackwardArgs<typename S::T>& args, int64_t head_index) {
  using T = typename S::T;
  const HybridMix<T>& mix = args.forward.mix;
  const HeadMix<S> m(mix, p, head_index);
  const int64_t offset = p.head_offset(head_index, p.length), rs = p.row_stride(), dh = p.head_dim;
  const int64_t rows = p.zero_padded_rows ? p.lengths[head_index / p.heads] : p.length;
  const T *grad_out = args.grad_out + offset, *a = args.forward.out + offset, *v = args.forward.values + offset;
  T* dv = args.grad_values + offset;
  T* partial = mix.partials + head_index * (m.k + 2) * dh;
  for (int64_t d = 0; d < dh; d += S::W)
    with_head_mix(m, d, [&](const auto& mix_d) {
      mix_d.backward(grad_out + d, a + d, v + d, dv + d, rs, rows, S::set1(T(1) - m.beta), partial + d, dh);
    });
}

// Query rows [i0, i1) of one head, i1 − i0 ≤ tile.
template <class S>
void forward_task(Workspace<S>& w, const ForwardArgs<typename S::T>& args, const KeyTileStore<typename S::T>& keys,
                  int64_t head_index, int64_t i0, int64_t i1) {
  using T = typename S::T;
  using V = typename S::V;
  const Problem& p = w.p;
  const int64_t dh = w.dh, rows = i1 - i0;
  const T scale = T(1) / std::sqrt(T(dh));
  w.bind_head(args, head_index);
  std::fill(w.acc.data, w.acc.data + rows * dh, T(0));
  std::fill(w.row_max.data, w.row_max.data + round_up(rows, S::W), -std::numeric_limits<T>::infinity());
  std::fill(w.row_sums.data, w.row_sums.data + rows * S::W, T(0));
  const int64_t key_end = key_limit(i1 - 1, w.valid, p.causal);
  for (int64_t j0 = 0; j0 < key_end; j0 += p.tile) {
    const int64_t j1 = std::min(key_end, j0 + p.tile);
    w.keys = keys.at(j0 / p.tile);
    fused_scores(w, i0, i1, scale * kLog2e<T>);
    softmax_tile(w, i0, rows, j0, j1);
    gemm<S>(rows, dh, j1 - j0, {w.scores.data, w.np, 1}, w.v + j0 * w.rs, w.rs, w.acc.data, dh, T(1), true);
  }
  // With the mix, A is read again by the backward alone: streamed (see
  // store_row), and kept normalised in acc for mix_rows to read.
  const bool mixed = args.mix.gates != nullptr, stream = mixed && whole_lines<T>(dh);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = i0 + r;
    const T row_sum = S::reduce_add(S::load(w.row_sums.data + r * S::W));
    const V inverse = S::set1(T(1) / row_sum);
    T* out = args.out + p.head_offset(head_index, p.length) + i * w.rs;
    T* acc = w.acc.data + r * dh;
    for (int64_t d = 0; d < dh; d += S::W) {
      const V a = S::mul(inverse, S::load(acc + d));
      store_row<S>(out + d, a, stream);
      if (mixed) S::store(acc + d, a);
    }
    args.log2_sum_exp[head_index * p.length + i] = w.row_max.data[r] + std::log2(row_sum);
  }
}

template <class S>
void forward(const Problem& p, const ForwardArgs<typename S::T>& args) {
  const int64_t tiles = (p.length + p.tile - 1) / p.tile, heads = p.batch * p.heads, tasks = heads * tiles;
  const QueryMaps maps(p);
#pragma omp parallel if (p.parallel)
  {
    Workspace<S> w(p, false);
    w.query_maps = maps.maps.data;
    // Every query tile of a head reads the same key tiles: a thread packs a
    // head's key tiles when its first task of that head comes (tasks run
    // head by head, so about once per head and thread), and keeps them.
    KeyTileStore<typename S::T> keys(tiles, p.levels, p.head_dim, w.np, S::W);
    int64_t packed_head = -1;
    // With heads enough to keep every thread busy, a thread takes a whole
    // head at a time (a chunk of `tiles` tasks) and packs it once: one query
    // tile at a time, every thread packed nearly every head's key tiles, the
    // HKT levels' packing twice over on two threads. With examples enough, a
    // whole example at a time (Problem::head_group).
    const int threads = omp_get_num_threads();
    const int64_t group = heads >= 8 * threads ? tiles * p.head_group(threads) : 1;
#pragma omp for schedule(dynamic, group)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t head_index = p.head_order[task / tiles];
      if (head_index != packed_head) {
        w.bind_head(args, head_index);
        for (int64_t j0 = 0; j0 < w.valid; j0 += p.tile)
          load_keys<S>(p, w.k.data, w.np, j0, std::min(w.valid, j0 + p.tile), keys.at(j0 / p.tile));
        packed_head = head_index;
      }
      const int64_t i0 = (task % tiles) * p.tile, i_end = std::min(p.length, i0 + p.tile);
      // With zero_padded_rows the rows from the valid length on are 0, and
      // their log2_sum_exp +inf: the backward's P = 2^(S − lse) is 0 there.
      const int64_t i1 = p.zero_padded_rows ? std::clamp(w.valid, i0, i_end) : i_end;
      if (i1 > i0) forward_task(w, args, keys, head_index, i0, i1);
      if (args.mix.gates) {
        mix_rows<S>(p, args, head_index, w.acc.data, i0, i1, i_end);
        S::fence();  // the streamed rows of A and Y before anything that follows
      }
      if (i1 == i_end) continue;
      zero_rows<S>(args.out + p.head_offset(head_index, p.length), i1, i_end, p.head_dim, p.row_stride());
      std::fill(args.log2_sum_exp + head_index * p.length + i1, args.log2_sum_exp + head_index * p.length + i_end,
                std::numeric_limits<typename S::T>::infinity());
    }
  }
}

// ---- backward ------------------------------------------------------------------

// Where one backward task adds its gradients: per level, the rows of its head.
template <class T>
struct GradientTargets {
  T** queries;  // [levels]
  T** keys;     // [levels]; keys[0] and values: rows owned by this task's key tiles
  T* values;
  int64_t stride;         // row stride of keys[0] and values (the gradient tensors' Problem::row_stride)
  int64_t shared_stride;  // of queries[l] and keys[l ≥ 1]: the tensors' with one key chunk, dh in a chunk's buffer
  uint32_t write_queries = 0;  // bit l: this key tile's dQ_l GEMMs write their rows instead of adding to them
  T grad_out_scale = T(1);     // β_h with HybridMix: grad_out is dY and dO = β_h dY
};

// Pools the tile's dS onto level l's coarse tile, from level l − 1's sums
// (dS itself for l = 1): the maps nest, q_l = parent(q_{l−1}) and
// k_l = ⌊k_{l−1} / s⌋, so U_l[a, b] = Σ dS[i, j] over fine rows i of coarse
// row a and fine keys j of coarse column b is a sum of U_{l−1}'s entries, and
// level 2 reads a quarter of what level 1 read. U_l is the unmasked sum
// (level l + 1 pools it); P_l, the gradient the GEMMs read, is U_l with the
// causally disallowed entries (column b > row a) zeroed. Both maps are
// monotone, so each coarse row and column is a contiguous run of finer ones.
template <class S>
void pool_level(Workspace<S>& w, int64_t l, int64_t i0, int64_t rows, const typename S::T* source, typename S::T* sums) {
  using T = typename S::T;
  using V = typename S::V;
  const KeyGeometry& t = w.keys.geometry[l];
  const KeyGeometry& finer = w.keys.geometry[l - 1];
  const QueryGeometry& g = w.query_rows.data[l];
  const int64_t np = w.np, finer_padded = finer.padded;  // level 0's: the tile's keys rounded up to W
  const int32_t* runs = query_tables(w, i0, rows).runs + l * (w.p.tile + 1) * 2;
  // Rows: coarse row a sums its run of finer rows, in registers.
  auto row_sum = [&](const T* in, int64_t count, int64_t c) {
    if (c >= finer_padded) return S::zero();
    V total = S::load(in + c);
    for (int64_t f = 1; f < count; ++f) total = S::add(total, S::load(in + f * np + c));
    return total;
  };
  // Columns: with stride 2 and the finer tile starting at an even column,
  // finer columns 2b and 2b + 1 make column b, a vector pair sum of the row
  // sums, with no pass in between. Otherwise the key map, one value at a
  // time, from the row sums. Finer columns past the valid keys are 0 (dS = 0
  // there), so they add nothing; lanes past t.cols come out 0 as well (U_l
  // keeps that too).
  const int64_t finer_col0 = finer.col0;
  const int64_t stride = w.p.stride;
  const bool pairs = stride == 2 && finer_col0 % 2 == 0;
  for (int64_t a = 0; a < g.rows; ++a) {
    const T* in = source + runs[2 * a] * np;
    const int64_t count = runs[2 * a + 1];
    T* out = sums + a * np;
    if (pairs) {
      for (int64_t c = 0; c / 2 < t.padded; c += 2 * S::W)
        S::store(out + c / 2, S::pair_sum(row_sum(in, count, c), row_sum(in, count, c + S::W)));
    } else {
      T* row = w.pooled.data;
      for (int64_t c = 0; c < finer_padded; c += S::W) S::store(row + c, row_sum(in, count, c));
      std::fill(out, out + t.padded, T(0));
      for (int64_t c = 0; c < finer_padded; ++c) {
        const int64_t b = (finer_col0 + c) / stride - t.col0;
        if (b < t.cols) out[b] += row[c];
      }
    }
  }
}

// P_l from U_l: entries whose term is not allowed (causal: coarse column
// after coarse row) zeroed; bidirectionally U_l itself.
template <class S>
const typename S::T* level_gradient(Workspace<S>& w, int64_t l, const typename S::T* sums) {
  using T = typename S::T;
  if (!w.p.causal) return sums;
  const KeyGeometry& t = w.keys.geometry[l];
  const QueryGeometry& g = w.query_rows.data[l];
  T* masked = w.level_grad.data;
  for (int64_t a = 0; a < g.rows; ++a) {
    const int64_t allowed = g.row0 + a - t.col0 + 1;  // columns b < allowed keep their sum
    for (int64_t c = 0; c < t.padded; c += S::W)
      S::store(masked + a * w.np + c, S::keep_first(S::load(sums + a * w.np + c), allowed - c, T(0)));
  }
  return masked;
}

// A head's dq_l holds G = Σ (P_l k_l) / √dh over its key tiles, without λ_l.
// dλ_l = Σ P_l ⊙ C_l = Σ_a q_l[a] · G[a] reads it once (no score tile kept),
// then dq_l = λ_l G. Returns the head's dλ_l.
//
// The dot products are summed as vectors over blocks of kRows rows, with one
// horizontal sum and one double addition per block instead of per row (each
// row waited on both): the pass took about a quarter less time on a Zen 4
// (docs/PERFORMANCE.md, "eighth session"). The order depends on the problem
// alone, so the result still does not depend on the thread count.
template <class S>
double finish_query_gradient(const typename S::T* queries, int64_t query_stride, typename S::T* grad,
                             int64_t grad_stride, int64_t rows, int64_t dh, typename S::T lambda) {
  constexpr int64_t kRows = 16;
  double total = 0;
  const auto scale = S::set1(lambda);
  for (int64_t a0 = 0; a0 < rows; a0 += kRows) {
    auto dot = S::zero();
    for (int64_t a = a0; a < std::min(rows, a0 + kRows); ++a) {
      typename S::T* row = grad + a * grad_stride;
      for (int64_t d = 0; d < dh; d += S::W) {
        const auto g = S::load(row + d);
        dot = S::fmadd(S::load(queries + a * query_stride + d), g, dot);
        S::store(row + d, S::mul(scale, g));
      }
    }
    total += double(S::reduce_add(dot));
  }
  return total;
}

// The dP GEMM's store (dP = dO·Vᵀ) fused with the softmax's gradient: per
// stored vector at row r and columns c, dS = P ⊙ (dP − D_r) is stored as C
// (P made by backward_tile beforehand), so dP never reaches memory. With
// `pooled`, rows 2a, 2a + 1 and vector pairs (v, v + 1) also make level 1's
// pooled dS (pool_level's sums, in its order): every row block starts at an
// even row and has an even number of rows there (the tile's rows are even),
// and every column block at an even vector, so no pair straddles two blocks;
// an odd last vector pairs with 0.
template <class T>
struct SoftmaxGradient {
  const T* probabilities = nullptr;  // P, row stride ld
  int64_t ld = 0;
  const T* delta = nullptr;  // per row: D = rowsum(dO ⊙ O)
  T* pooled = nullptr;       // level 1's sums, row stride ld; null: none here
  int64_t row = 0, col = 0;  // this block's first row and column
  SoftmaxGradient shifted(int64_t rows_down, int64_t cols_right) const {
    SoftmaxGradient next = *this;
    next.row += rows_down;
    next.col += cols_right;
    return next;
  }
  template <class S, int MR, int NV>
  void store_block(typename S::V (&acc)[MR][NV], T* c, int64_t ldc, T alpha) const {
    using V = typename S::V;
    const V scale = S::set1(alpha);
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) {
      const V delta_r = S::set1(delta[row + m]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        const V prob = S::load(probabilities + (row + m) * ld + col + v * S::W);
        acc[m][v] = S::mul(prob, S::sub(S::mul(scale, acc[m][v]), delta_r));
        S::store(c + m * ldc + v * S::W, acc[m][v]);
      }
    }
    if (!pooled) return;
#pragma GCC unroll 4
    for (int m = 0; m + 1 < MR; m += 2) {
      T* out = pooled + (row + m) / 2 * ld + col / 2;
#pragma GCC unroll 2
      for (int v = 0; v < NV; v += 2) {
        const V low = S::add(acc[m][v], acc[m + 1][v]);
        const V high = v + 1 < NV ? S::add(acc[m][v + 1], acc[m + 1][v + 1]) : S::zero();
        S::store(out + v * S::W / 2, S::pair_sum(low, high));
      }
    }
  }
};

// Query rows [i0, min(i0 + tile, row_end)) × key tile [j0, j1).
template <class S>
void backward_tile(Workspace<S>& w, const BackwardArgs<typename S::T>& args, const GradientTargets<typename S::T>& g,
                   int64_t head_index, int64_t i0, int64_t row_end, int64_t j0, int64_t j1) {
  using T = typename S::T;
  const Problem& p = w.p;
  const int64_t dh = w.dh, rs = w.rs, np = w.np, i1 = std::min(row_end, i0 + p.tile), rows = i1 - i0, kc = j1 - j0;
  const int64_t gs = g.shared_stride;
  const T scale = T(1) / std::sqrt(T(dh));
  const bool multiscale = args.forward.level_weights != nullptr;
  const T* grad_out = args.grad_out + p.head_offset(head_index, p.length);
  const T* lse = args.forward.log2_sum_exp + head_index * p.length;
  fused_scores(w, i0, i1, scale * kLog2e<T>);
  // Only the tile's keys, rounded up to W (a partial last tile): the GEMMs
  // below read no column past them, pooling none past padded either.
  const int64_t padded = w.keys.geometry[0].padded;
  // P = 2^(S − lse) in place, 0 past each row's keys: a pass of its own,
  // four vectors' exponentials interleaved. In the dP GEMM's store, one
  // vector after another, they were 63 % of that GEMM's time on a Zen 2, the
  // core waiting on each exponential's chain (docs/PERFORMANCE.md).
  for (int64_t r = 0; r < rows; ++r)
    exp2_shifted_row<S>(w.scores.data + r * np, keys_in_tile(i0 + r, w.valid, p.causal, j0, j1), padded,
                        S::set1(lse[i0 + r]), S::zero());
  // dP = dO·Vᵀ, and in its store dS = P ⊙ (dP − D) into grads
  // (SoftmaxGradient). Level 1's pooled dS (pool_level) is made there too
  // while the values are in registers, where its blocks are 2 × 2 from the
  // tile's corner: fine rows 2a and 2a + 1 and columns 2b and 2b + 1 make
  // U_1[a, b] (bidirectional, stride 2).
  const bool pool_here = multiscale && p.levels > 1 && !p.causal && p.stride == 2 &&
                         w.query_rows.data[1].rows * 2 == rows && i0 % 2 == 0 && j0 % 2 == 0;
  T* level1_sums = w.level_sums.data + (p.tile + 1) * np;  // pool_level's slot for l = 1
  const SoftmaxGradient<T> softmax_gradient{w.scores.data, np, w.delta.data + i0, pool_here ? level1_sums : nullptr};
  gemm<S>(rows, padded, dh, {grad_out + i0 * rs, rs, 1}, w.values_t.data, np, w.grads.data, np, g.grad_out_scale,
          false, softmax_gradient);
  // dV and dK₀ of the key tile, transposed (dVᵀ += dOᵀ·P, dK₀ᵀ += Q₀ᵀ·dS):
  // the products are dh × padded, as wide as the tile, so every broadcast of
  // A feeds NB vectors of FMAs; dV = Pᵀ·dO would be one vector wide (dh = 16)
  // and load-bound, a broadcast per FMA. unpack_transposed writes them after the key tile.
  gemm_few_rows<S>(dh, padded, rows, {grad_out + i0 * rs, 1, rs}, w.scores.data, np, w.grad_values_t.data, np,
                   g.grad_out_scale);
  const T fine_alpha = scale * w.weight.data[0];
  gemm_few_rows<S>(dh, padded, rows, {w.q.data[0] + i0 * rs, 1, rs}, w.grads.data, np, w.grad_keys_t.data, np,
                   fine_alpha);
  // dq_l gathers (P_l k_l) / √dh without λ_l: finish_query_gradient reads
  // dλ_l from it and applies λ_l once per head (MHA: λ = 1, applied here).
  gemm<S>(rows, dh, kc, {w.grads.data, np, 1}, w.k.data[0] + j0 * rs, rs, g.queries[0] + i0 * gs, gs,
          multiscale ? scale : fine_alpha, !(g.write_queries & 1u));
  if (!multiscale) return;
  const T* finer = w.grads.data;  // U_{l−1}; dS for l = 1
  for (int64_t l = 1; l < p.levels; ++l) {
    const KeyGeometry& t = w.keys.geometry[l];
    const QueryGeometry& rows_l = w.query_rows.data[l];
    if (rows_l.rows <= 0) break;  // no complete block yet (causal): none at coarser levels either
    T* sums = w.level_sums.data + (l % 2) * (p.tile + 1) * np;
    if (l > 1 || !pool_here) pool_level(w, l, i0, rows, finer, sums);
    const T* grad = level_gradient(w, l, sums);
    gemm<S>(rows_l.rows, dh, t.cols, {grad, np, 1}, w.k.data[l] + t.col0 * rs, rs, g.queries[l] + rows_l.row0 * gs,
            gs, scale, !(g.write_queries & (1u << l)));
    gemm_few_rows<S>(dh, t.padded, rows_l.rows, {w.q.data[l] + rows_l.row0 * rs, 1, rs}, grad, np,
                     w.grad_keys_t.data + l * dh * np, np, scale * w.weight.data[l]);
    finer = sums;
  }
}

// Key chunks per (batch, head): enough tasks for the threads of a small
// batch, decided by the problem alone so results never depend on threads.
inline int64_t key_chunks(const Problem& p) {
  const int64_t heads = p.batch * p.heads, key_tiles = (p.length + p.tile - 1) / p.tile;
  constexpr int64_t kTasks = 8;
  return std::clamp<int64_t>((kTasks + heads - 1) / heads, 1, key_tiles);
}

template <class S>
void backward(const Problem& p, const BackwardArgs<typename S::T>& args) {
  using T = typename S::T;
  const int64_t heads = p.batch * p.heads, dh = p.head_dim, rs = p.row_stride(), levels = p.levels;
  const int64_t key_tiles = (p.length + p.tile - 1) / p.tile, chunks = key_chunks(p), tasks = heads * chunks;
  // Per (head, chunk) when chunks > 1: every level's dQ_l, then dK_l for l ≥ 1.
  int64_t shared_rows = 0;
  for (int64_t l = 0; l < levels; ++l) shared_rows += p.level_rows[l] * (l == 0 ? 1 : 2);
  Buffer<T> partial(chunks > 1 ? tasks * shared_rows * dh : 0);
  Buffer<double> level_grads(heads * levels);  // dλ per (batch, head), set by finish_head
  const QueryMaps maps(p);
  const bool multiscale = args.forward.level_weights != nullptr, mixed = args.forward.mix.gates != nullptr;
  // Once a head's dq_l are complete: its dλ_l (into level_grad) and λ_l.
  auto finish_head = [&](int64_t head_index, double* level_grad) {
    for (int64_t l = 0; l < levels; ++l) {
      const int64_t offset = p.head_offset(head_index, p.level_rows[l]);
      level_grad[l] = finish_query_gradient<S>(args.forward.queries[l] + offset, rs, args.grad_queries[l] + offset, rs,
                                               p.level_rows[l], dh,
                                               args.forward.level_weights[(head_index % p.heads) * levels + l]);
    }
  };
#pragma omp parallel if (p.parallel)
  {
    Workspace<S> w(p, true);
    w.query_maps = maps.maps.data;
    Buffer<T*> query_targets(levels), key_targets(levels);
    const int64_t group = chunks * p.head_group(omp_get_num_threads());  // tasks of one example's heads
#pragma omp for schedule(dynamic, group)
    for (int64_t rank = 0; rank < tasks; ++rank) {
      const int64_t head_index = p.head_order[rank / chunks], chunk = rank % chunks, task = head_index * chunks + chunk;
      w.bind_head(args.forward, head_index);
      T* shared = partial.data + task * shared_rows * dh;
      for (int64_t l = 0; l < levels; ++l) {
        const int64_t rows = p.level_rows[l], head_offset = p.head_offset(head_index, rows);
        if (chunks == 1) {
          query_targets.data[l] = args.grad_queries[l] + head_offset;  // zeroed below where no tile writes
        } else {
          query_targets.data[l] = shared;
          shared += rows * dh;
        }
        if (l == 0) {
          key_targets.data[0] = args.grad_keys[0] + head_offset;
        } else if (chunks == 1) {
          key_targets.data[l] = args.grad_keys[l] + head_offset;
        } else {
          key_targets.data[l] = shared;
          shared += rows * dh;
        }
      }
      const int64_t head_offset = p.head_offset(head_index, p.length);
      GradientTargets<T> targets{query_targets.data, key_targets.data, args.grad_values + head_offset, rs,
                                 chunks == 1 ? rs : dh};
      if (mixed) targets.grad_out_scale = args.forward.mix.gates[head_index % p.heads];
      const T* out = args.forward.out + head_offset;
      const T* grad_out = args.grad_out + head_offset;
      // D = rowsum(dO ⊙ O), and the rows the tiles visit: up to the last
      // whose dO is not zero (see the top of this file).
      int64_t row_end = 0;
      for (int64_t i = 0; i < p.length; ++i) {
        auto total = S::zero();
        bool nonzero = false;
        for (int64_t d = 0; d < dh; d += S::W) {
          const auto grad = S::load(grad_out + i * rs + d);
          nonzero = nonzero || S::any_nonzero(grad);
          total = S::fmadd(grad, S::load(out + i * rs + d), total);
        }
        w.delta.data[i] = targets.grad_out_scale * S::reduce_add(total);
        if (nonzero) row_end = i + 1;
      }
      // Rows zeroed by the forward (zero_padded_rows) add nothing either: P = 0 there.
      if (p.zero_padded_rows) row_end = std::min(row_end, w.valid);
      // Whole blocks of 8 rows (zero-dO rows cost work, never a change): a
      // tile of an even row count from an even row keeps level 1's pooling in
      // the dP GEMM's store (SoftmaxGradient) instead of pool_level's pass.
      row_end = std::min(p.length, round_up(row_end, 8));
      // With one key chunk the gradients go straight to the tensors, and the
      // first key tile (tile 0: every query tile visits it, causal or not)
      // writes its dQ_l rows where the query tiles own disjoint coarse rows
      // (level 0, and bidirectionally levels whose block divides the tile);
      // the key tiles always own disjoint coarse columns when the block
      // divides the tile, so dK_l is written, not added. Only the rows no
      // tile writes are zeroed: a zeroing pass over every level's rows, each
      // a line of its own in the interleaved layout, was 3.7 % of HKT's
      // backward on one thread, 1.7 % of MHA's (docs/PERFORMANCE.md,
      // "Emerald Rapids, sixth session").
      uint32_t queries_written = 0, keys_written = 0;  // bit l: level l's dQ_l (dK_l) written by the tiles
      if (chunks == 1)
        for (int64_t l = 0; l < levels; ++l) {
          const int64_t block = p.level_block[l], rows = p.level_rows[l];
          const bool own_rows = l == 0 || (!p.causal && p.tile % block == 0);
          int64_t first_unwritten = 0;
          if (own_rows && row_end > 0 && w.valid > 0) {
            queries_written |= 1u << l;
            first_unwritten = std::min(rows, (row_end - 1) / block + 1);
          }
          zero_rows<S>(query_targets.data[l], first_unwritten, rows, dh, rs);
          if (l == 0) continue;
          int64_t first_unwritten_key = 0;
          if (p.tile % block == 0) {
            keys_written |= 1u << l;
            first_unwritten_key = std::min(rows, (w.valid + block - 1) / block);
          }
          zero_rows<S>(key_targets.data[l], first_unwritten_key, rows, dh, rs);
        }
      // Interleaved key tiles: causally the early tiles carry the most work.
      for (int64_t tile = chunk; tile < key_tiles; tile += chunks) {
        const int64_t j0 = tile * p.tile, j_end = std::min(p.length, j0 + p.tile);
        // Rows [j0, j1) are stored from the transposed sums below; keys past the valid length get none.
        const int64_t j1 = std::clamp(w.valid, j0, j_end);
        zero_rows<S>(targets.keys[0], j1, j_end, dh, rs);
        if (!args.accumulate_values) zero_rows<S>(targets.values, j1, j_end, dh, rs);
        if (j1 == j0) continue;
        targets.write_queries = tile == 0 ? queries_written : 0;
        load_keys<S>(p, w.k.data, w.np, j0, j1, w.keys);
        pack_transposed<S>(w.v + j0 * rs, j1 - j0, dh, rs, w.np, w.values_t.data);
        std::fill(w.grad_values_t.data, w.grad_values_t.data + dh * w.np, T(0));
        std::fill(w.grad_keys_t.data, w.grad_keys_t.data + levels * dh * w.np, T(0));
        for (int64_t i0 = p.causal ? j0 : 0; i0 < row_end; i0 += p.tile)  // causally, rows i < j0 see no key here
          backward_tile(w, args, targets, head_index, i0, row_end, j0, j1);
        if (args.accumulate_values)
          unpack_transposed<S, true>(w.grad_values_t.data, j1 - j0, dh, w.np, rs, targets.values + j0 * rs);
        else
          unpack_transposed<S>(w.grad_values_t.data, j1 - j0, dh, w.np, rs, targets.values + j0 * rs);
        unpack_transposed<S>(w.grad_keys_t.data, j1 - j0, dh, w.np, rs, targets.keys[0] + j0 * rs);
        for (int64_t l = 1; multiscale && l < levels; ++l) {
          const KeyGeometry& t = w.keys.geometry[l];
          T* keys_l = targets.keys[l] + t.col0 * targets.shared_stride;
          if (keys_written & (1u << l))  // this tile's coarse columns are its own
            unpack_transposed<S>(w.grad_keys_t.data + l * dh * w.np, t.cols, dh, w.np, targets.shared_stride, keys_l);
          else  // shared with the next key tile (or a chunk's buffer): +=
            unpack_transposed<S, true>(w.grad_keys_t.data + l * dh * w.np, t.cols, dh, w.np, targets.shared_stride,
                                       keys_l);
        }
      }
      if (multiscale && chunks == 1) finish_head(head_index, level_grads.data + head_index * levels);
      if (mixed && chunks == 1) mix_head_backward<S>(p, args, head_index);
    }
  }
  if (chunks > 1) {
#pragma omp parallel for if (p.parallel)
    for (int64_t head_index = 0; head_index < heads; ++head_index) {
      int64_t offset = 0;
      for (int64_t l = 0; l < levels; ++l)
        for (int side = 0; side < (l == 0 ? 1 : 2); ++side) {
          const int64_t rows = p.level_rows[l];
          T* target = (side == 0 ? args.grad_queries[l] : args.grad_keys[l]) + p.head_offset(head_index, rows);
          zero_rows<S>(target, 0, rows, dh, rs);
          for (int64_t chunk = 0; chunk < chunks; ++chunk) {
            const T* source = partial.data + ((head_index * chunks + chunk) * shared_rows) * dh + offset;
            for (int64_t r = 0; r < rows; ++r)
              for (int64_t d = 0; d < dh; ++d) target[r * rs + d] += source[r * dh + d];
          }
          offset += rows * dh;
        }
      if (multiscale) finish_head(head_index, level_grads.data + head_index * levels);
      if (mixed) mix_head_backward<S>(p, args, head_index);
    }
  }
  if (args.grad_level_weights)
    for (int64_t h = 0; h < p.heads; ++h)
      for (int64_t l = 0; l < levels; ++l) {
        double total = 0;
        for (int64_t b = 0; b < p.batch; ++b) total += level_grads.data[(b * p.heads + h) * levels + l];
        args.grad_level_weights[h * levels + l] = static_cast<T>(total);
      }
}

// ---- the exported table ----------------------------------------------------------

template <class S>
void gemm_entry(int64_t rows, int64_t cols, int64_t depth, const float* a, int64_t a_row, int64_t a_col,
                const float* b, int64_t ldb, float* c, int64_t ldc, float alpha, bool accumulate, const float* bias) {
  const float* const bias_row[1] = {bias};  // one row added to every row (step 0)
  gemm<S>(rows, cols, depth, {a, a_row, a_col}, b, ldb, c, ldc, alpha, accumulate,
          bias ? RowAddend<float>{bias_row, 0, 0} : RowAddend<float>{});
}

template <class S, typename S::V (*F)(typename S::V)>
void vector_map_entry(const float* in, float* out, int64_t count) {
  int64_t i = 0;
  for (; i + S::W <= count; i += S::W) S::store(out + i, F(S::load(in + i)));
  for (; i < count; ++i) out[i] = S::reduce_add(S::keep_first(F(S::set1(in[i])), 1, 0.0f));
}

// ---- GELU (the vector math the elementwise ops borrow) ----------------------------

// erfc(z) for z ≥ 0 with fractional error below 1.2e-7 everywhere (the
// Chebyshev fit of Numerical Recipes' erfcc): no cancellation in the tail,
// where GELU(x < 0) = x · erfc(|x|/√2) / 2 is tiny. U vectors at once.
template <class S, int U>
[[gnu::always_inline]] inline void erfc_nonnegative(const typename S::V (&z)[U], typename S::V (&out)[U]) {
  using V = typename S::V;
  V t[U], p[U];
  for_lanes<U>([&](int u) { t[u] = S::div(S::set1(1.0f), S::fmadd(S::set1(0.5f), z[u], S::set1(1.0f))); });
  for_lanes<U>([&](int u) { p[u] = S::set1(0.17087277f); });
#pragma GCC unroll 16
  for (float c : {-0.82215223f, 1.48851587f, -1.13520398f, 0.27886807f, -0.18628806f, 0.09678418f, 0.37409196f,
                  1.00002368f, -1.26551223f})
    for_lanes<U>([&](int u) { p[u] = S::fmadd(p[u], t[u], S::set1(c)); });
  for_lanes<U>([&](int u) { out[u] = S::mul(t[u], S::exp(S::sub(p[u], S::mul(z[u], z[u])))); });
}

// out = x Φ(x) (with grad: grad_out · (Φ(x) + x φ(x))) for U vectors, Φ(x) =
// P(N(0, 1) ≤ x) from erfc on whichever side keeps it accurate.
template <class S, bool Backward, int U>
[[gnu::always_inline]] inline void gelu_lanes(const typename S::V (&x)[U], const typename S::V (&grad_out)[U],
                                              typename S::V (&out)[U]) {
  using V = typename S::V;
  V z[U], tail[U];
  for_lanes<U>([&](int u) { z[u] = S::mul(S::abs(x[u]), S::set1(0.70710678118654752f)); });
  erfc_nonnegative<S, U>(z, tail);
  for_lanes<U>([&](int u) {
    const V half_tail = S::mul(S::set1(0.5f), tail[u]);
    const V cdf = S::select_nonnegative(x[u], S::sub(S::set1(1.0f), half_tail), half_tail);
    if constexpr (!Backward) {
      out[u] = S::mul(x[u], cdf);
    } else {
      const V pdf = S::mul(S::set1(0.39894228040143268f), S::exp(S::mul(S::set1(-0.5f), S::mul(x[u], x[u]))));
      out[u] = S::mul(grad_out[u], S::fmadd(x[u], pdf, cdf));
    }
  });
}

// GELU or its gradient over n floats, kLanes vectors per step; the tail runs
// one vector at a time, the last through a zero-padded vector. The backward
// writes 0 for vectors whose grad_out is all ±0 without computing GELU' (it
// is finite for finite x): in a training step the padded positions' rows,
// whose gradient the pooling zeroes, and the exponentials are most of the work.
template <class S, bool Backward>
void gelu_entry_impl(const float* x, const float* grad_out, float* out, int64_t n) {
  using V = typename S::V;
  constexpr int kLanes = 4;
  // U vectors from xp (and gp, backward) to op.
  auto run = [&]<int U>(const float* xp, const float* gp, float* op, std::integral_constant<int, U>) {
    V xs[U], gs[U], os[U];
    if constexpr (Backward) {
      bool nonzero = false;
      for_lanes<U>([&](int u) {
        gs[u] = S::load(gp + u * S::W);
        nonzero = nonzero || S::any_nonzero(gs[u]);
      });
      if (!nonzero) {
        for_lanes<U>([&](int u) { S::store(op + u * S::W, S::zero()); });
        return;
      }
    }
    for_lanes<U>([&](int u) {
      xs[u] = S::load(xp + u * S::W);
      if constexpr (!Backward) gs[u] = S::zero();
    });
    gelu_lanes<S, Backward, U>(xs, gs, os);
    for_lanes<U>([&](int u) { S::store(op + u * S::W, os[u]); });
  };
  int64_t i = 0;
  for (; i + kLanes * S::W <= n; i += kLanes * S::W)
    run(x + i, Backward ? grad_out + i : nullptr, out + i, std::integral_constant<int, kLanes>{});
  for (; i + S::W <= n; i += S::W)
    run(x + i, Backward ? grad_out + i : nullptr, out + i, std::integral_constant<int, 1>{});
  if (i < n) {
    float xs[S::W] = {}, gs[S::W] = {}, os[S::W];
    for (int64_t j = i; j < n; ++j) {
      xs[j - i] = x[j];
      if (Backward) gs[j - i] = grad_out[j];
    }
    run(xs, gs, os, std::integral_constant<int, 1>{});
    for (int64_t j = i; j < n; ++j) out[j] = os[j - i];
  }
}

template <class S>
void gelu_entry(const float* x, float* out, int64_t n) {
  gelu_entry_impl<S, false>(x, nullptr, out, n);
}
template <class S>
void gelu_backward_entry(const float* x, const float* grad_out, float* grad_in, int64_t n) {
  gelu_entry_impl<S, true>(x, grad_out, grad_in, n);
}

// The machine's limit for hkt-bench: 12 independent FMA chains in registers
// (enough to cover 2 pipes × 4 cycles of latency), no memory traffic.
template <class S>
double fma_loop(int64_t iterations) {
  using V = typename S::V;
  V acc[12];
  for (int j = 0; j < 12; ++j) acc[j] = S::set1(0.001f * float(j));
  const V x = S::set1(0.999999f), y = S::set1(1e-7f);
  for (int64_t it = 0; it < iterations; ++it)
#pragma GCC unroll 12
    for (int j = 0; j < 12; ++j) acc[j] = S::fmadd(acc[j], x, y);
  V total = S::zero();
  for (int j = 0; j < 12; ++j) total = S::add(total, acc[j]);
  volatile float sink = static_cast<float>(S::reduce_add(total));
  (void)sink;
  return 2.0 * 12.0 * S::W * double(iterations);
}

template <class S>
constexpr Path make_path() {
  return Path{S::name,
              S::W,
              &forward<S>,
              &backward<S>,
              &gemm_entry<S>,
              &pack_transposed<S>,
              &unpack_transposed<S>,
              &vector_map_entry<S, &S::exp>,
              &vector_map_entry<S, &S::exp2>,
              &fma_loop<S>,
              &gelu_entry<S>,
              &gelu_backward_entry<S>};
}

}  // namespace
}  // namespace hkt::attention_cpu
