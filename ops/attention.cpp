// Fused attention: forward, backward and CPU kernels (FlashAttention-2 plan).
//
//   S = q kᵀ / sqrt(dh) + mask,  P = softmax_j(S),  out = P v
//
// The forward walks tiles of queries × keys with an online softmax and saves
// only out [B, H, T, dh] and the row log-sum-exp lse [B, H, T]; the backward
// recomputes P = exp(S − lse) tile by tile. Nothing T × T is ever allocated.
#include "ops/attention.h"

#include <atomic>
#include <cmath>
#include <vector>

#include "engine/dispatch.h"
#include "ops/attention_tiles.h"
#include "ops/common.h"

namespace hkt {

namespace {
std::atomic<int64_t> cpu_tile{64};
}  // namespace

int64_t attention_cpu_tile() { return cpu_tile.load(); }

void set_attention_cpu_tile(int64_t tile) {
  attention_tiles::visit_tile("set_attention_cpu_tile", tile, [](auto) {});
  cpu_tile.store(tile);
}

namespace attention_tiles {

Tensor checked_lengths(const char* op, const Tensor& lengths, int64_t batch, int64_t length, Device device) {
  check_defined(op, lengths, "lengths");
  check(lengths.dim() == 1 && lengths.size(0) == batch, op, ": lengths ", lengths.str(), " but batch ", batch,
        " (expected [", batch, "])");
  check(lengths.dtype() == DType::Int32 || lengths.dtype() == DType::Int64, op,
        ": lengths must be int32 or int64, got ", lengths.str());
  std::vector<int64_t> values = lengths.to_vector<int64_t>();
  for (int64_t b = 0; b < batch; ++b)
    check(values[b] >= 1 && values[b] <= length, op, ": length ", values[b], " of example ", b, " is outside [1, ",
          length, "]");
  return Tensor::from_vector(values, {batch}, device);
}

}  // namespace attention_tiles

// ---- CPU kernels ----------------------------------------------------------

namespace {

using namespace attention_tiles;

// One task per (batch, head, query tile), each written by one thread: the
// result does not depend on the thread count.
template <class T, int64_t Tile>
void attention_forward_tiles(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& lengths,
                             const AttentionDims& dims, Tensor& out, Tensor& log_sum_exp) {
  const int64_t length = dims.length, dh = dims.head_dim;
  const int64_t query_tiles = (length + Tile - 1) / Tile, tasks = dims.batch * dims.heads * query_tiles;
  const T scale = T(1) / std::sqrt(T(dh));
  const T* pq = q.data<T>();
  const T* pk = k.data<T>();
  const T* pv = v.data<T>();
  const int64_t* valid_keys = lengths.data<int64_t>();
  T* po = out.data<T>();
  T* plse = log_sum_exp.data<T>();
#pragma omp parallel if (tasks * Tile * length * dh > HKT_OMP_MIN_WORK)
  {
    std::vector<T> keys_t(dh * Tile), acc(Tile * dh);
    T scores[Tile], running_max[Tile], running_sum[Tile];
#pragma omp for schedule(dynamic)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t head_index = task / query_tiles, i0 = (task % query_tiles) * Tile;
      const int64_t i1 = std::min(length, i0 + Tile), rows = i1 - i0;
      const int64_t valid = valid_keys[head_index / dims.heads];
      const int64_t head_offset = head_index * length * dh;
      std::fill(acc.begin(), acc.end(), T(0));
      std::fill(running_max, running_max + Tile, -std::numeric_limits<T>::infinity());
      std::fill(running_sum, running_sum + Tile, T(0));
      const int64_t key_end = key_limit(i1 - 1, valid, dims.causal);
      for (int64_t j0 = 0; j0 < key_end; j0 += Tile) {
        const int64_t j1 = std::min(key_end, j0 + Tile);
        load_transposed(pk + head_offset + j0 * dh, j1 - j0, dh, Tile, keys_t.data());
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t count = std::min(key_limit(i0 + r, valid, dims.causal), j1) - j0;
          if (count <= 0) continue;
          score_row(pq + head_offset + (i0 + r) * dh, keys_t.data(), dh, Tile, count, scale, scores);
          online_softmax_step(scores, count, pv + head_offset + j0 * dh, dh, running_max[r], running_sum[r],
                              acc.data() + r * dh);
        }
      }
      for (int64_t r = 0; r < rows; ++r)
        finish_row(acc.data() + r * dh, running_max[r], running_sum[r], dh, po + head_offset + (i0 + r) * dh,
                   plse + head_index * length + i0 + r);
    }
  }
}

// FlashAttention-2's backward, with D_i = Σ_d dO_i · O_i:
//   P = exp(S − lse),  dV += Pᵀ dO,  dP = dO vᵀ,  dS = P ⊙ (dP − D),
//   dQ += dS k / sqrt(dh),  dK += dSᵀ q / sqrt(dh)
// One task per (batch, head): its dQ, dK, dV rows are written by one thread,
// key tiles outer and queries inner in a fixed order.
template <class T, int64_t Tile>
void attention_backward_tiles(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& lengths,
                              const Tensor& out, const Tensor& log_sum_exp, const Tensor& grad_out,
                              const AttentionDims& dims, Tensor& grad_q, Tensor& grad_k, Tensor& grad_v) {
  const int64_t length = dims.length, dh = dims.head_dim, tasks = dims.batch * dims.heads;
  const T scale = T(1) / std::sqrt(T(dh));
  const T *pq = q.data<T>(), *pk = k.data<T>(), *pv = v.data<T>(), *po = out.data<T>();
  const T *plse = log_sum_exp.data<T>(), *pgo = grad_out.data<T>();
  const int64_t* valid_keys = lengths.data<int64_t>();
  T *pgq = grad_q.data<T>(), *pgk = grad_k.data<T>(), *pgv = grad_v.data<T>();
#pragma omp parallel if (tasks * length * length * dh > HKT_OMP_MIN_WORK)
  {
    std::vector<T> keys_t(dh * Tile), values_t(dh * Tile), delta(length);
    T probs[Tile], grad_probs[Tile];
#pragma omp for schedule(dynamic)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t offset = task * length * dh, valid = valid_keys[task / dims.heads];
      const T *qs = pq + offset, *ks = pk + offset, *vs = pv + offset, *go = pgo + offset;
      const T* lse = plse + task * length;
      T *gq = pgq + offset, *gk = pgk + offset, *gv = pgv + offset;
      std::fill(gq, gq + length * dh, T(0));
      std::fill(gk, gk + length * dh, T(0));
      std::fill(gv, gv + length * dh, T(0));
      for (int64_t i = 0; i < length; ++i) delta[i] = dot(go + i * dh, po + offset + i * dh, dh);
      for (int64_t j0 = 0; j0 < valid; j0 += Tile) {
        const int64_t j1 = std::min(valid, j0 + Tile);
        load_transposed(ks + j0 * dh, j1 - j0, dh, Tile, keys_t.data());
        load_transposed(vs + j0 * dh, j1 - j0, dh, Tile, values_t.data());
        for (int64_t i = dims.causal ? j0 : 0; i < length; ++i) {  // causally, rows i < j0 see none of these keys
          const int64_t count = std::min(key_limit(i, valid, dims.causal), j1) - j0;
          if (count <= 0) continue;
          const T* query = qs + i * dh;
          const T* grad_row = go + i * dh;
          score_row(query, keys_t.data(), dh, Tile, count, scale, probs);
          for (int64_t c = 0; c < count; ++c) probs[c] = std::exp(probs[c] - lse[i]);
          score_row(grad_row, values_t.data(), dh, Tile, count, T(1), grad_probs);
          for (int64_t c = 0; c < count; ++c) {
            const T grad_score = probs[c] * (grad_probs[c] - delta[i]) * scale;
            add_scaled(gv + (j0 + c) * dh, grad_row, probs[c], dh);
            add_scaled(gk + (j0 + c) * dh, query, grad_score, dh);
            add_scaled(gq + i * dh, ks + (j0 + c) * dh, grad_score, dh);
          }
        }
      }
    }
  }
}

void attention_cpu(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& lengths, const AttentionDims& dims,
                   Tensor& out, Tensor& log_sum_exp) {
  visit_floating("attention", q.dtype(), [&](auto tag) {
    using T = decltype(tag);
    visit_tile("attention", dims.tile, [&](auto tile) {
      attention_forward_tiles<T, decltype(tile)::value>(q, k, v, lengths, dims, out, log_sum_exp);
    });
  });
}

void attention_backward_cpu(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& lengths, const Tensor& out,
                            const Tensor& log_sum_exp, const Tensor& grad_out, const AttentionDims& dims,
                            Tensor& grad_q, Tensor& grad_k, Tensor& grad_v) {
  visit_floating("attention_backward", q.dtype(), [&](auto tag) {
    using T = decltype(tag);
    visit_tile("attention_backward", dims.tile, [&](auto tile) {
      attention_backward_tiles<T, decltype(tile)::value>(q, k, v, lengths, out, log_sum_exp, grad_out, dims, grad_q,
                                                         grad_k, grad_v);
    });
  });
}

}  // namespace

HKT_REGISTER_KERNEL("attention", DeviceType::CPU, attention_cpu);
HKT_REGISTER_KERNEL("attention_backward", DeviceType::CPU, attention_backward_cpu);

// ---- op -------------------------------------------------------------------

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& lengths, bool causal) {
  const char* op = "attention";
  check_floating(op, q);
  check_floating(op, k);
  check_floating(op, v);
  check_compatible(op, {q, k, v});
  const std::string shapes =
      "q " + shape_str(q.shape()) + ", k " + shape_str(k.shape()) + ", v " + shape_str(v.shape());
  check(q.dim() == 4 && q.shape() == k.shape() && q.shape() == v.shape(), op, ": ", shapes,
        ": expected q, k and v of one shape [B, H, T, dh]");
  check(q.numel() > 0, op, ": ", shapes, ": empty tensors");
  AttentionDims dims;
  attention_tiles::fill_dims(dims, q, causal);
  Tensor valid = attention_tiles::checked_lengths(op, lengths, dims.batch, dims.length, q.device());

  Tensor out = Tensor::empty(q.shape(), q.dtype(), q.device());
  Tensor log_sum_exp = Tensor::empty({dims.batch, dims.heads, dims.length}, q.dtype(), q.device());
  dispatch::kernel<AttentionKernel>(op, q.device())(q, k, v, valid, dims, out, log_sum_exp);
  record(op, {q, k, v}, out,
         [q = q.detach(), k = k.detach(), v = v.detach(), valid, dims, out = out.detach(),
          log_sum_exp](const Tensor& grad_out) -> std::vector<Tensor> {
           Tensor grad_q = Tensor::empty(q.shape(), q.dtype(), q.device());
           Tensor grad_k = Tensor::empty(q.shape(), q.dtype(), q.device());
           Tensor grad_v = Tensor::empty(q.shape(), q.dtype(), q.device());
           dispatch::kernel<AttentionBackwardKernel>("attention_backward", q.device())(
               q, k, v, valid, out, log_sum_exp, grad_out, dims, grad_q, grad_k, grad_v);
           return {grad_q, grad_k, grad_v};
         });
  return out;
}

}  // namespace hkt
