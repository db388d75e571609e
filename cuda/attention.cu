// Fused attention on CUDA: the "attention" and "attention_backward" kernels of
// ops/attention.h, float32, on the FlashAttention-2 plan of ops/attention.cpp:
//
//   S = q kᵀ / sqrt(dh) + mask,  P = softmax_j(S),  out = P v
//
// Side by side with the CPU kernels (ops/attention.cpp):
//   forward    CPU: one task per (batch, head, query tile), rows of the tile in a loop
//              CUDA: one block per (batch, head, query tile), one thread per query row;
//              key/value tiles are staged in shared memory; the same key_limit,
//              score_row, online_softmax_step and finish_row (cuda/attention_tiles.cuh).
//   backward   CPU: one task per (batch, head) owns its dQ, dK, dV rows.
//              CUDA: three race-free passes with the CPU's formulas,
//                D_i = Σ_d dO_i · O_i                          (row_delta_kernel)
//                dK_j, dV_j: one thread per key row j           (attention_grad_kv_kernel)
//                dQ_i:       one thread per query row i         (attention_grad_q_kernel)
//              each recomputing P = exp(S − lse) tile by tile; every gradient row has
//              exactly one writer, so no atomics and a deterministic result.
// Nothing T × T is allocated. Untested on hardware when written: see
// docs/ARCHITECTURE.md and tests/parity_attention.cpp.
#include <cuda_runtime.h>

#include <initializer_list>
#include <string>

#include "cuda/attention_kernels.cuh"
#include "cuda/runtime.h"
#include "engine/dispatch.h"
#include "ops/attention.h"

namespace hkt {
namespace {

using namespace cuda_attention;

std::string describe(const AttentionDims& dims) {
  return "q, k, v [" + std::to_string(dims.batch) + ", " + std::to_string(dims.heads) + ", " +
         std::to_string(dims.length) + ", " + std::to_string(dims.head_dim) + "]";
}

void attention_cuda(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& lengths, const AttentionDims& dims,
                    Tensor& out, Tensor& log_sum_exp) {
  const char* op = "attention";
  const std::string shapes = describe(dims);
  const Device device = q.device();
  for (const Tensor* t : std::initializer_list<const Tensor*>{&q, &k, &v, &out, &log_sum_exp})
    check_float32_on(op, shapes, *t, device);
  hkt::check(lengths.device() == device && lengths.dtype() == DType::Int64, op, ": ", shapes, ": lengths ",
             lengths, " on ", lengths.device(), " (int64 on ", device, " expected)");
  visit_head_dim(op, shapes, dims.head_dim, [&](auto head_dim) {
    constexpr int Dh = decltype(head_dim)::value;
    const unsigned blocks = task_blocks(op, dims.batch * dims.heads * row_tiles(dims.length));
    const float scale = 1.0f / std::sqrt(static_cast<float>(Dh));
    attention_forward_kernel<Dh><<<blocks, kRowsPerBlock, 0, cuda::stream(device.index)>>>(
        device_floats(q), device_floats(k), device_floats(v), static_cast<const int64_t*>(lengths.raw_data()),
        dims.heads, dims.length, dims.causal, scale, mutable_floats(out), mutable_floats(log_sum_exp));
    cuda::check_launch(op);
  });
}

void attention_backward_cuda(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& lengths,
                             const Tensor& out, const Tensor& log_sum_exp, const Tensor& grad_out,
                             const AttentionDims& dims, Tensor& grad_q, Tensor& grad_k, Tensor& grad_v) {
  const char* op = "attention_backward";
  const std::string shapes = describe(dims);
  const Device device = q.device();
  for (const Tensor* t :
       std::initializer_list<const Tensor*>{&q, &k, &v, &out, &log_sum_exp, &grad_out, &grad_q, &grad_k, &grad_v})
    check_float32_on(op, shapes, *t, device);
  hkt::check(grad_out.shape() == q.shape(), op, ": ", shapes, ": grad_out ", grad_out, " differs from q");
  hkt::check(lengths.device() == device && lengths.dtype() == DType::Int64, op, ": ", shapes, ": lengths ",
             lengths, " on ", lengths.device(), " (int64 on ", device, " expected)");
  visit_head_dim(op, shapes, dims.head_dim, [&](auto head_dim) {
    constexpr int Dh = decltype(head_dim)::value;
    cudaStream_t stream = cuda::stream(device.index);
    const unsigned blocks = task_blocks(op, dims.batch * dims.heads * row_tiles(dims.length));
    const float scale = 1.0f / std::sqrt(static_cast<float>(Dh));
    const int64_t rows = dims.batch * dims.heads * dims.length;
    const int64_t* valid = static_cast<const int64_t*>(lengths.raw_data());
    Tensor delta = Tensor::empty({dims.batch, dims.heads, dims.length}, DType::Float32, device);
    row_delta_kernel<Dh><<<cuda::blocks_for(rows), 256, 0, stream>>>(device_floats(grad_out), device_floats(out),
                                                                       rows, mutable_floats(delta));
    cuda::check_launch(op);
    attention_grad_kv_kernel<Dh><<<blocks, kRowsPerBlock, 0, stream>>>(
        device_floats(q), device_floats(k), device_floats(v), valid, device_floats(log_sum_exp), device_floats(delta),
        device_floats(grad_out), dims.heads, dims.length, dims.causal, scale, mutable_floats(grad_k),
        mutable_floats(grad_v));
    cuda::check_launch(op);
    attention_grad_q_kernel<Dh><<<blocks, kRowsPerBlock, 0, stream>>>(
        device_floats(q), device_floats(k), device_floats(v), valid, device_floats(log_sum_exp), device_floats(delta),
        device_floats(grad_out), dims.heads, dims.length, dims.causal, scale, mutable_floats(grad_q));
    cuda::check_launch(op);
    // `delta` is released when this returns, maybe before the kernels run: its
    // memory is only reused by work queued after them on this device's one
    // stream (cuda/runtime.h), or freed by cudaFree, which waits for the device.
  });
}

}  // namespace

HKT_REGISTER_KERNEL("attention", DeviceType::CUDA, attention_cuda);
HKT_REGISTER_KERNEL("attention_backward", DeviceType::CUDA, attention_backward_cuda);

}  // namespace hkt
