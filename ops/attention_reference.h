#pragma once
// The slow, obvious versions of the fused attention ops, composed from other
// ops and materialising every [B, H, T, T] score tensor: the references the
// fused kernels are tested against (tests/test_attention.cpp,
// tests/test_multiscale_attention.cpp) and benchmarked against (tools/hkt-bench).
// Same arguments and results as attention() and multiscale_attention().
#include <cstdint>
#include <vector>

#include "engine/tensor.h"

namespace hkt {

// gemm → scale → masked_fill (padding, future) → softmax → matmul.
Tensor attention_reference(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& lengths, bool causal);

// As models/hkt_attention.cpp: per level gemm, upsample through the index maps
// (times the causal allowed-mask), λ-weighted sum; then mask, softmax, matmul.
Tensor multiscale_attention_reference(const std::vector<Tensor>& q_levels, const std::vector<Tensor>& k_levels,
                                      const Tensor& v, const Tensor& level_logits, const Tensor& lengths,
                                      int64_t stride, bool causal);

}  // namespace hkt
