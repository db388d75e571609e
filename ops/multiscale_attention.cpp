// HKT's fused multi-scale attention (SPEC section 3): forward, backward and
// CPU kernels, on the plan of ops/attention.cpp.
//
//   S[i, j] = Σ_l λ_l · C_l[q_l(i), k_l(j)] · [term l allowed],  C_l = q_l k_lᵀ / sqrt(dh)
//   out = softmax_j(S + mask) v
//
// For a tile of fine queries × fine keys, each level's coarse score tile C_l
// covers only the coarse rows and columns the tile touches (about tile / s^l
// of each) and is added through the index maps; no matrix is upsampled. The
// forward saves out and the row log-sum-exp [B, H, T]; the backward recomputes
// S tile by tile and scatters dS back through the maps:
//   dλ_l = Σ dS ⊙ C_l[maps],  dC_l = λ_l · Σ_{maps} dS,  dq_l = dC_l k_l / sqrt(dh),  dk_l = dC_lᵀ q_l / sqrt(dh).
#include "ops/multiscale_attention.h"

#include <cmath>
#include <type_traits>
#include <utility>
#include <vector>

#include "engine/dispatch.h"
#include "ops/attention_cpu.h"
#include "ops/attention_tiles.h"
#include "ops/common.h"
#include "ops/conv1d_rows.h"
#include "ops/index.h"
#include "ops/softmax.h"

namespace hkt {

// ---- CPU kernels ----------------------------------------------------------
// ops/attention_cpu_kernels.h.

namespace {

// s^l, saturated past T as ops/index.cpp does (the maps are then constant).
int64_t block_of(int64_t length, int64_t level, int64_t stride) {
  int64_t block = 1;
  for (int64_t l = 0; l < level && block <= length; ++l) block *= stride;
  return block;
}

attention_cpu::Problem multiscale_problem(const MultiscaleAttentionDims& dims, const std::vector<Tensor>& queries,
                                          const Tensor& lengths) {
  attention_cpu::Problem p = attention_tiles::cpu_problem(dims, lengths);
  p.levels = dims.levels;
  p.stride = dims.stride;
  for (int64_t l = 0; l < dims.levels; ++l) {
    p.level_rows.push_back(queries[l].size(dims.heads_interleaved ? 1 : 2));
    p.level_block.push_back(block_of(dims.length, l, dims.stride));
  }
  return p;
}

template <class T>
attention_cpu::ForwardArgs<T> forward_args(const std::vector<Tensor>& queries, const std::vector<Tensor>& keys,
                                           const Tensor& v, const Tensor& level_weights, const Tensor& out,
                                           const Tensor& log_sum_exp, const std::vector<T>& taps,
                                           const attention_tiles::MixTensors* mix) {
  attention_cpu::ForwardArgs<T> args;
  for (size_t l = 0; l < queries.size(); ++l) {
    args.queries.push_back(queries[l].data<T>());
    args.keys.push_back(keys[l].data<T>());
  }
  args.values = v.data<T>();
  args.level_weights = level_weights.data<T>();
  args.out = out.data<T>();
  args.log2_sum_exp = log_sum_exp.data<T>();
  if (mix) {
    args.mix.gates = mix->gates.data<T>();
    args.mix.taps = taps.data();
    args.mix.bias = mix->bias.defined() ? mix->bias.data<T>() : nullptr;
    args.mix.taps_count = mix->weight.size(1);
    args.mix.mixed = mix->mixed.defined() ? mix->mixed.data<T>() : nullptr;
    args.mix.partials = mix->partials.defined() ? mix->partials.data<T>() : nullptr;
  }
  return args;
}

// The convolution's weight [C, k] by tap, [k, C], as HybridMix reads it; empty without a mix.
template <class T>
std::vector<T> mix_taps(const attention_tiles::MixTensors* mix) {
  if (!mix) return {};
  return weight_by_tap(mix->weight.data<T>(), mix->weight.size(0), mix->weight.size(1));
}

void multiscale_attention_cpu(const std::vector<Tensor>& queries, const std::vector<Tensor>& keys, const Tensor& v,
                              const Tensor& level_weights, const Tensor& lengths, const MultiscaleAttentionDims& dims,
                              Tensor& out, Tensor& log_sum_exp) {
  attention_tiles::multiscale_forward_cpu(queries, keys, v, level_weights, lengths, dims, out, log_sum_exp, nullptr);
}

void multiscale_attention_backward_cpu(const std::vector<Tensor>& queries, const std::vector<Tensor>& keys,
                                       const Tensor& v, const Tensor& level_weights, const Tensor& lengths,
                                       const Tensor& out, const Tensor& log_sum_exp, const Tensor& grad_out,
                                       const MultiscaleAttentionDims& dims, std::vector<Tensor>& grad_queries,
                                       std::vector<Tensor>& grad_keys, Tensor& grad_v, Tensor& grad_level_weights) {
  attention_tiles::multiscale_backward_cpu(queries, keys, v, level_weights, lengths, out, log_sum_exp, grad_out, dims,
                                           grad_queries, grad_keys, grad_v, grad_level_weights, nullptr);
}

}  // namespace

void attention_tiles::multiscale_forward_cpu(const std::vector<Tensor>& queries, const std::vector<Tensor>& keys,
                                             const Tensor& v, const Tensor& level_weights, const Tensor& lengths,
                                             const MultiscaleAttentionDims& dims, Tensor& out, Tensor& log_sum_exp,
                                             const MixTensors* mix) {
  const attention_cpu::Problem p = multiscale_problem(dims, queries, lengths);
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const std::vector<T> taps = mix_taps<T>(mix);
    const attention_cpu::ForwardArgs<T> args = forward_args<T>(queries, keys, v, level_weights, out, log_sum_exp,
                                                               taps, mix);
    if constexpr (std::is_same_v<T, double>)
      attention_cpu::forward_plain(p, args);
    else
      attention_cpu::select_path(dims.head_dim).forward(p, args);
  };
  if (v.dtype() == DType::Float64)
    run(double());
  else
    run(float());
}

void attention_tiles::multiscale_backward_cpu(const std::vector<Tensor>& queries, const std::vector<Tensor>& keys,
                                              const Tensor& v, const Tensor& level_weights, const Tensor& lengths,
                                              const Tensor& out, const Tensor& log_sum_exp, const Tensor& grad_out,
                                              const MultiscaleAttentionDims& dims, std::vector<Tensor>& grad_queries,
                                              std::vector<Tensor>& grad_keys, Tensor& grad_v,
                                              Tensor& grad_level_weights, const MixTensors* mix) {
  const attention_cpu::Problem p = multiscale_problem(dims, queries, lengths);
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const std::vector<T> taps = mix_taps<T>(mix);
    attention_cpu::BackwardArgs<T> args;
    args.forward = forward_args<T>(queries, keys, v, level_weights, out, log_sum_exp, taps, mix);
    args.grad_out = grad_out.data<T>();
    for (size_t l = 0; l < queries.size(); ++l) {
      args.grad_queries.push_back(grad_queries[l].data<T>());
      args.grad_keys.push_back(grad_keys[l].data<T>());
    }
    args.grad_values = grad_v.data<T>();
    args.accumulate_values = dims.accumulate_grad_v;
    args.grad_level_weights = grad_level_weights.data<T>();
    if constexpr (std::is_same_v<T, double>)
      attention_cpu::backward_plain(p, args);
    else
      attention_cpu::select_path(dims.head_dim).backward(p, args);
  };
  if (v.dtype() == DType::Float64)
    run(double());
  else
    run(float());
}


HKT_REGISTER_KERNEL("multiscale_attention", DeviceType::CPU, multiscale_attention_cpu);
HKT_REGISTER_KERNEL("multiscale_attention_backward", DeviceType::CPU, multiscale_attention_backward_cpu);

// ---- op -------------------------------------------------------------------

namespace {

constexpr const char* kOp = "multiscale_attention";

}  // namespace

void attention_tiles::check_multiscale_args(const char* op, const std::vector<Tensor>& q_levels, const std::vector<Tensor>& k_levels, const Tensor& v,
                           const Tensor& level_logits, int64_t stride, HeadLayout layout) {
  const int64_t levels = static_cast<int64_t>(q_levels.size());
  check(levels >= 1, op, ": no levels (q_levels is empty)");
  check(static_cast<int64_t>(k_levels.size()) == levels, op, ": ", levels, " query levels but ", k_levels.size(),
        " key levels");
  check(stride >= 2, op, ": stride ", stride, " must be at least 2");
  check_floating(op, v);
  check_floating(op, level_logits);
  check(v.dim() == 4 && v.numel() > 0, op, ": v ", v.shape(), " is not a non-empty ",
        attention_tiles::layout_str(layout));
  const bool interleaved = layout == HeadLayout::BTHD;
  const int64_t batch = v.size(0), heads = v.size(interleaved ? 2 : 1), length = v.size(interleaved ? 1 : 2),
                dh = v.size(3);
  for (int64_t l = 0; l < levels; ++l) {
    check_floating(op, q_levels[l]);
    check_floating(op, k_levels[l]);
    check_compatible(op, {q_levels[l], k_levels[l], v, level_logits});
    const int64_t rows = level_length(length, l, stride);
    const Shape expected = interleaved ? Shape{batch, rows, heads, dh} : Shape{batch, heads, rows, dh};
    for (const auto& [name, t] : {std::pair{"q_levels", q_levels[l]}, std::pair{"k_levels", k_levels[l]}})
      check(t.shape() == expected, op, ": ", name, "[", l, "] ", t.shape(), " but expected ",
            expected, " (v ", v.shape(), ", T_", l, " = level_length(", length, ", ", l, ", ",
            stride, "))");
  }
  check(level_logits.shape() == Shape{heads, levels}, op, ": level_logits ", level_logits.shape(),
        " but expected [H, L] = [", heads, ", ", levels, "]");
}

Tensor multiscale_attention(const std::vector<Tensor>& q_levels, const std::vector<Tensor>& k_levels, const Tensor& v,
                            const Tensor& level_logits, const Tensor& lengths, int64_t stride, bool causal,
                            HeadLayout layout, PaddedRows padded) {
  attention_tiles::check_multiscale_args(kOp, q_levels, k_levels, v, level_logits, stride, layout);
  if (padded == PaddedRows::Zero && v.device().type != DeviceType::CPU)
    return attention_tiles::zero_padded_rows(
        multiscale_attention(q_levels, k_levels, v, level_logits, lengths, stride, causal, layout), lengths, layout);
  if (layout == HeadLayout::BTHD && v.device().type != DeviceType::CPU) {
    using attention_tiles::swap_heads_and_time;
    std::vector<Tensor> queries, keys;
    for (const Tensor& q : q_levels) queries.push_back(swap_heads_and_time(q));
    for (const Tensor& k : k_levels) keys.push_back(swap_heads_and_time(k));
    return swap_heads_and_time(
        multiscale_attention(queries, keys, swap_heads_and_time(v), level_logits, lengths, stride, causal));
  }
  MultiscaleAttentionDims dims;
  attention_tiles::fill_dims(dims, v, causal, layout);
  dims.levels = static_cast<int64_t>(q_levels.size());
  dims.stride = stride;
  dims.zero_padded_rows = padded == PaddedRows::Zero;
  Tensor valid = checked_sequence_lengths(kOp, lengths, dims.batch, dims.length, 1, v.device());

  Tensor level_weights = softmax(level_logits, 1);  // λ [H, L]; its own node carries dλ to level_logits
  Tensor out = Tensor::empty(v.shape(), v.dtype(), v.device());
  Tensor log_sum_exp = Tensor::empty({dims.batch, dims.heads, dims.length}, v.dtype(), v.device());
  dispatch::kernel<MultiscaleAttentionKernel>(kOp, v.device())(q_levels, k_levels, v, level_weights, valid, dims, out,
                                                               log_sum_exp);
  std::vector<Tensor> inputs(q_levels);
  inputs.insert(inputs.end(), k_levels.begin(), k_levels.end());
  inputs.push_back(v);
  inputs.push_back(level_weights);
  std::vector<Tensor> saved;
  for (const Tensor& t : inputs) saved.push_back(t.detach());
  record(kOp, inputs, out,
         [saved, valid, dims, out = out.detach(), log_sum_exp](const Tensor& grad_out) -> std::vector<Tensor> {
           const size_t levels = static_cast<size_t>(dims.levels);
           const std::vector<Tensor> queries(saved.begin(), saved.begin() + levels);
           const std::vector<Tensor> keys(saved.begin() + levels, saved.begin() + 2 * levels);
           const Tensor &values = saved[2 * levels], &level_weights = saved[2 * levels + 1];
           std::vector<Tensor> grad_queries, grad_keys;
           for (size_t l = 0; l < levels; ++l) {
             grad_queries.push_back(Tensor::empty(queries[l].shape(), values.dtype(), values.device()));
             grad_keys.push_back(Tensor::empty(keys[l].shape(), values.dtype(), values.device()));
           }
           // On the CPU dV adds into the gradient the values already have (HKT's hybrid head reads
           // them too), where autograd hands it over.
           const Tensor sum = values.device().type == DeviceType::CPU ? take_gradient_sum(2 * levels) : Tensor();
           MultiscaleAttentionDims call = dims;
           call.accumulate_grad_v = sum.defined();
           Tensor grad_v = sum.defined() ? sum : Tensor::empty(values.shape(), values.dtype(), values.device());
           Tensor grad_level_weights = Tensor::empty(level_weights.shape(), values.dtype(), values.device());
           dispatch::kernel<MultiscaleAttentionBackwardKernel>("multiscale_attention_backward", values.device())(
               queries, keys, values, level_weights, valid, out, log_sum_exp, grad_out, call, grad_queries, grad_keys,
               grad_v, grad_level_weights);
           std::vector<Tensor> grads(grad_queries);
           grads.insert(grads.end(), grad_keys.begin(), grad_keys.end());
           grads.push_back(grad_v);
           grads.push_back(grad_level_weights);
           return grads;
         });
  return out;
}

}  // namespace hkt
