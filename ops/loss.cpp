// cross_entropy: forward, fused backward and CPU kernels.
#include "ops/loss.h"

#include <cmath>
#include <limits>
#include <vector>

#include "engine/dispatch.h"
#include "ops/common.h"

namespace hkt {

// ---- CPU kernels ----------------------------------------------------------

// loss = (1/N) Σ_n (lse_n − logits[n, labels[n]]),  lse_n = m_n + log Σ_c exp(logits[n, c] − m_n)
// with m_n the row maximum. Saves lse (N values) rather than the N×C softmax.
// Rows run in parallel; their losses are summed afterwards in row order, so
// the result does not depend on the thread count.
void cross_entropy_cpu(const Tensor& logits, const Tensor& labels, Tensor& loss, Tensor& log_sum_exp) {
  visit_floating("cross_entropy", logits.dtype(), [&](auto tag) {
    using T = decltype(tag);
    visit_index("cross_entropy", labels.dtype(), [&](auto index_tag) {
      using I = decltype(index_tag);
      const T* px = static_cast<const T*>(logits.raw_data());
      const I* pl = static_cast<const I*>(labels.raw_data());
      T* lse = static_cast<T*>(log_sum_exp.raw_data());
      const int64_t rows = logits.size(0), classes = logits.size(1);
      std::vector<T> row_loss(static_cast<size_t>(rows));
#pragma omp parallel for if (rows * classes > HKT_OMP_MIN_WORK)
      for (int64_t n = 0; n < rows; ++n) {
        const T* row = px + n * classes;
        T m = -std::numeric_limits<T>::infinity();
        for (int64_t c = 0; c < classes; ++c) m = row[c] > m ? row[c] : m;
        T total = 0;
        for (int64_t c = 0; c < classes; ++c) total += std::exp(row[c] - m);
        lse[n] = m + std::log(total);
        row_loss[n] = lse[n] - row[static_cast<int64_t>(pl[n])];
      }
      T total_loss = 0;
      for (T value : row_loss) total_loss += value;
      *static_cast<T*>(loss.raw_data()) = total_loss / static_cast<T>(rows);
    });
  });
}

// dlogits[n, c] = (softmax(logits[n])[c] − [c = labels[n]]) · g / N,  softmax = exp(logits − lse).
void cross_entropy_backward_cpu(const Tensor& logits, const Tensor& labels, const Tensor& log_sum_exp,
                                const Tensor& grad_loss, Tensor& grad_logits) {
  visit_floating("cross_entropy_backward", logits.dtype(), [&](auto tag) {
    using T = decltype(tag);
    visit_index("cross_entropy_backward", labels.dtype(), [&](auto index_tag) {
      using I = decltype(index_tag);
      const T* px = static_cast<const T*>(logits.raw_data());
      const I* pl = static_cast<const I*>(labels.raw_data());
      const T* lse = static_cast<const T*>(log_sum_exp.raw_data());
      T* pd = static_cast<T*>(grad_logits.raw_data());
      const int64_t rows = logits.size(0), classes = logits.size(1);
      const T scale = *static_cast<const T*>(grad_loss.raw_data()) / static_cast<T>(rows);
#pragma omp parallel for if (rows * classes > HKT_OMP_MIN_WORK)
      for (int64_t n = 0; n < rows; ++n) {
        const T* row = px + n * classes;
        T* d = pd + n * classes;
        const int64_t label = static_cast<int64_t>(pl[n]);
        for (int64_t c = 0; c < classes; ++c) d[c] = (std::exp(row[c] - lse[n]) - T(c == label ? 1 : 0)) * scale;
      }
    });
  });
}

HKT_REGISTER_KERNEL(kernels::cross_entropy, DeviceType::CPU, cross_entropy_cpu);
HKT_REGISTER_KERNEL(kernels::cross_entropy_backward, DeviceType::CPU, cross_entropy_backward_cpu);

// ---- ops ------------------------------------------------------------------

namespace {

void check_cross_entropy_args(const Tensor& logits, const Tensor& labels) {
  check_floating("cross_entropy", logits);
  check_index("cross_entropy", labels);
  check_same_device("cross_entropy", {logits, labels});
  check(logits.dim() == 2, "cross_entropy: logits must be [N, C], got ", logits.shape());
  check(labels.dim() == 1, "cross_entropy: labels must be [N], got ", labels.shape());
  check(labels.size(0) == logits.size(0), "cross_entropy: logits ", logits.shape(), " but labels ",
        labels.shape());
  check(logits.size(0) > 0, "cross_entropy: empty batch, logits ", logits.shape());
  check(logits.size(1) > 0, "cross_entropy: no classes, logits ", logits.shape());
  // On the host: a kernel cannot report which label was wrong, and an out of
  // range label would read past the row.
  const int64_t classes = logits.size(1);
  const std::vector<int64_t> values = labels.to_vector<int64_t>();
  for (size_t n = 0; n < values.size(); ++n)
    check(values[n] >= 0 && values[n] < classes, "cross_entropy: label ", values[n], " at row ", n,
          " is out of range for ", classes, " classes");
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& labels) {
  check_cross_entropy_args(logits, labels);
  Tensor loss = Tensor::empty({}, logits.dtype(), logits.device());
  Tensor log_sum_exp = Tensor::empty({logits.size(0)}, logits.dtype(), logits.device());
  dispatch::kernel<CrossEntropyKernel>(kernels::cross_entropy, logits.device())(logits, labels, loss, log_sum_exp);
  record("cross_entropy", {logits}, loss,
         [logits = logits.detach(), labels = labels.detach(), log_sum_exp](const Tensor& g) -> std::vector<Tensor> {
           Tensor grad_logits = Tensor::empty(logits.shape(), logits.dtype(), logits.device());
           dispatch::kernel<CrossEntropyBackwardKernel>(kernels::cross_entropy_backward, logits.device())(
               logits, labels, log_sum_exp, g, grad_logits);
           return {grad_logits};
         });
  return loss;
}

}  // namespace hkt
