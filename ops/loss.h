#pragma once
// Losses. cross_entropy is fused with log_softmax (SPEC §5: the mean over the
// batch), as PyTorch's F.cross_entropy with reduction='mean' and no
// ignore_index or label smoothing.
#include "engine/tensor.h"

namespace hkt {

// logits: [N, C] float; labels: [N] int32 or int64, each in [0, C).
// Returns a 0-d tensor: (1/N) Σ_n −log softmax(logits[n])[labels[n]].
// Labels are range-checked on the host before the kernel runs.
Tensor cross_entropy(const Tensor& logits, const Tensor& labels);

// ---- kernel names and signatures (shared by the CPU and CUDA registrations) ----

namespace kernels {  // the names they register under, declared once (ops/, cuda/ and the lookups use them)
inline constexpr const char* cross_entropy = "cross_entropy";
inline constexpr const char* cross_entropy_backward = "cross_entropy_backward";
}  // namespace kernels

// logits: [N, C], labels: [N]. Writes loss: [] (the batch mean) and
// log_sum_exp: [N], which backward needs to rebuild the softmax.
using CrossEntropyKernel = void(const Tensor& logits, const Tensor& labels, Tensor& loss, Tensor& log_sum_exp);
// grad_loss: [] (dL/dloss); grad_logits: [N, C].
using CrossEntropyBackwardKernel = void(const Tensor& logits, const Tensor& labels, const Tensor& log_sum_exp,
                                        const Tensor& grad_loss, Tensor& grad_logits);

}  // namespace hkt
