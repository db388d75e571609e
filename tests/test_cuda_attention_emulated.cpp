// The CUDA fused attention kernels (cuda/attention_kernels.cuh,
// cuda/multiscale_attention_kernels.cuh), compiled for the CPU by
// tests/cuda_emulation.h and launched in the order and with the grids of
// cuda/attention.cu and cuda/multiscale_attention.cu, against the CPU fused
// kernels: forward output, log-sum-exp and every gradient. This checks the
// kernels' indexing, tiling, masking and barriers on machines without a GPU;
// tests/parity_attention.cpp checks the real thing on one.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "engine/dispatch.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/index.h"
#include "ops/multiscale_attention.h"
#include "ops/shape.h"
#include "ops/softmax.h"
#include "tests/gradcheck.h"
// After every other header: it defines threadIdx, __shared__, ... as macros.
#include "tests/cuda_emulation.h"
#include "cuda/attention_kernels.cuh"
#include "cuda/multiscale_attention_kernels.cuh"

using namespace hkt;
using hkt::testing::check_close;
using namespace hkt::cuda_attention;
using hkt::emulation::launch;
using hkt::testing::random_tensor;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr unsigned kGridStrideBlocks = 2, kGridStrideThreads = 64;  // small grids: the loops must stride

// NaN-filled, so that an element a kernel forgets to write fails the comparison.
Tensor unwritten(const Shape& shape, DType dtype = DType::Float32) { return Tensor::full(shape, kNaN, dtype); }

const float* in(const Tensor& t) { return t.data<float>(); }
float* out(const Tensor& t) { return t.data<float>(); }

AttentionDims dims_of(const Tensor& like, bool causal) {
  AttentionDims dims;
  dims.batch = like.size(0);
  dims.heads = like.size(1);
  dims.length = like.size(2);
  dims.head_dim = like.size(3);
  dims.causal = causal;
  dims.tile = 16;  // the CPU side crosses its own tile boundaries too
  return dims;
}

// ---- MHA: cuda/attention.cu's launches ------------------------------------

template <int Dh>
std::vector<Tensor> emulated_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& valid,
                                       const Tensor& grad_out, const AttentionDims& dims) {
  const unsigned blocks = static_cast<unsigned>(dims.batch * dims.heads * row_tiles(dims.length));
  const float scale = 1.0f / std::sqrt(static_cast<float>(Dh));
  const int64_t rows = dims.batch * dims.heads * dims.length;
  const int64_t* lengths = valid.data<int64_t>();
  Tensor o = unwritten(q.shape()), lse = unwritten({rows}), delta = unwritten({rows});
  Tensor gq = unwritten(q.shape()), gk = unwritten(q.shape()), gv = unwritten(q.shape());
  launch(blocks, kRowsPerBlock, 0, [&] {
    attention_forward_kernel<Dh>(in(q), in(k), in(v), lengths, dims.heads, dims.length, dims.causal, scale, out(o),
                                 out(lse));
  });
  launch(kGridStrideBlocks, kGridStrideThreads, 0,
         [&] { row_delta_kernel<Dh>(in(grad_out), in(o), rows, out(delta)); });
  launch(blocks, kRowsPerBlock, 0, [&] {
    attention_grad_kv_kernel<Dh>(in(q), in(k), in(v), lengths, in(lse), in(delta), in(grad_out), dims.heads,
                                 dims.length, dims.causal, scale, out(gk), out(gv));
  });
  launch(blocks, kRowsPerBlock, 0, [&] {
    attention_grad_q_kernel<Dh>(in(q), in(k), in(v), lengths, in(lse), in(delta), in(grad_out), dims.heads,
                                dims.length, dims.causal, scale, out(gq));
  });
  return {o, reshape(lse, {dims.batch, dims.heads, dims.length}), gq, gk, gv};
}

template <int Dh>
void compare_attention(int64_t length, bool causal, const std::vector<int64_t>& lengths) {
  INFO("T " << length << ", dh " << Dh << (causal ? ", causal" : "") << ", lengths " << lengths[0] << " "
            << lengths.back());
  const Shape shape{static_cast<int64_t>(lengths.size()), 2, length, Dh};
  Tensor q = random_tensor(shape, 1, DType::Float32), k = random_tensor(shape, 2, DType::Float32),
         v = random_tensor(shape, 3, DType::Float32), grad_out = random_tensor(shape, 4, DType::Float32);
  const AttentionDims dims = dims_of(q, causal);
  Tensor valid = Tensor::from_vector<int64_t>(lengths, {dims.batch});
  const auto emulated = emulated_attention<Dh>(q, k, v, valid, grad_out, dims);

  Tensor o = Tensor::empty(shape), lse = Tensor::empty({dims.batch, dims.heads, length});
  Tensor gq = Tensor::empty(shape), gk = Tensor::empty(shape), gv = Tensor::empty(shape);
  dispatch::kernel<AttentionKernel>("attention", Device::cpu())(q, k, v, valid, dims, o, lse);
  dispatch::kernel<AttentionBackwardKernel>("attention_backward", Device::cpu())(q, k, v, valid, o, lse, grad_out,
                                                                                 dims, gq, gk, gv);
  const std::vector<Tensor> expected{o, lse, gq, gk, gv};
  const char* names[] = {"out", "log_sum_exp", "grad q", "grad k", "grad v"};
  for (size_t n = 0; n < expected.size(); ++n) check_close(names[n], emulated[n], expected[n], 2e-5);
}

// ---- multi-scale: cuda/multiscale_attention.cu's launches -----------------

int64_t block_of(int64_t length, int64_t level, int64_t stride) {
  int64_t block = 1;
  for (int64_t l = 0; l < level && block <= length; ++l) block *= stride;
  return block;
}

struct MultiscaleCase {
  std::vector<Tensor> queries, keys;
  Tensor v, level_weights, valid, grad_out;
  MultiscaleAttentionDims dims;
};

MultiscaleCase multiscale_case(int64_t length, int64_t head_dim, int64_t levels, int64_t stride, bool causal,
                               const std::vector<int64_t>& lengths) {
  MultiscaleCase c;
  const int64_t batch = static_cast<int64_t>(lengths.size()), heads = 2;
  uint64_t seed = 50;
  for (int64_t l = 0; l < levels; ++l) {
    const Shape shape{batch, heads, level_length(length, l, stride), head_dim};
    c.queries.push_back(random_tensor(shape, ++seed, DType::Float32));
    c.keys.push_back(random_tensor(shape, ++seed, DType::Float32));
  }
  c.v = random_tensor({batch, heads, length, head_dim}, ++seed, DType::Float32);
  c.level_weights = softmax(random_tensor({heads, levels}, ++seed, DType::Float32), 1);
  c.grad_out = random_tensor(c.v.shape(), ++seed, DType::Float32);
  c.valid = Tensor::from_vector<int64_t>(lengths, {batch});
  static_cast<AttentionDims&>(c.dims) = dims_of(c.v, causal);
  c.dims.levels = levels;
  c.dims.stride = stride;
  return c;
}

// out, log_sum_exp, grad v, grad λ, grad q_l…, grad k_l…
template <int Dh>
std::vector<Tensor> emulated_multiscale(const MultiscaleCase& c) {
  const MultiscaleAttentionDims& dims = c.dims;
  Levels levels{};
  levels.count = static_cast<int>(dims.levels);
  std::vector<Tensor> grad_queries, grad_keys;
  for (int l = 0; l < levels.count; ++l) {
    levels.queries[l] = in(c.queries[l]);
    levels.keys[l] = in(c.keys[l]);
    levels.rows[l] = c.queries[l].size(2);
    levels.block[l] = block_of(dims.length, l, dims.stride);
    grad_queries.push_back(unwritten(c.queries[l].shape()));
    grad_keys.push_back(unwritten(c.keys[l].shape()));
  }
  const unsigned blocks = static_cast<unsigned>(dims.batch * dims.heads * row_tiles(dims.length));
  const float scale = 1.0f / std::sqrt(static_cast<float>(Dh));
  const int64_t fine_rows = dims.batch * dims.heads * dims.length;
  const int64_t* lengths = c.valid.data<int64_t>();
  Tensor o = unwritten(c.v.shape()), lse = unwritten({fine_rows}), delta = unwritten({fine_rows});
  Tensor gv = unwritten(c.v.shape()), gw = unwritten(c.level_weights.shape());
  Tensor query_sums = Tensor::zeros({dims.levels, fine_rows, Dh});
  Tensor key_sums = Tensor::zeros({dims.levels, fine_rows, Dh});
  Tensor weight_partials = unwritten({fine_rows, dims.levels}, DType::Float64);
  const size_t shared = sizeof(float) * (dims.levels + 1) * kMultiscaleStage * Dh;

  launch(blocks, kRowsPerBlock, shared, [&] {
    multiscale_forward_kernel<Dh>(levels, in(c.v), in(c.level_weights), lengths, dims.heads, dims.length,
                                  dims.causal, scale, out(o), out(lse));
  });
  launch(kGridStrideBlocks, kGridStrideThreads, 0,
         [&] { row_delta_kernel<Dh>(in(c.grad_out), in(o), fine_rows, out(delta)); });
  launch(blocks, kRowsPerBlock, shared, [&] {
    multiscale_grad_query_kernel<Dh>(levels, in(c.v), in(c.level_weights), lengths, in(lse), in(delta),
                                     in(c.grad_out), dims.heads, dims.length, dims.causal, scale, out(query_sums),
                                     weight_partials.data<double>());
  });
  launch(blocks, kRowsPerBlock, shared + sizeof(float) * 2 * kMultiscaleStage, [&] {
    multiscale_grad_key_kernel<Dh>(levels, in(c.v), in(c.level_weights), lengths, in(lse), in(delta),
                                   in(c.grad_out), dims.heads, dims.length, dims.causal, scale, out(gv),
                                   out(key_sums));
  });
  for (int l = 0; l < levels.count; ++l) {
    const int64_t rows = levels.rows[l], total = dims.batch * dims.heads * rows * Dh;
    launch(kGridStrideBlocks, kGridStrideThreads, 0, [&] {
      coarse_gradient_kernel(in(query_sums) + l * fine_rows * Dh, in(c.level_weights), dims.heads, dims.levels, l,
                             dims.length, rows, levels.block[l], Dh, dims.causal, scale, total, out(grad_queries[l]));
    });
    launch(kGridStrideBlocks, kGridStrideThreads, 0, [&] {
      coarse_gradient_kernel(in(key_sums) + l * fine_rows * Dh, in(c.level_weights), dims.heads, dims.levels, l,
                             dims.length, rows, levels.block[l], Dh, false, scale, total, out(grad_keys[l]));
    });
  }
  launch(1, kGridStrideThreads, 0, [&] {
    level_weight_gradient_kernel(weight_partials.data<double>(), dims.batch, dims.heads, dims.levels, dims.length,
                                 out(gw));
  });
  std::vector<Tensor> results{o, reshape(lse, {dims.batch, dims.heads, dims.length}), gv, gw};
  results.insert(results.end(), grad_queries.begin(), grad_queries.end());
  results.insert(results.end(), grad_keys.begin(), grad_keys.end());
  return results;
}

template <int Dh>
void compare_multiscale(int64_t length, int64_t levels, int64_t stride, bool causal,
                        const std::vector<int64_t>& lengths) {
  INFO("T " << length << ", dh " << Dh << ", L " << levels << ", s " << stride << (causal ? ", causal" : "")
            << ", lengths " << lengths[0] << " " << lengths.back());
  const MultiscaleCase c = multiscale_case(length, Dh, levels, stride, causal, lengths);
  const auto emulated = emulated_multiscale<Dh>(c);

  const MultiscaleAttentionDims& dims = c.dims;
  Tensor o = Tensor::empty(c.v.shape()), lse = Tensor::empty({dims.batch, dims.heads, length});
  Tensor gv = Tensor::empty(c.v.shape()), gw = Tensor::empty(c.level_weights.shape());
  std::vector<Tensor> gq, gk;
  for (int64_t l = 0; l < levels; ++l) {
    gq.push_back(Tensor::empty(c.queries[l].shape()));
    gk.push_back(Tensor::empty(c.keys[l].shape()));
  }
  dispatch::kernel<MultiscaleAttentionKernel>("multiscale_attention", Device::cpu())(
      c.queries, c.keys, c.v, c.level_weights, c.valid, dims, o, lse);
  dispatch::kernel<MultiscaleAttentionBackwardKernel>("multiscale_attention_backward", Device::cpu())(
      c.queries, c.keys, c.v, c.level_weights, c.valid, o, lse, c.grad_out, dims, gq, gk, gv, gw);
  std::vector<Tensor> expected{o, lse, gv, gw};
  expected.insert(expected.end(), gq.begin(), gq.end());
  expected.insert(expected.end(), gk.begin(), gk.end());
  for (size_t n = 0; n < expected.size(); ++n) {
    std::string name = n == 0 ? "out" : n == 1 ? "log_sum_exp" : n == 2 ? "grad v" : n == 3 ? "grad λ" : "";
    if (n >= 4)
      name = (n - 4 < static_cast<size_t>(levels) ? "grad q_" : "grad k_") + std::to_string((n - 4) % levels);
    check_close(name, emulated[n], expected[n], 5e-5);
  }
}

}  // namespace

TEST_CASE("emulated CUDA attention kernels equal the CPU fused kernels") {
  for (bool causal : {false, true}) {
    compare_attention<16>(1, causal, {1});
    compare_attention<16>(37, causal, {37, 20});
    compare_attention<16>(130, causal, {129, 1});  // three query tiles; a single valid key
    compare_attention<32>(70, causal, {70, 33});
    compare_attention<64>(65, causal, {65});
    compare_attention<8>(37, causal, {37, 20});
  }
}

TEST_CASE("emulated CUDA multiscale attention kernels equal the CPU fused kernels") {
  for (bool causal : {false, true}) {
    for (int64_t stride : {2, 3})
      for (int64_t levels = 1; levels <= 4; ++levels) {
        compare_multiscale<16>(1, levels, stride, causal, {1});
        compare_multiscale<16>(37, levels, stride, causal, {37, 20});
        compare_multiscale<16>(100, levels, stride, causal, {100, 1});
      }
    compare_multiscale<32>(130, 3, 2, causal, {130, 77});
    compare_multiscale<8>(37, 3, 2, causal, {37, 20});
    compare_multiscale<16>(9, 4, 3, causal, {9, 4});  // s^3 = 27 > T: saturated blocks
  }
}
