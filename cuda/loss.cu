// CUDA kernels of cross_entropy (ops/loss.h): one block per row computes the
// row's log-sum-exp and loss; one more block sums the row losses in a fixed
// order, so the mean does not depend on scheduling.
#include "cuda/kernel_util.cuh"
#include "engine/dispatch.h"
#include "ops/common.h"
#include "ops/loss.h"

namespace hkt::cuda {
namespace {

template <class I>
__global__ void cross_entropy_rows(const float* logits, const I* labels, float* lse, float* row_loss, int64_t rows,
                                   int64_t classes) {
  for (int64_t n = blockIdx.x; n < rows; n += gridDim.x) {
    const float* row = logits + n * classes;
    float m = -INFINITY;
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) m = nan_max(m, row[c]);
    m = block_max(m);
    float total = 0.0f;
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) total += expf(row[c] - m);
    total = block_sum(total);
    if (threadIdx.x == 0) {
      lse[n] = m + logf(total);
      row_loss[n] = lse[n] - row[static_cast<int64_t>(labels[n])];
    }
  }
}

// One block: loss = Σ row_loss / rows.
__global__ void mean_of_rows(const float* row_loss, float* loss, int64_t rows) {
  float total = 0.0f;
  for (int64_t n = threadIdx.x; n < rows; n += blockDim.x) total += row_loss[n];
  total = block_sum(total);
  if (threadIdx.x == 0) *loss = total / static_cast<float>(rows);
}

void cross_entropy_cuda(const Tensor& logits, const Tensor& labels, Tensor& loss, Tensor& log_sum_exp) {
  const char* op = "cross_entropy";
  require_float32(op, logits);
  const int64_t rows = logits.size(0), classes = logits.size(1);
  Tensor row_loss = Tensor::empty({rows}, DType::Float32, logits.device());
  cudaStream_t s = stream_of(logits);
  visit_index(op, labels.dtype(), [&](auto index_tag) {
    using I = decltype(index_tag);
    cross_entropy_rows<I><<<row_blocks(rows), kThreads, 0, s>>>(ptr(logits), ptr<I>(labels), ptr(log_sum_exp),
                                                                  ptr(row_loss), rows, classes);
    check_launch(op);
  });
  mean_of_rows<<<1, 1024, 0, s>>>(ptr(row_loss), ptr(loss), rows);
  check_launch(op);
}

// dlogits[n, c] = (exp(logits[n, c] − lse[n]) − [c = labels[n]]) · g / N; g is read on the device.
template <class I>
__global__ void cross_entropy_backward_kernel(const float* logits, const I* labels, const float* lse,
                                              const float* grad_loss, float* grad_logits, int64_t rows,
                                              int64_t classes) {
  const float scale = *grad_loss / static_cast<float>(rows);
  HKT_CUDA_LOOP(i, rows * classes) {
    const int64_t n = i / classes, c = i % classes;
    const float target = c == static_cast<int64_t>(labels[n]) ? 1.0f : 0.0f;
    grad_logits[i] = (expf(logits[i] - lse[n]) - target) * scale;
  }
}

void cross_entropy_backward_cuda(const Tensor& logits, const Tensor& labels, const Tensor& log_sum_exp,
                                 const Tensor& grad_loss, Tensor& grad_logits) {
  const char* op = "cross_entropy_backward";
  require_float32(op, logits);
  require_float32(op, grad_loss);
  const int64_t rows = logits.size(0), classes = logits.size(1);
  visit_index(op, labels.dtype(), [&](auto index_tag) {
    using I = decltype(index_tag);
    cross_entropy_backward_kernel<I><<<blocks_for(rows * classes), kThreads, 0, stream_of(logits)>>>(
        ptr(logits), ptr<I>(labels), ptr(log_sum_exp), ptr(grad_loss), ptr(grad_logits), rows, classes);
    check_launch(op);
  });
}

}  // namespace

HKT_REGISTER_KERNEL(kernels::cross_entropy, DeviceType::CUDA, cross_entropy_cuda);
HKT_REGISTER_KERNEL(kernels::cross_entropy_backward, DeviceType::CUDA, cross_entropy_backward_cuda);

}  // namespace hkt::cuda
