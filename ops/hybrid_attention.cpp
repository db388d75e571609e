// HKT's hybrid head fused with its multi-scale attention (ops/hybrid_attention.h):
// the op, and CPU kernels that are the multi-scale ones with the mix folded in
// (attention_cpu::HybridMix; ops/attention_cpu_kernels.h).
#include "ops/hybrid_attention.h"

#include <utility>
#include <vector>

#include "engine/dispatch.h"
#include "ops/attention_tiles.h"
#include "ops/common.h"
#include "ops/elementwise.h"
#include "ops/hybrid_mix.h"
#include "ops/shape.h"
#include "ops/softmax.h"

namespace hkt {

// ---- CPU kernels ----------------------------------------------------------

namespace {

void hybrid_attention_cpu(const std::vector<Tensor>& queries, const std::vector<Tensor>& keys, const Tensor& v,
                          const Tensor& level_weights, const Tensor& lengths, const Tensor& weight, const Tensor& bias,
                          const Tensor& gates, const MultiscaleAttentionDims& dims, Tensor& attended,
                          Tensor& log_sum_exp, Tensor& out) {
  const attention_tiles::MixTensors mix{weight, bias, gates, out, Tensor()};
  attention_tiles::multiscale_forward_cpu(queries, keys, v, level_weights, lengths, dims, attended, log_sum_exp, &mix);
}

// The kernels leave the mix's dW, dbias and dβ as a partial per (batch,
// head); summed here over the batch in order, so that the result does not
// depend on the thread count.
void hybrid_attention_backward_cpu(const std::vector<Tensor>& queries, const std::vector<Tensor>& keys,
                                   const Tensor& v, const Tensor& level_weights, const Tensor& lengths,
                                   const Tensor& weight, const Tensor& bias, const Tensor& gates,
                                   const Tensor& attended, const Tensor& log_sum_exp, const Tensor& grad_out,
                                   const MultiscaleAttentionDims& dims, std::vector<Tensor>& grad_queries,
                                   std::vector<Tensor>& grad_keys, Tensor& grad_v, Tensor& grad_level_weights,
                                   Tensor& grad_weight, Tensor& grad_bias, Tensor& grad_gates) {
  const int64_t batch = dims.batch, heads = dims.heads, dh = dims.head_dim, k = weight.size(1);
  const attention_tiles::MixTensors mix{weight, bias, gates, Tensor(),
                                        Tensor::empty({batch * heads, k + 2, dh}, v.dtype(), v.device())};
  attention_tiles::multiscale_backward_cpu(queries, keys, v, level_weights, lengths, attended, log_sum_exp, grad_out,
                                           dims, grad_queries, grad_keys, grad_v, grad_level_weights, &mix);
  visit_floating(kernels::hybrid_multiscale_attention_backward, v.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* partials = mix.partials.data<T>();  // [B · H, k + 2, dh]: dW by tap, dbias, dβ per channel
    T *dw = grad_weight.data<T>(), *dgates = grad_gates.data<T>();
    T* dbias = grad_bias.defined() ? grad_bias.data<T>() : nullptr;
    for (int64_t h = 0; h < heads; ++h) {
      T gate_total = 0;
      for (int64_t d = 0; d < dh; ++d) {
        const int64_t channel = h * dh + d;
        for (int64_t r = 0; r < k + 2; ++r) {
          T total = 0;
          for (int64_t b = 0; b < batch; ++b) total += partials[((b * heads + h) * (k + 2) + r) * dh + d];
          if (r < k)
            dw[channel * k + r] = total;
          else if (r == k && dbias)
            dbias[channel] = total;
          else if (r == k + 1)
            gate_total += total;
        }
      }
      dgates[h] = gate_total;
    }
  });
}

}  // namespace

HKT_REGISTER_KERNEL(kernels::hybrid_multiscale_attention, DeviceType::CPU, hybrid_attention_cpu);
HKT_REGISTER_KERNEL(kernels::hybrid_multiscale_attention_backward, DeviceType::CPU, hybrid_attention_backward_cpu);

// ---- op -------------------------------------------------------------------

namespace {

void check_mix_args(const char* op, const Tensor& v, const Tensor& weight, const Tensor& bias, const Tensor& gates) {
  check_defined(op, weight, "weight");
  check_defined(op, gates, "gates");
  check_floating(op, weight);
  check_floating(op, gates);
  const int64_t heads = v.size(2), channels = heads * v.size(3);
  check(weight.dim() == 2 && weight.size(0) == channels && weight.size(1) > 0, op, ": v ", v.shape(), " has C = H · dh = ",
        channels, " channels but weight ", weight.shape(), " (expected [C, k], k > 0)");
  check(gates.shape() == Shape{heads}, op, ": v ", v.shape(), " has ", heads, " heads but gates ", gates.shape(),
        " (expected one β per head, [H])");
  if (!bias.defined()) return check_compatible(op, {v, weight, gates});
  check_floating(op, bias);
  check(bias.shape() == Shape{channels}, op, ": v ", v.shape(), " has C = ", channels, " channels but bias ",
        bias.shape(), " (expected [C])");
  check_compatible(op, {v, weight, gates, bias});
}

}  // namespace

Tensor gates_per_channel(const Tensor& gates, int64_t head_dim) {
  const int64_t heads = gates.size(0);
  return reshape(broadcast_to(reshape(gates, {heads, 1}), {heads, head_dim}), {heads * head_dim});
}

Tensor hybrid_multiscale_attention(const std::vector<Tensor>& q_levels, const std::vector<Tensor>& k_levels,
                                   const Tensor& v, const Tensor& level_logits, const Tensor& lengths, int64_t stride,
                                   bool causal, const Tensor& weight, const Tensor& bias, const Tensor& gates,
                                   PaddedRows padded) {
  const char* op = kernels::hybrid_multiscale_attention;
  attention_tiles::check_multiscale_args(op, q_levels, k_levels, v, level_logits, stride, HeadLayout::BTHD);
  check_mix_args(op, v, weight, bias, gates);
  const int64_t heads = v.size(2), dh = v.size(3);
  if (v.device().type != DeviceType::CPU) {
    const Tensor attended =
        multiscale_attention(q_levels, k_levels, v, level_logits, lengths, stride, causal, HeadLayout::BTHD, padded);
    const Shape rows{v.size(0), v.size(1), heads * dh};
    return reshape(hybrid_mix(reshape(attended, rows), reshape(v, rows), weight, bias, gates_per_channel(gates, dh),
                              padded == PaddedRows::Zero ? lengths : Tensor()),
                   v.shape());
  }
  MultiscaleAttentionDims dims;
  attention_tiles::fill_dims(dims, v, causal, HeadLayout::BTHD);
  dims.levels = static_cast<int64_t>(q_levels.size());
  dims.stride = stride;
  dims.zero_padded_rows = padded == PaddedRows::Zero;
  const Tensor valid = checked_sequence_lengths(op, lengths, dims.batch, dims.length, 1, v.device());

  Tensor level_weights = softmax(level_logits, 1);  // λ [H, L]; its own node carries dλ to level_logits
  Tensor attended = Tensor::empty(v.shape(), v.dtype(), v.device());
  Tensor log_sum_exp = Tensor::empty({dims.batch, dims.heads, dims.length}, v.dtype(), v.device());
  Tensor out = Tensor::empty(v.shape(), v.dtype(), v.device());
  dispatch::kernel<HybridAttentionKernel>(op, v.device())(q_levels, k_levels, v, level_weights, valid, weight, bias,
                                                          gates, dims, attended, log_sum_exp, out);
  // Inputs: q_levels, k_levels, v, λ, weight, gates, and bias where defined (the graph walk reads every input).
  std::vector<Tensor> inputs(q_levels);
  inputs.insert(inputs.end(), k_levels.begin(), k_levels.end());
  for (const Tensor& t : {v, level_weights, weight, gates}) inputs.push_back(t);
  if (bias.defined()) inputs.push_back(bias);
  std::vector<Tensor> saved;
  for (const Tensor& t : inputs) saved.push_back(t.detach());
  record(op, inputs, out,
         [saved, valid, dims, attended = attended.detach(),
          log_sum_exp](const Tensor& grad_out) -> std::vector<Tensor> {
           const size_t levels = static_cast<size_t>(dims.levels);
           const std::vector<Tensor> queries(saved.begin(), saved.begin() + levels);
           const std::vector<Tensor> keys(saved.begin() + levels, saved.begin() + 2 * levels);
           const Tensor &values = saved[2 * levels], &level_weights = saved[2 * levels + 1];
           const Tensor &conv_weight = saved[2 * levels + 2], &conv_gates = saved[2 * levels + 3];
           const Tensor conv_bias = saved.size() > 2 * levels + 4 ? saved[2 * levels + 4] : Tensor();
           auto like = [](const Tensor& t) { return Tensor::empty(t.shape(), t.dtype(), t.device()); };
           std::vector<Tensor> grad_queries, grad_keys;
           for (size_t l = 0; l < levels; ++l) {
             grad_queries.push_back(like(queries[l]));
             grad_keys.push_back(like(keys[l]));
           }
           // dV adds into the gradient the values already have, where autograd hands it over.
           const Tensor sum = take_gradient_sum(2 * levels);
           MultiscaleAttentionDims call = dims;
           call.accumulate_grad_v = sum.defined();
           Tensor grad_v = sum.defined() ? sum : like(values);
           Tensor grad_level_weights = like(level_weights), grad_weight = like(conv_weight),
                  grad_gates = like(conv_gates), grad_bias = conv_bias.defined() ? like(conv_bias) : Tensor();
           dispatch::kernel<HybridAttentionBackwardKernel>(kernels::hybrid_multiscale_attention_backward,
                                                           values.device())(
               queries, keys, values, level_weights, valid, conv_weight, conv_bias, conv_gates, attended, log_sum_exp,
               grad_out, call, grad_queries, grad_keys, grad_v, grad_level_weights, grad_weight, grad_bias,
               grad_gates);
           std::vector<Tensor> grads(grad_queries);
           grads.insert(grads.end(), grad_keys.begin(), grad_keys.end());
           for (const Tensor& t : {grad_v, grad_level_weights, grad_weight, grad_gates}) grads.push_back(t);
           if (grad_bias.defined()) grads.push_back(grad_bias);
           return grads;
         });
  return out;
}

}  // namespace hkt
