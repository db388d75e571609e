#pragma once
// The layers the models are built from, as torch::nn names them, with
// parameters "weight" and "bias" (SPEC section 5).
#include "engine/random.h"
#include "nn/module.h"
#include "ops/index.h"
#include "ops/matmul.h"
#include "ops/norm.h"

namespace hkt::nn {

// Initial values: weights N(0, 0.02) as GPT-2 and llm.c do, biases zero.
constexpr double kInitStd = 0.02;

struct Linear : Module {
  Parameter weight, bias;  // [out, in], [out]
  Linear(int64_t in, int64_t out, Generator& generator);
  Tensor forward(const Tensor& x) const { return linear(x, weight, bias); }
};

struct LayerNorm : Module {
  Parameter weight, bias;  // [d], [d]
  explicit LayerNorm(int64_t d);
  Tensor forward(const Tensor& x) const { return layer_norm(x, weight, bias, 1e-5); }
  // x [B, T, d] with the rows of padded positions (t ≥ lengths[b]) left 0 (layer_norm_masked).
  Tensor forward(const Tensor& x, const Tensor& lengths) const {
    return layer_norm_masked(x, weight, bias, lengths, 1e-5);
  }
};

struct Embedding : Module {
  Parameter weight;  // [count, d]
  Embedding(int64_t count, int64_t d, Generator& generator);
  Tensor forward(const Tensor& tokens) const { return embedding(weight, tokens); }
};

}  // namespace hkt::nn
