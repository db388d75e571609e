// HKT's fused multi-scale attention on CUDA: the "multiscale_attention" and
// "multiscale_attention_backward" kernels of ops/multiscale_attention.h,
// float32, both modes (bidirectional and causal), on the plan of
// ops/multiscale_attention.cpp and cuda/attention.cu:
//
//   S[i, j] = Σ_l λ_l · C_l[q_l(i), k_l(j)] · [term l allowed],  C_l = q_l k_lᵀ / sqrt(dh)
//   out = softmax_j(S + mask) v
//
// Side by side with the CPU kernels:
//   forward    As the CPU, one block per (batch, head, query tile), key tiles in
//              order, online softmax. For each key tile, each level's coarse keys
//              k_l[k_l(j0)] … k_l[k_l(j1 − 1)] are staged in shared memory (the
//              CPU's load_level_keys), and each query thread computes the coarse
//              scores of its own coarse row, C_l[q_l(i), ·] over those columns
//              (the CPU's coarse_scores, one row per thread), then adds
//              λ_l · C_l through the key map where the term is allowed (the
//              CPU's add_level_scores). No matrix is upsampled.
//   backward   The CPU's level_backward formulas,
//                dS = P ⊙ (dP − D),  dλ_l = Σ dS ⊙ C_l[maps],
//                dq_l[a] = λ_l / sqrt(dh) · Σ_{i: q_l(i) = a} Σ_{j allowed} dS_ij k_l[k_l(j)]
//                dk_l[b] = λ_l / sqrt(dh) · Σ_{j: k_l(j) = b} Σ_{i allowed} dS_ij q_l[q_l(i)]
//              split so that every row has one writer (no atomics, deterministic):
//                pass 1, a thread per fine query row i: G_l[i] = Σ_j dS_ij k_l[k_l(j)]
//                        and its row of dλ partial sums;
//                pass 2, a thread per fine key row j: dV_j and H_l[j] = Σ_i dS_ij q_l[q_l(i)];
//                then dq_l, dk_l sum G_l, H_l over each coarse row's s^l fine rows
//                (the index maps' preimages) and dλ sums its partials in double.
//              G and H are [L, B, H, T, dh] scratch: linear in T, never T × T.
// Untested on hardware when written: see docs/ARCHITECTURE.md and tests/parity_attention.cpp.
#include <cuda_runtime.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "cuda/multiscale_attention_kernels.cuh"
#include "cuda/runtime.h"
#include "engine/dispatch.h"
#include "ops/index.h"
#include "ops/multiscale_attention.h"

namespace hkt {
namespace {

using namespace cuda_attention;

// ---- host side ------------------------------------------------------------

// s^l, saturated past T as ops/index.cpp (the CPU kernel's block_of).
int64_t block_of(int64_t length, int64_t level, int64_t stride) {
  int64_t block = 1;
  for (int64_t l = 0; l < level && block <= length; ++l) block *= stride;
  return block;
}

std::string describe(const MultiscaleAttentionDims& dims) {
  return "v [" + std::to_string(dims.batch) + ", " + std::to_string(dims.heads) + ", " + std::to_string(dims.length) +
         ", " + std::to_string(dims.head_dim) + "], " + std::to_string(dims.levels) + " levels, stride " +
         std::to_string(dims.stride);
}

Levels level_args(const char* op, const std::string& shapes, const std::vector<Tensor>& queries,
                  const std::vector<Tensor>& keys, const MultiscaleAttentionDims& dims, Device device) {
  hkt::check(dims.levels >= 1 && dims.levels <= kMaxLevels, op, ": ", shapes, ": the CUDA kernel takes 1 to ",
             kMaxLevels, " levels");
  hkt::check(static_cast<int64_t>(queries.size()) == dims.levels && static_cast<int64_t>(keys.size()) == dims.levels,
             op, ": ", shapes, ": ", queries.size(), " query and ", keys.size(), " key levels");
  Levels levels{};
  levels.count = static_cast<int>(dims.levels);
  for (int l = 0; l < levels.count; ++l) {
    const Shape expected{dims.batch, dims.heads, level_length(dims.length, l, dims.stride), dims.head_dim};
    for (const Tensor* t : {&queries[l], &keys[l]}) {
      check_float32_on(op, shapes, *t, device);
      hkt::check(t->shape() == expected, op, ": ", shapes, ": level ", l, " has ", t->str(), ", expected ",
                 expected);
    }
    levels.queries[l] = device_floats(queries[l]);
    levels.keys[l] = device_floats(keys[l]);
    levels.rows[l] = expected[2];
    levels.block[l] = block_of(dims.length, l, dims.stride);
  }
  return levels;
}

void check_common(const char* op, const std::string& shapes, const Tensor& v, const Tensor& level_weights,
                  const Tensor& lengths, const MultiscaleAttentionDims& dims) {
  check_float32_on(op, shapes, v, v.device());
  check_float32_on(op, shapes, level_weights, v.device());
  hkt::check(level_weights.shape() == Shape{dims.heads, dims.levels}, op, ": ", shapes, ": level weights ",
             level_weights, ", expected [H, L]");
  hkt::check(lengths.device() == v.device() && lengths.dtype() == DType::Int64, op, ": ", shapes, ": lengths ",
             lengths, " on ", lengths.device(), " (int64 on ", v.device(), " expected)");
}

// Dynamic shared memory of `bytes` for `kernel`, opting in above 48 KiB.
template <class Kernel>
void allow_shared(const char* op, const std::string& shapes, Kernel kernel, size_t bytes) {
  if (bytes <= kSharedLimit) return;
  const cudaError_t status =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    fail(op, ": ", shapes, ": needs ", bytes, " bytes of shared memory per block, more than the device allows (",
         cudaGetErrorString(status), "); use fewer levels or a smaller head_dim");
  }
}

void multiscale_attention_cuda(const std::vector<Tensor>& queries, const std::vector<Tensor>& keys, const Tensor& v,
                               const Tensor& level_weights, const Tensor& lengths,
                               const MultiscaleAttentionDims& dims, Tensor& out, Tensor& log_sum_exp) {
  const char* op = "multiscale_attention";
  const std::string shapes = describe(dims);
  const Device device = v.device();
  check_common(op, shapes, v, level_weights, lengths, dims);
  check_float32_on(op, shapes, out, device);
  check_float32_on(op, shapes, log_sum_exp, device);
  const Levels levels = level_args(op, shapes, queries, keys, dims, device);
  visit_head_dim(op, shapes, dims.head_dim, [&](auto head_dim) {
    constexpr int Dh = decltype(head_dim)::value;
    const unsigned blocks = task_blocks(op, dims.batch * dims.heads * row_tiles(dims.length));
    const size_t shared = sizeof(float) * (dims.levels + 1) * kMultiscaleStage * Dh;
    allow_shared(op, shapes, multiscale_forward_kernel<Dh>, shared);
    const float scale = 1.0f / std::sqrt(static_cast<float>(Dh));
    multiscale_forward_kernel<Dh><<<blocks, kRowsPerBlock, shared, cuda::stream(device.index)>>>(
        levels, device_floats(v), device_floats(level_weights), static_cast<const int64_t*>(lengths.raw_data()),
        dims.heads, dims.length, dims.causal, scale, mutable_floats(out), mutable_floats(log_sum_exp));
    cuda::check_launch(op);
  });
}

void multiscale_attention_backward_cuda(const std::vector<Tensor>& queries, const std::vector<Tensor>& keys,
                                        const Tensor& v, const Tensor& level_weights, const Tensor& lengths,
                                        const Tensor& out, const Tensor& log_sum_exp, const Tensor& grad_out,
                                        const MultiscaleAttentionDims& dims, std::vector<Tensor>& grad_queries,
                                        std::vector<Tensor>& grad_keys, Tensor& grad_v, Tensor& grad_level_weights) {
  const char* op = "multiscale_attention_backward";
  const std::string shapes = describe(dims);
  const Device device = v.device();
  check(!dims.accumulate_grad_v, op, ": adding dV to a gradient summed so far is the CPU kernel's (", shapes, ")");
  check_common(op, shapes, v, level_weights, lengths, dims);
  for (const Tensor* t :
       std::initializer_list<const Tensor*>{&out, &log_sum_exp, &grad_out, &grad_v, &grad_level_weights})
    check_float32_on(op, shapes, *t, device);
  hkt::check(grad_out.shape() == v.shape(), op, ": ", shapes, ": grad_out ", grad_out, " differs from v");
  const Levels levels = level_args(op, shapes, queries, keys, dims, device);
  const Levels grads = level_args(op, shapes, grad_queries, grad_keys, dims, device);
  visit_head_dim(op, shapes, dims.head_dim, [&](auto head_dim) {
    constexpr int Dh = decltype(head_dim)::value;
    cudaStream_t stream = cuda::stream(device.index);
    const unsigned blocks = task_blocks(op, dims.batch * dims.heads * row_tiles(dims.length));
    const float scale = 1.0f / std::sqrt(static_cast<float>(Dh));
    const int64_t fine_rows = dims.batch * dims.heads * dims.length;
    const int64_t* valid = static_cast<const int64_t*>(lengths.raw_data());

    Tensor delta = Tensor::empty({fine_rows}, DType::Float32, device);
    Tensor query_sums = Tensor::empty({dims.levels, fine_rows, Dh}, DType::Float32, device);
    Tensor key_sums = Tensor::empty({dims.levels, fine_rows, Dh}, DType::Float32, device);
    Tensor weight_partials = Tensor::empty({fine_rows, dims.levels}, DType::Float64, device);
    cuda::check(cudaMemsetAsync(query_sums.raw_data(), 0, query_sums.nbytes(), stream), op, "cudaMemsetAsync");
    cuda::check(cudaMemsetAsync(key_sums.raw_data(), 0, key_sums.nbytes(), stream), op, "cudaMemsetAsync");

    row_delta_kernel<Dh><<<cuda::blocks_for(fine_rows), 256, 0, stream>>>(device_floats(grad_out), device_floats(out),
                                                                            fine_rows, mutable_floats(delta));
    cuda::check_launch(op);

    const size_t query_shared = sizeof(float) * (dims.levels + 1) * kMultiscaleStage * Dh;
    allow_shared(op, shapes, multiscale_grad_query_kernel<Dh>, query_shared);
    multiscale_grad_query_kernel<Dh><<<blocks, kRowsPerBlock, query_shared, stream>>>(
        levels, device_floats(v), device_floats(level_weights), valid, device_floats(log_sum_exp),
        device_floats(delta), device_floats(grad_out), dims.heads, dims.length, dims.causal, scale,
        mutable_floats(query_sums), static_cast<double*>(weight_partials.raw_data()));
    cuda::check_launch(op);

    const size_t key_shared = sizeof(float) * ((dims.levels + 1) * kMultiscaleStage * Dh + 2 * kMultiscaleStage);
    allow_shared(op, shapes, multiscale_grad_key_kernel<Dh>, key_shared);
    multiscale_grad_key_kernel<Dh><<<blocks, kRowsPerBlock, key_shared, stream>>>(
        levels, device_floats(v), device_floats(level_weights), valid, device_floats(log_sum_exp),
        device_floats(delta), device_floats(grad_out), dims.heads, dims.length, dims.causal, scale,
        mutable_floats(grad_v), mutable_floats(key_sums));
    cuda::check_launch(op);

    for (int l = 0; l < levels.count; ++l) {
      const int64_t rows = levels.rows[l], total = dims.batch * dims.heads * rows * Dh;
      const float* query_level_sums = device_floats(query_sums) + l * fine_rows * Dh;
      const float* key_level_sums = device_floats(key_sums) + l * fine_rows * Dh;
      coarse_gradient_kernel<<<cuda::blocks_for(total), 256, 0, stream>>>(
          query_level_sums, device_floats(level_weights), dims.heads, dims.levels, l, dims.length, rows,
          levels.block[l], Dh, dims.causal, scale, total, const_cast<float*>(grads.queries[l]));
      cuda::check_launch(op);
      coarse_gradient_kernel<<<cuda::blocks_for(total), 256, 0, stream>>>(
          key_level_sums, device_floats(level_weights), dims.heads, dims.levels, l, dims.length, rows,
          levels.block[l], Dh, false, scale, total, const_cast<float*>(grads.keys[l]));
      cuda::check_launch(op);
    }
    level_weight_gradient_kernel<<<cuda::blocks_for(dims.heads * dims.levels), 256, 0, stream>>>(
        static_cast<const double*>(weight_partials.raw_data()), dims.batch, dims.heads, dims.levels, dims.length,
        mutable_floats(grad_level_weights));
    cuda::check_launch(op);
    // The scratch tensors are released on return, maybe before the kernels run;
    // see attention_backward_cuda for why that is safe.
  });
}

}  // namespace

HKT_REGISTER_KERNEL("multiscale_attention", DeviceType::CUDA, multiscale_attention_cuda);
HKT_REGISTER_KERNEL("multiscale_attention_backward", DeviceType::CUDA, multiscale_attention_backward_cuda);

}  // namespace hkt
