#pragma once
// A model's size from its config alone, before anything is allocated: a
// config from a file (config.json, a checkpoint) or a flag can ask for 10^9
// layers, which would otherwise hang allocating or end in a bare bad_alloc.
#include <cstdint>
#include <string>

#include "models/config.h"

namespace hkt::models {

// The number of scalars Classifier(config) holds, as a double: a hostile
// config's count need not fit in 64 bits (tests/test_models.cpp checks it
// against Classifier::parameter_count()).
double parameter_count(const ModelConfig& config);

// Bytes of a training step's parameters, gradients and AdamW moments (16 per
// parameter) and, roughly, its activations for `batch` sequences of max_len.
double training_bytes(const ModelConfig& config, int64_t batch);

// Throws hkt::Error when the model has more than `max_parameters`: the count,
// the memory, the config's sizes and where they came from (`source`).
void check_model_size(const ModelConfig& config, int64_t batch, double max_parameters, const std::string& source);

// "d_model 64, n_layers 2, n_heads 4, d_ff 128, levels 3, vocab 18, max_len 512, classes 10"
std::string describe_sizes(const ModelConfig& config);

}  // namespace hkt::models
