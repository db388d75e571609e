#pragma once
// Matrix products. All of them run through one differentiable strided-batched
// GEMM, C = op(A) · op(B) with op(X) = X or Xᵀ, whose CPU kernel is BLAS;
// transposes are flags passed to BLAS, never copies.
#include <cstdint>

#include "engine/tensor.h"

namespace hkt {

// C = op(A) · op(B) for each batch item. a is [..., M, K] ([..., K, M] with
// trans_a), b is [..., K, N] ([..., N, K] with trans_b); the leading (batch)
// dims of a and b are equal, or one of them is 2-D and shared by every batch
// item of the other. Output [..., M, N]. Attention's Q Kᵀ is gemm(q, k, false, true).
Tensor gemm(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);

// a [..., M, K] x b [..., K, N] → [..., M, N]: gemm without transposes.
Tensor matmul(const Tensor& a, const Tensor& b);

// y = x Wᵀ + b, as torch::nn::Linear: x [..., in], weight [out, in], bias [out]
// (optional) → [..., out].
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

// The GEMM kernel's problem, shared with the CUDA kernel. Matrices are row-major
// and contiguous; stride_* is the element distance between batch items. A
// stride of 0 means the operand is shared by every batch item (a, b) or that
// the batch items are summed into one result (c: the gradient of a shared operand).
struct GemmDims {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  bool accumulate = false;  // c += the product (beta = 1 throughout); bias is then undefined
};

// ---- kernel names and signatures (shared by the CPU and CUDA registrations) ----

namespace kernels {  // the names they register under, declared once (ops/, cuda/ and the lookups use them)
inline constexpr const char* gemm = "gemm";
}  // namespace kernels

// c[i] = op(a[i]) · op(b[i]) (+ bias on every row) for i < dims.batch; with
// dims.stride_c == 0, c = Σ_i op(a[i]) · op(b[i]) and bias is undefined; with
// dims.accumulate, c's values are kept and the products added to them. bias,
// when defined, is [N]: linear's bias, added where c is written (the CPU
// kernel adds it to each block of rows while the block is in cache).
// row_sums, when defined, is [M] and gets Σ_i Σ_k op(a[i])[m, k]: linear's
// bias gradient where its weight gradient Gᵀ·X is the product (the CPU
// kernel sums G's rows as the product streams them, one read of G for both).
using GemmKernel = void(const Tensor& a, const Tensor& b, const Tensor& bias, Tensor& c, const GemmDims& dims,
                        Tensor& row_sums);

}  // namespace hkt
