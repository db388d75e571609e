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

}  // namespace hkt
