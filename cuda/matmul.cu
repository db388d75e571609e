// CUDA kernel of gemm (ops/matmul.h) on cuBLAS, in full float32 (cuBLAS's
// default math mode: no TF32), so that results match the CPU to rounding.
//
// cuBLAS is column-major; a row-major [R, C] matrix is, read column-major,
// its transpose. So row-major C = op(A) op(B) is computed as the column-major
// product Cᵀ = op(B)ᵀ op(A)ᵀ: swap the operands and pass each one's transpose
// flag unchanged, with the leading dimensions the CPU kernel gives BLAS.
#include <climits>

#include "cuda/kernel_util.cuh"
#include "engine/dispatch.h"
#include "ops/matmul.h"

namespace hkt::cuda {
namespace {

int blas_int(int64_t value) {
  hkt::check(value <= INT_MAX, "gemm: extent ", value, " exceeds the cuBLAS integer range");
  return static_cast<int>(value);
}

// c[row, col] = bias[col] for every row: the GEMM then adds its product (beta = 1).
__global__ void bias_rows_kernel(const float* bias, float* c, int64_t n, int64_t total) {
  HKT_CUDA_LOOP(i, total) c[i] = bias[i % n];
}

// row_sums[r] = Σ_i Σ_k op(a[i])[r, k]: one thread per row r; with a transposed
// (linear's Gᵀ, the case that asks) neighbouring threads read neighbouring values.
__global__ void row_sums_kernel(const float* a, float* row_sums, int64_t batch, int64_t m, int64_t k,
                                int64_t stride_a, bool trans_a) {
  HKT_CUDA_LOOP(r, m) {
    float total = 0.0f;
    for (int64_t i = 0; i < batch; ++i)
      for (int64_t j = 0; j < k; ++j) total += a[i * stride_a + (trans_a ? j * m + r : r * k + j)];
    row_sums[r] = total;
  }
}

void gemm_cuda(const Tensor& a, const Tensor& b, const Tensor& bias, Tensor& c, const GemmDims& d, Tensor& row_sums) {
  const char* op = "gemm";
  require_float32(op, a);
  require_float32(op, b);
  require_float32(op, bias);
  require_float32(op, c);
  cudaStream_t s = stream_of(c);
  if (row_sums.defined() && d.m > 0) {
    require_float32(op, row_sums);
    row_sums_kernel<<<blocks_for(d.m), kThreads, 0, s>>>(ptr(a), ptr(row_sums), d.batch, d.m, d.k, d.stride_a,
                                                         d.trans_a);
    check_launch(op);
  }
  if (c.numel() == 0) return;
  if (bias.defined()) {
    const int64_t total = c.numel();
    bias_rows_kernel<<<blocks_for(total), kThreads, 0, s>>>(ptr(bias), ptr(c), d.n, total);
    check_launch(op);
  } else if ((d.k == 0 || d.batch == 0) && !d.accumulate) {  // an empty sum
    check(cudaMemsetAsync(c.raw_data(), 0, c.nbytes(), s), op, "cudaMemsetAsync");
  }
  if (d.k == 0 || d.batch == 0) return;
  cublasHandle_t handle = cublas(c.device().index);
  const CublasLibrary& api = cublas_library();
  const int m = blas_int(d.m), n = blas_int(d.n), k = blas_int(d.k);
  const int lda = d.trans_a ? m : k, ldb = d.trans_b ? k : n;
  const cublasOperation_t op_a = d.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = d.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const float* pa = ptr(a);
  const float* pb = ptr(b);
  float* pc = ptr(c);
  const float one = 1.0f, zero = 0.0f;
  if (d.stride_c == 0 && d.batch > 1) {
    // Batch items summed into one c (a shared operand's gradient): one GEMM
    // per item, accumulating (beta = 1) after the first, in issue order.
    for (int64_t i = 0; i < d.batch; ++i)
      check(api.sgemm(handle, op_b, op_a, n, m, k, &one, pb + i * d.stride_b, ldb, pa + i * d.stride_a, lda,
                      i == 0 && !d.accumulate ? &zero : &one, pc, n),
            op, "cublasSgemm");
    return;
  }
  check(api.sgemm_strided_batched(handle, op_b, op_a, n, m, k, &one, pb, ldb, d.stride_b, pa, lda, d.stride_a,
                                  bias.defined() || d.accumulate ? &one : &zero, pc, n, d.stride_c, blas_int(d.batch)),
        op, "cublasSgemmStridedBatched");
}

}  // namespace

HKT_REGISTER_KERNEL(kernels::gemm, DeviceType::CUDA, gemm_cuda);

}  // namespace hkt::cuda
