// The fused attention kernels on CUDA (cuda/attention.cu,
// cuda/multiscale_attention.cu) against the CPU: the CPU fused kernel run on
// the same float32 inputs, and the composed reference (ops/attention_reference.h)
// in float64 through autograd. Forward output, log-sum-exp and every gradient
// (q, k, v; per level q_l, k_l; λ, as dL/dlevel_logits), float32 on the GPU.
// Shapes: T = 1, T not a multiple of either side's tile, padded batches,
// causal and bidirectional, L = 1..4, s = 2, 3, head_dim 8, 16, 32, 64, 128.
// Every case skips on a machine without a CUDA device.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>


#include "engine/dispatch.h"
#include "ops/attention.h"
#include "ops/attention_reference.h"
#include "ops/elementwise.h"
#include "ops/index.h"
#include "ops/multiscale_attention.h"
#include "ops/reduce.h"
#include "ops/softmax.h"
#include "tests/gradcheck.h"
#include "tests/parity_util.h"

using namespace hkt;
using hkt::testing::check_close;
using hkt::testing::lengths_tensor;
using hkt::testing::random_tensor;

namespace {

const Device kCpu = Device::cpu();
const Device kCuda = Device::cuda(0);

// A copy to the host waits for the device's stream (cuda/device.cu), so the
// kernels queued before it have finished.
Tensor host(const Tensor& t) { return t.to(kCpu); }

std::string describe(int64_t length, int64_t head_dim, bool causal, const std::vector<int64_t>& lengths) {
  std::ostringstream text;
  text << "T " << length << ", dh " << head_dim << (causal ? ", causal" : ", bidirectional") << ", lengths";
  for (int64_t n : lengths) text << " " << n;
  return text.str();
}

AttentionDims attention_dims(const Tensor& like, bool causal) {
  AttentionDims dims;
  dims.batch = like.size(0);
  dims.heads = like.size(1);
  dims.length = like.size(2);
  dims.head_dim = like.size(3);
  dims.causal = causal;
  dims.tile = attention_cpu_tile(causal);
  return dims;
}

// ---- MHA ------------------------------------------------------------------

// out, log_sum_exp, grad_q, grad_k, grad_v of the registered kernels on `device`.
std::vector<Tensor> attention_kernels(Device device, const Tensor& q, const Tensor& k, const Tensor& v,
                                      const std::vector<int64_t>& lengths, const Tensor& grad_out, bool causal) {
  const AttentionDims dims = attention_dims(q, causal);
  Tensor dq = q.to(device), dk = k.to(device), dv = v.to(device), dgo = grad_out.to(device);
  Tensor valid = Tensor::from_vector<int64_t>(lengths, {dims.batch}, device);
  Tensor out = Tensor::empty(q.shape(), DType::Float32, device);
  Tensor lse = Tensor::empty({dims.batch, dims.heads, dims.length}, DType::Float32, device);
  dispatch::kernel<AttentionKernel>("attention", device)(dq, dk, dv, valid, dims, out, lse);
  Tensor gq = Tensor::empty(q.shape(), DType::Float32, device), gk = Tensor::empty(q.shape(), DType::Float32, device),
         gv = Tensor::empty(q.shape(), DType::Float32, device);
  dispatch::kernel<AttentionBackwardKernel>("attention_backward", device)(dq, dk, dv, valid, out, lse, dgo, dims, gq,
                                                                          gk, gv);
  return {host(out), host(lse), host(gq), host(gk), host(gv)};
}

void compare_attention(int64_t batch, int64_t heads, int64_t length, int64_t head_dim, bool causal,
                       const std::vector<int64_t>& lengths) {
  INFO(describe(length, head_dim, causal, lengths));
  const Shape shape{batch, heads, length, head_dim};
  Tensor q = random_tensor(shape, 11, DType::Float32), k = random_tensor(shape, 12, DType::Float32),
         v = random_tensor(shape, 13, DType::Float32), grad_out = random_tensor(shape, 14, DType::Float32);
  const auto gpu = attention_kernels(kCuda, q, k, v, lengths, grad_out, causal);
  const auto cpu = attention_kernels(kCpu, q, k, v, lengths, grad_out, causal);
  const char* names[] = {"out", "log_sum_exp", "grad q", "grad k", "grad v"};
  for (size_t n = 0; n < cpu.size(); ++n) check_close(std::string("CPU fused ") + names[n], gpu[n], cpu[n], 2e-5);

  // The composed reference in float64: out and the gradients of Σ out ⊙ grad_out.
  std::vector<Tensor> leaves;
  for (const Tensor& t : {q, k, v}) leaves.push_back(t.to(DType::Float64).detach().requires_grad_(true));
  Tensor expected = attention_reference(leaves[0], leaves[1], leaves[2], lengths_tensor(lengths), causal);
  sum(mul(expected, grad_out.to(DType::Float64))).backward();
  check_close("reference out", gpu[0], expected.detach(), 1e-4);
  for (size_t n = 0; n < 3; ++n)
    check_close(std::string("reference ") + names[n + 2], gpu[n + 2], leaves[n].grad(), 1e-4);
}

// ---- multi-scale ----------------------------------------------------------

struct MultiscaleInputs {
  std::vector<Tensor> queries, keys;
  Tensor v, level_logits, grad_out;
};

MultiscaleInputs multiscale_inputs(int64_t batch, int64_t heads, int64_t length, int64_t head_dim, int64_t levels,
                                   int64_t stride) {
  MultiscaleInputs in;
  uint64_t seed = 200;
  for (int64_t l = 0; l < levels; ++l) {
    const Shape shape{batch, heads, level_length(length, l, stride), head_dim};
    in.queries.push_back(random_tensor(shape, ++seed, DType::Float32));
    in.keys.push_back(random_tensor(shape, ++seed, DType::Float32));
  }
  in.v = random_tensor({batch, heads, length, head_dim}, ++seed, DType::Float32);
  in.level_logits = random_tensor({heads, levels}, ++seed, DType::Float32);
  in.grad_out = random_tensor(in.v.shape(), ++seed, DType::Float32);
  return in;
}

// out, log_sum_exp, grad_v, dL/dλ, then grad q_l for every l, then grad k_l, from the kernels on `device`.
std::vector<Tensor> multiscale_kernels(Device device, const MultiscaleInputs& in, const std::vector<int64_t>& lengths,
                                       int64_t stride, bool causal) {
  MultiscaleAttentionDims dims;
  static_cast<AttentionDims&>(dims) = attention_dims(in.v, causal);
  dims.levels = static_cast<int64_t>(in.queries.size());
  dims.stride = stride;
  std::vector<Tensor> queries, keys, grad_queries, grad_keys;
  for (int64_t l = 0; l < dims.levels; ++l) {
    queries.push_back(in.queries[l].to(device));
    keys.push_back(in.keys[l].to(device));
    grad_queries.push_back(Tensor::empty(in.queries[l].shape(), DType::Float32, device));
    grad_keys.push_back(Tensor::empty(in.keys[l].shape(), DType::Float32, device));
  }
  Tensor v = in.v.to(device), grad_out = in.grad_out.to(device);
  Tensor level_weights = softmax(in.level_logits, 1).to(device);  // λ, computed on the CPU for both
  Tensor valid = Tensor::from_vector<int64_t>(lengths, {dims.batch}, device);
  Tensor out = Tensor::empty(v.shape(), DType::Float32, device);
  Tensor lse = Tensor::empty({dims.batch, dims.heads, dims.length}, DType::Float32, device);
  dispatch::kernel<MultiscaleAttentionKernel>("multiscale_attention", device)(queries, keys, v, level_weights, valid,
                                                                              dims, out, lse);
  Tensor grad_v = Tensor::empty(v.shape(), DType::Float32, device);
  Tensor grad_weights = Tensor::empty(level_weights.shape(), DType::Float32, device);
  dispatch::kernel<MultiscaleAttentionBackwardKernel>("multiscale_attention_backward", device)(
      queries, keys, v, level_weights, valid, out, lse, grad_out, dims, grad_queries, grad_keys, grad_v, grad_weights);
  std::vector<Tensor> results{host(out), host(lse), host(grad_v), host(grad_weights)};
  for (const Tensor& t : grad_queries) results.push_back(host(t));
  for (const Tensor& t : grad_keys) results.push_back(host(t));
  return results;
}

// dL/dlogits from dL/dλ through λ = softmax(logits) per head: λ_l (g_l − Σ_m λ_m g_m).
Tensor logits_gradient(const Tensor& level_logits, const Tensor& grad_weights) {
  const int64_t heads = level_logits.size(0), levels = level_logits.size(1);
  const auto lambda = softmax(level_logits.to(DType::Float64), 1).to_vector<double>();
  const auto g = grad_weights.to(kCpu).to_vector<double>();
  std::vector<double> result(lambda.size());
  for (int64_t h = 0; h < heads; ++h) {
    double mean = 0;
    for (int64_t l = 0; l < levels; ++l) mean += lambda[h * levels + l] * g[h * levels + l];
    for (int64_t l = 0; l < levels; ++l)
      result[h * levels + l] = lambda[h * levels + l] * (g[h * levels + l] - mean);
  }
  return Tensor::from_vector<double>(result, {heads, levels});
}

void compare_multiscale(int64_t length, int64_t head_dim, int64_t levels, int64_t stride, bool causal,
                        const std::vector<int64_t>& lengths) {
  INFO(describe(length, head_dim, causal, lengths) << ", L " << levels << ", s " << stride);
  const int64_t batch = static_cast<int64_t>(lengths.size()), heads = 2;
  const MultiscaleInputs in = multiscale_inputs(batch, heads, length, head_dim, levels, stride);
  const auto gpu = multiscale_kernels(kCuda, in, lengths, stride, causal);
  const auto cpu = multiscale_kernels(kCpu, in, lengths, stride, causal);
  for (size_t n = 0; n < cpu.size(); ++n) {
    std::string name = n == 0 ? "out" : n == 1 ? "log_sum_exp" : n == 2 ? "grad v" : n == 3 ? "grad λ" : "";
    if (n >= 4) {
      const size_t index = n - 4;
      name = (index < static_cast<size_t>(levels) ? "grad q_" : "grad k_") + std::to_string(index % levels);
    }
    check_close("CPU fused " + name, gpu[n], cpu[n], 5e-5);
  }

  // The composed reference in float64, differentiated through level_logits.
  std::vector<Tensor> queries, keys;
  for (int64_t l = 0; l < levels; ++l) {
    queries.push_back(in.queries[l].to(DType::Float64).detach().requires_grad_(true));
    keys.push_back(in.keys[l].to(DType::Float64).detach().requires_grad_(true));
  }
  Tensor v = in.v.to(DType::Float64).detach().requires_grad_(true);
  Tensor logits = in.level_logits.to(DType::Float64).detach().requires_grad_(true);
  Tensor expected =
      multiscale_attention_reference(queries, keys, v, logits, lengths_tensor(lengths), stride, causal);
  sum(mul(expected, in.grad_out.to(DType::Float64))).backward();
  check_close("reference out", gpu[0], expected.detach(), 1e-4);
  check_close("reference grad v", gpu[2], v.grad(), 1e-4);
  check_close("reference grad level_logits", logits_gradient(in.level_logits, gpu[3]), logits.grad(), 1e-4);
  for (int64_t l = 0; l < levels; ++l) {
    check_close("reference grad q_" + std::to_string(l), gpu[4 + l], queries[l].grad(), 1e-4);
    check_close("reference grad k_" + std::to_string(l), gpu[4 + levels + l], keys[l].grad(), 1e-4);
  }
}

}  // namespace

TEST_CASE("CUDA attention kernels equal the CPU fused kernel and the composed reference") {
  HKT_REQUIRE_CUDA_OR_SKIP();
  for (bool causal : {false, true}) {
    compare_attention(1, 2, 1, 16, causal, {1});
    compare_attention(2, 2, 37, 16, causal, {37, 20});  // T inside one query tile, padded second example
    compare_attention(2, 3, 70, 64, causal, {70, 1});   // a single valid key
    compare_attention(2, 2, 130, 32, causal, {129, 65});  // three query tiles, keys ending inside a stage
    compare_attention(1, 2, 96, 128, causal, {96});
    compare_attention(2, 2, 37, 8, causal, {37, 20});
  }
}

TEST_CASE("CUDA attention: the op runs forward and backward on the device") {
  HKT_REQUIRE_CUDA_OR_SKIP();
  const Shape shape{2, 2, 45, 16};
  Tensor q = random_tensor(shape, 1, DType::Float32), k = random_tensor(shape, 2, DType::Float32),
         v = random_tensor(shape, 3, DType::Float32), grad_out = random_tensor(shape, 4, DType::Float32);
  Tensor lengths = lengths_tensor({45, 30});
  std::vector<Tensor> cpu_leaves, gpu_leaves;
  for (const Tensor& t : {q, k, v}) {
    cpu_leaves.push_back(t.detach().clone().requires_grad_(true));
    gpu_leaves.push_back(t.to(kCuda).requires_grad_(true));
  }
  Tensor cpu_out = attention(cpu_leaves[0], cpu_leaves[1], cpu_leaves[2], lengths, true);
  cpu_out.backward(grad_out);
  Tensor gpu_out = attention(gpu_leaves[0], gpu_leaves[1], gpu_leaves[2], lengths.to(kCuda), true);
  REQUIRE(gpu_out.device() == kCuda);
  gpu_out.backward(grad_out.to(kCuda));
  check_close("out", gpu_out.detach(), cpu_out.detach(), 2e-5);
  for (size_t n = 0; n < 3; ++n)
    check_close("grad " + std::to_string(n), gpu_leaves[n].grad(), cpu_leaves[n].grad(), 2e-5);
}

TEST_CASE("CUDA attention with PaddedRows::Zero equals the CPU's: padded rows 0, no gradient through them") {
  // The CPU kernels skip the rows; CUDA runs its kernel and masked_fills them. Both layouts, MHA and HKT.
  HKT_REQUIRE_CUDA_OR_SKIP();
  const int64_t length = 45, head_dim = 16;
  const Tensor lengths = lengths_tensor({45, 30});
  for (HeadLayout layout : {HeadLayout::BHTD, HeadLayout::BTHD})
    for (bool mha : {true, false}) {
      INFO((mha ? "MHA" : "HKT L=3") << (layout == HeadLayout::BTHD ? " BTHD" : " BHTD"));
      const int64_t levels = mha ? 1 : 3;
      auto shape = [&](int64_t rows) {
        return layout == HeadLayout::BTHD ? Shape{2, rows, 2, head_dim} : Shape{2, 2, rows, head_dim};
      };
      std::vector<Tensor> inputs;  // q_0 … q_{L−1}, k_0 … k_{L−1}, v (the weights λ stay on the CPU side below)
      for (int side = 0; side < 2; ++side)
        for (int64_t l = 0; l < levels; ++l)
          inputs.push_back(random_tensor(shape(level_length(length, l, 2)), 10 + side * levels + l, DType::Float32));
      inputs.push_back(random_tensor(shape(length), 20, DType::Float32));
      const Tensor level_logits = random_tensor({2, levels}, 21, DType::Float32);
      const Tensor grad_out = random_tensor(shape(length), 22, DType::Float32);
      auto run = [&](Device device) {
        std::vector<Tensor> leaves;
        for (const Tensor& t : inputs) leaves.push_back(t.to(device).detach().requires_grad_(true));
        const std::vector<Tensor> q(leaves.begin(), leaves.begin() + levels),
            k(leaves.begin() + levels, leaves.begin() + 2 * levels);
        Tensor out = mha ? attention(q[0], k[0], leaves.back(), lengths.to(device), false, layout, PaddedRows::Zero)
                         : multiscale_attention(q, k, leaves.back(), level_logits.to(device), lengths.to(device), 2,
                                                false, layout, PaddedRows::Zero);
        out.backward(grad_out.to(device));
        std::vector<Tensor> results{out.detach().to(kCpu)};
        for (const Tensor& leaf : leaves) results.push_back(leaf.grad().to(kCpu));
        return results;
      };
      const auto gpu = run(kCuda), cpu = run(kCpu);
      for (size_t n = 0; n < cpu.size(); ++n)
        check_close(n == 0 ? "out" : "grad " + std::to_string(n - 1), gpu[n], cpu[n], 5e-5);
      // Example 1's rows from 30 on are exactly 0 on the device too.
      const std::vector<double> out = gpu[0].to_vector<double>();
      for (int64_t t = 30; t < length; ++t)
        for (int64_t h = 0; h < 2; ++h)
          for (int64_t d = 0; d < head_dim; ++d) {
            const int64_t at = layout == HeadLayout::BTHD ? ((length + t) * 2 + h) * head_dim + d
                                                           : ((2 + h) * length + t) * head_dim + d;
            CHECK(out[static_cast<size_t>(at)] == 0.0);
          }
    }
}

TEST_CASE("CUDA multiscale attention kernels equal the CPU fused kernel and the composed reference") {
  HKT_REQUIRE_CUDA_OR_SKIP();
  for (bool causal : {false, true}) {
    for (int64_t stride : {2, 3})
      for (int64_t levels = 1; levels <= 4; ++levels) {
        compare_multiscale(1, 16, levels, stride, causal, {1});
        compare_multiscale(37, 16, levels, stride, causal, {37, 20});
        compare_multiscale(100, 64, levels, stride, causal, {100, 1});
      }
    compare_multiscale(130, 32, 3, 2, causal, {130, 77});
    compare_multiscale(70, 128, 4, 2, causal, {70, 69});
    compare_multiscale(37, 8, 3, 2, causal, {37, 20});
    compare_multiscale(9, 16, 4, 3, causal, {9, 4});  // s^3 = 27 > T: saturated blocks
  }
}

TEST_CASE("CUDA attention kernels reject what they do not support, naming the op and shapes") {
  HKT_REQUIRE_CUDA_OR_SKIP();
  using Catch::Matchers::Contains;
  Tensor lengths = lengths_tensor({5});
  Tensor q64 = random_tensor({1, 1, 5, 16}, 1, DType::Float64).to(kCuda);
  REQUIRE_THROWS_WITH(attention(q64, q64, q64, lengths, false),
                      Contains("attention") && Contains("[1, 1, 5, 16]") && Contains("float32"));
  Tensor q24 = random_tensor({1, 1, 5, 24}, 1, DType::Float32).to(kCuda);
  REQUIRE_THROWS_WITH(attention(q24, q24, q24, lengths, false),
                      Contains("attention") && Contains("[1, 1, 5, 24]") && Contains("head_dim 24"));
  Tensor q_cpu = random_tensor({1, 1, 5, 16}, 2, DType::Float32);
  Tensor q_gpu = q_cpu.to(kCuda);
  REQUIRE_THROWS_WITH(attention(q_gpu, q_cpu, q_gpu, lengths, false), Contains("attention") && Contains("cuda:0"));
  // The multi-scale kernel, called as the op does once λ = softmax(level_logits) is formed.
  MultiscaleAttentionDims dims;
  static_cast<AttentionDims&>(dims) = attention_dims(q24, false);
  dims.levels = 1;
  std::vector<Tensor> levels{q24};
  Tensor weights = Tensor::ones({1, 1}, DType::Float32, kCuda), valid = lengths.to(kCuda);
  Tensor out = Tensor::empty(q24.shape(), DType::Float32, kCuda), lse = Tensor::empty({1, 1, 5}, DType::Float32, kCuda);
  REQUIRE_THROWS_WITH(dispatch::kernel<MultiscaleAttentionKernel>("multiscale_attention", kCuda)(
                          levels, levels, q24, weights, valid, dims, out, lse),
                      Contains("multiscale_attention") && Contains("head_dim 24"));
  dims.levels = 9;
  std::vector<Tensor> nine(9, q24);
  Tensor nine_weights = Tensor::ones({1, 9}, DType::Float32, kCuda);
  REQUIRE_THROWS_WITH(dispatch::kernel<MultiscaleAttentionKernel>("multiscale_attention", kCuda)(
                          nine, nine, q24, nine_weights, valid, dims, out, lse),
                      Contains("multiscale_attention") && Contains("1 to 8 levels"));
}
