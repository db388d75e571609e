import sys
p=sys.argv[1]
s=open(p).read()
def rep(old,new):
    global s
    assert s.count(old)==1, old
    s=s.replace(old,new)
rep('#include "ops/attention_simd.h"\n','''#include "ops/attention_simd.h"
#include <x86intrin.h>
#include <cstdio>
#include <unistd.h>
namespace hkt::attention_cpu::cyc {
enum { OTHER, F_PACK, F_COARSE, F_L0, F_SOFTMAX, F_PV, F_END, F_MIX, F_PAD, B_DELTA, B_ZERO, B_LOADKEYS, B_PACKV, B_COARSE, B_L0, B_EXP, B_DP, B_DV, B_DK0, B_DQ0, B_POOL, B_DQL, B_DKL, B_UNPACK0, B_UNPACKL, B_FINISH, B_MIX, N };
inline const char* names[N] = {"other","f_pack","f_coarse","f_l0","f_softmax","f_pv","f_end","f_mix","f_pad","b_delta","b_zero","b_loadkeys","b_packv","b_coarse","b_l0","b_exp","b_dP+pool1","b_dV","b_dK0","b_dQ0","b_pool_l","b_dq_l","b_dk_l","b_unpack0","b_unpackl","b_finish","b_mix"};
inline uint64_t total[2][N];
inline thread_local int model = 0;
inline thread_local uint64_t last = 0;
struct Print { ~Print() { char f[64]; std::snprintf(f, sizeof f, "/tmp/exp/cyc-%d.txt", getpid()); FILE* o = std::fopen(f, "w"); if (!o) return; for (int i = 0; i < N; ++i) std::fprintf(o, "%-12s %10.1f %10.1f\\n", names[i], total[0][i] / 1e6, total[1][i] / 1e6); std::fclose(o);} };
inline Print print;
inline void start(int m) { model = m; last = __rdtsc(); }
inline void tick(int i) { uint64_t now = __rdtsc(); __atomic_fetch_add(&total[model][i], now - last, __ATOMIC_RELAXED); last = now; }
}
''')
rep('''  const int64_t key_end = key_limit(i1 - 1, w.valid, p.causal);
  for (int64_t j0 = 0; j0 < key_end; j0 += p.tile) {
    const int64_t j1 = std::min(key_end, j0 + p.tile);
    w.keys = keys.at(j0 / p.tile);
    fused_scores(w, i0, i1, scale * kLog2e<T>);
    softmax_tile(w, i0, rows, j0, j1);
    gemm<S>(rows, dh, j1 - j0, {w.scores.data, w.np, 1}, w.v + j0 * w.rs, w.rs, w.acc.data, dh, T(1), true);
  }''','''  const int64_t key_end = key_limit(i1 - 1, w.valid, p.causal);
  cyc::tick(cyc::OTHER);
  for (int64_t j0 = 0; j0 < key_end; j0 += p.tile) {
    const int64_t j1 = std::min(key_end, j0 + p.tile);
    w.keys = keys.at(j0 / p.tile);
    fused_scores(w, i0, i1, scale * kLog2e<T>);
    softmax_tile(w, i0, rows, j0, j1);
    cyc::tick(cyc::F_SOFTMAX);
    gemm<S>(rows, dh, j1 - j0, {w.scores.data, w.np, 1}, w.v + j0 * w.rs, w.rs, w.acc.data, dh, T(1), true);
    cyc::tick(cyc::F_PV);
  }''')
rep('''    args.log2_sum_exp[head_index * p.length + i] = w.row_max.data[r] + std::log2(row_sum);
  }
}''','''    args.log2_sum_exp[head_index * p.length + i] = w.row_max.data[r] + std::log2(row_sum);
  }
  cyc::tick(cyc::F_END);
}''')
rep('''  gemm<S>(rows, w.keys.geometry[0].padded, dh, {w.q.data[0] + i0 * rs, rs, 1}, w.level_keys(0), np, w.scores.data,
          np, scale * w.weight.data[0], false, coarser_terms(0));
}''','''  cyc::tick(w.grads.data ? cyc::B_COARSE : cyc::F_COARSE);
  gemm<S>(rows, w.keys.geometry[0].padded, dh, {w.q.data[0] + i0 * rs, rs, 1}, w.level_keys(0), np, w.scores.data,
          np, scale * w.weight.data[0], false, coarser_terms(0));
  cyc::tick(w.grads.data ? cyc::B_L0 : cyc::F_L0);
}''')
rep('''    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t head_index = p.head_order[task / tiles];
      if (head_index != packed_head) {''','''    for (int64_t task = 0; task < tasks; ++task) {
      cyc::start(p.levels > 1);
      const int64_t head_index = p.head_order[task / tiles];
      if (head_index != packed_head) {''')
rep('''      const int64_t i0 = (task % tiles) * p.tile, i_end''','''      cyc::tick(cyc::F_PACK);
      const int64_t i0 = (task % tiles) * p.tile, i_end''')
rep('''      if (i1 == i_end) continue;
      zero_rows<S>(args.out''','''      cyc::tick(cyc::F_MIX);
      if (i1 == i_end) continue;
      zero_rows<S>(args.out''')
rep('''                std::numeric_limits<typename S::T>::infinity());
    }
  }
}''','''                std::numeric_limits<typename S::T>::infinity());
      cyc::tick(cyc::F_PAD);
    }
  }
}''')
rep('''  for (int64_t r = 0; r < rows; ++r)
    exp2_shifted_row<S>(w.scores.data + r * np, keys_in_tile(i0 + r, w.valid, p.causal, j0, j1), padded,
                        S::set1(lse[i0 + r]), S::zero());''','''  for (int64_t r = 0; r < rows; ++r)
    exp2_shifted_row<S>(w.scores.data + r * np, keys_in_tile(i0 + r, w.valid, p.causal, j0, j1), padded,
                        S::set1(lse[i0 + r]), S::zero());
  cyc::tick(cyc::B_EXP);''')
rep('''          false, softmax_gradient);''','''          false, softmax_gradient);
  cyc::tick(cyc::B_DP);''')
rep('''                   g.grad_out_scale);
  const T fine_alpha''','''                   g.grad_out_scale);
  cyc::tick(cyc::B_DV);
  const T fine_alpha''')
rep('''                   fine_alpha);
  // dq_l gathers''','''                   fine_alpha);
  cyc::tick(cyc::B_DK0);
  // dq_l gathers''')
rep('''          multiscale ? scale : fine_alpha, !(g.write_queries & 1u));
  if (!multiscale) return;''','''          multiscale ? scale : fine_alpha, !(g.write_queries & 1u));
  cyc::tick(cyc::B_DQ0);
  if (!multiscale) return;''')
rep('''    const T* grad = level_gradient(w, l, sums);
    gemm<S>(rows_l.rows, dh, t.cols, {grad, np, 1}, w.k.data[l] + t.col0 * rs, rs, g.queries[l] + rows_l.row0 * gs,
            gs, scale, !(g.write_queries & (1u << l)));
    gemm_few_rows<S>(dh, t.padded, rows_l.rows, {w.q.data[l] + rows_l.row0 * rs, 1, rs}, grad, np,
                     w.grad_keys_t.data + l * dh * np, np, scale * w.weight.data[l]);''','''    const T* grad = level_gradient(w, l, sums);
    cyc::tick(cyc::B_POOL);
    gemm<S>(rows_l.rows, dh, t.cols, {grad, np, 1}, w.k.data[l] + t.col0 * rs, rs, g.queries[l] + rows_l.row0 * gs,
            gs, scale, !(g.write_queries & (1u << l)));
    cyc::tick(cyc::B_DQL);
    gemm_few_rows<S>(dh, t.padded, rows_l.rows, {w.q.data[l] + rows_l.row0 * rs, 1, rs}, grad, np,
                     w.grad_keys_t.data + l * dh * np, np, scale * w.weight.data[l]);
    cyc::tick(cyc::B_DKL);''')
rep('''    for (int64_t rank = 0; rank < tasks; ++rank) {
      const int64_t head_index''','''    for (int64_t rank = 0; rank < tasks; ++rank) {
      cyc::start(p.levels > 1);
      const int64_t head_index''')
rep('''      row_end = std::min(p.length, round_up(row_end, 8));''','''      row_end = std::min(p.length, round_up(row_end, 8));
      cyc::tick(cyc::B_DELTA);''')
rep('''      // Interleaved key tiles: causally the early tiles carry the most work.''','''      cyc::tick(cyc::B_ZERO);
      // Interleaved key tiles: causally the early tiles carry the most work.''')
rep('''        load_keys<S>(p, w.k.data, w.np, j0, j1, w.keys);''','''        cyc::tick(cyc::B_ZERO);
        load_keys<S>(p, w.k.data, w.np, j0, j1, w.keys);
        cyc::tick(cyc::B_LOADKEYS);''')
rep('''        std::fill(w.grad_keys_t.data, w.grad_keys_t.data + levels * dh * w.np, T(0));''','''        std::fill(w.grad_keys_t.data, w.grad_keys_t.data + levels * dh * w.np, T(0));
        cyc::tick(cyc::B_PACKV);''')
rep('''        unpack_transposed<S>(w.grad_keys_t.data, j1 - j0, dh, w.np, rs, targets.keys[0] + j0 * rs);''','''        unpack_transposed<S>(w.grad_keys_t.data, j1 - j0, dh, w.np, rs, targets.keys[0] + j0 * rs);
        cyc::tick(cyc::B_UNPACK0);''')
rep('''            unpack_transposed<S, true>(w.grad_keys_t.data + l * dh * w.np, t.cols, dh, w.np, targets.shared_stride,
                                       keys_l);
        }
      }''','''            unpack_transposed<S, true>(w.grad_keys_t.data + l * dh * w.np, t.cols, dh, w.np, targets.shared_stride,
                                       keys_l);
        }
        cyc::tick(cyc::B_UNPACKL);
      }''')
rep('''      if (multiscale && chunks == 1) finish_head(head_index, level_grads.data + head_index * levels);
      if (mixed && chunks == 1) mix_head_backward<S>(p, args, head_index);''','''      if (multiscale && chunks == 1) finish_head(head_index, level_grads.data + head_index * levels);
      cyc::tick(cyc::B_FINISH);
      if (mixed && chunks == 1) mix_head_backward<S>(p, args, head_index);
      cyc::tick(cyc::B_MIX);''')
open(p,'w').write(s)
