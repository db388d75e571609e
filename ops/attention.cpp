// Fused attention: forward, backward and CPU kernels (FlashAttention-2 plan).
//
//   S = q kᵀ / sqrt(dh) + mask,  P = softmax_j(S),  out = P v
//
// The forward walks tiles of queries × keys with an online softmax and saves
// only out [B, H, T, dh] and the row log-sum-exp lse [B, H, T]; the backward
// recomputes P = exp(S − lse) tile by tile. Nothing T × T is ever allocated.
// (The CPU kernels keep lse in base 2, ops/attention_cpu.h; only their own
// backward reads it.)
#include "ops/attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <numeric>
#include <vector>

#include "engine/dispatch.h"
#include "ops/attention_cpu.h"
#include "ops/attention_tiles.h"
#include "ops/common.h"
#include "ops/mask.h"
#include "ops/shape.h"

namespace hkt {

namespace {
std::atomic<int64_t> cpu_tile{0};  // 0: the default for the problem
}  // namespace

int64_t attention_cpu_tile(bool causal) {
  const int64_t tile = cpu_tile.load();
  return tile != 0 ? tile : causal ? 64 : 128;
}

void set_attention_cpu_tile(int64_t tile) {
  if (tile != 0) attention_tiles::check_tile("set_attention_cpu_tile", tile);
  cpu_tile.store(tile);
}

namespace attention_tiles {

attention_cpu::Problem cpu_problem(const AttentionDims& dims, const Tensor& lengths) {
  attention_cpu::Problem p;
  p.batch = dims.batch;
  p.heads = dims.heads;
  p.length = dims.length;
  p.head_dim = dims.head_dim;
  p.causal = dims.causal;
  p.tile = dims.tile;
  p.lengths = lengths.data<int64_t>();
  p.heads_interleaved = dims.heads_interleaved;
  p.zero_padded_rows = dims.zero_padded_rows;
  p.parallel = dims.batch * dims.heads * dims.length * dims.length * dims.head_dim > HKT_OMP_MIN_WORK;
  p.head_order.resize(static_cast<size_t>(dims.batch * dims.heads));
  std::iota(p.head_order.begin(), p.head_order.end(), int64_t(0));
  std::stable_sort(p.head_order.begin(), p.head_order.end(),
                   [&](int64_t a, int64_t b) { return p.lengths[a / p.heads] > p.lengths[b / p.heads]; });
  return p;
}

Tensor swap_heads_and_time(const Tensor& t) { return permute(t, {0, 2, 1, 3}); }

Tensor zero_padded_rows(const Tensor& out, const Tensor& lengths, HeadLayout layout) {
  const bool interleaved = layout == HeadLayout::BTHD;
  const int64_t batch = out.size(0), length = out.size(interleaved ? 1 : 2);
  const Shape rows = interleaved ? Shape{batch, length, 1, 1} : Shape{batch, 1, length, 1};
  return masked_fill(out, padded_positions(lengths, length, rows, out.dtype(), out.device()), 0.0);
}

void check_tile(const char* op, int64_t tile) {
  check(tile == 8 || tile == 16 || tile == 32 || tile == 64 || tile == 128, op, ": tile ", tile,
        " is not one of 8, 16, 32, 64, 128");
}

}  // namespace attention_tiles

// ---- CPU kernels ----------------------------------------------------------
// ops/attention_cpu_kernels.h, run as the multi-scale kernel with one level.

namespace {

attention_cpu::Problem cpu_problem(const AttentionDims& dims, const Tensor& lengths) {
  attention_cpu::Problem p = attention_tiles::cpu_problem(dims, lengths);
  p.level_rows = {dims.length};
  p.level_block = {1};
  return p;
}

template <class T>
attention_cpu::ForwardArgs<T> forward_args(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                           const Tensor& log_sum_exp) {
  attention_cpu::ForwardArgs<T> args;
  args.queries = {q.data<T>()};
  args.keys = {k.data<T>()};
  args.values = v.data<T>();
  args.out = out.data<T>();
  args.log2_sum_exp = log_sum_exp.data<T>();
  return args;
}

void attention_forward_cpu(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& lengths, const AttentionDims& dims,
                           Tensor& out, Tensor& log_sum_exp) {
  const attention_cpu::Problem p = cpu_problem(dims, lengths);
  if (q.dtype() == DType::Float64)
    return attention_cpu::forward_plain(p, forward_args<double>(q, k, v, out, log_sum_exp));
  attention_cpu::select_path(dims.head_dim).forward(p, forward_args<float>(q, k, v, out, log_sum_exp));
}

template <class T>
attention_cpu::BackwardArgs<T> backward_args(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                             const Tensor& log_sum_exp, const Tensor& grad_out, Tensor& grad_q,
                                             Tensor& grad_k, Tensor& grad_v) {
  attention_cpu::BackwardArgs<T> args;
  args.forward = forward_args<T>(q, k, v, out, log_sum_exp);
  args.grad_out = grad_out.data<T>();
  args.grad_queries = {grad_q.data<T>()};
  args.grad_keys = {grad_k.data<T>()};
  args.grad_values = grad_v.data<T>();
  return args;
}

void attention_backward_cpu(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& lengths, const Tensor& out,
                            const Tensor& log_sum_exp, const Tensor& grad_out, const AttentionDims& dims,
                            Tensor& grad_q, Tensor& grad_k, Tensor& grad_v) {
  const attention_cpu::Problem p = cpu_problem(dims, lengths);
  if (q.dtype() == DType::Float64)
    return attention_cpu::backward_plain(
        p, backward_args<double>(q, k, v, out, log_sum_exp, grad_out, grad_q, grad_k, grad_v));
  attention_cpu::select_path(dims.head_dim)
      .backward(p, backward_args<float>(q, k, v, out, log_sum_exp, grad_out, grad_q, grad_k, grad_v));
}

}  // namespace

HKT_REGISTER_KERNEL("attention", DeviceType::CPU, attention_forward_cpu);
HKT_REGISTER_KERNEL("attention_backward", DeviceType::CPU, attention_backward_cpu);

// ---- op -------------------------------------------------------------------

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& lengths, bool causal,
                 HeadLayout layout, PaddedRows padded) {
  const char* op = "attention";
  check_floating(op, q);
  check_floating(op, k);
  check_floating(op, v);
  check_compatible(op, {q, k, v});
  check(q.dim() == 4 && q.shape() == k.shape() && q.shape() == v.shape(), op, ": q ", q.shape(), ", k ", k.shape(),
        ", v ", v.shape(), ": expected q, k and v of one shape ", attention_tiles::layout_str(layout));
  check(q.numel() > 0, op, ": q ", q.shape(), ", k ", k.shape(), ", v ", v.shape(), ": empty tensors");
  if (padded == PaddedRows::Zero && q.device().type != DeviceType::CPU)
    return attention_tiles::zero_padded_rows(attention(q, k, v, lengths, causal, layout), lengths, layout);
  if (layout == HeadLayout::BTHD && q.device().type != DeviceType::CPU) {
    using attention_tiles::swap_heads_and_time;
    return swap_heads_and_time(
        attention(swap_heads_and_time(q), swap_heads_and_time(k), swap_heads_and_time(v), lengths, causal));
  }
  AttentionDims dims;
  attention_tiles::fill_dims(dims, q, causal, layout);
  dims.zero_padded_rows = padded == PaddedRows::Zero;
  Tensor valid = checked_sequence_lengths(op, lengths, dims.batch, dims.length, 1, q.device());

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
