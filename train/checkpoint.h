#pragma once
// Checkpoints (SPEC section 6): one safetensors file holding every parameter
// under its SPEC name, the optimizer state under "optim." names, and in
// __metadata__ the model config (JSON, key "config") and the step. Written to
// a temporary file and renamed, so a crash leaves the old file or the new one.
// __metadata__ also holds a CRC-32 of the file (verify_safetensors_checksum):
// loading a damaged file fails with "checkpoint <path>: checksum mismatch
// (corrupt file)" before any of it is used.
#include <cstdint>
#include <string>

#include "models/classifier.h"
#include "nn/optim.h"

namespace hkt::models {

void save_checkpoint(const std::string& path, const Classifier& model, const Optimizer& optimizer, int64_t step);

// Loads into an existing model and optimizer and returns the step. Throws,
// naming the file, when the config differs from the model's (listing every
// differing key), or a parameter is missing, unexpected or of another shape.
int64_t load_checkpoint(const std::string& path, Classifier& model, Optimizer& optimizer);

// The model config stored in a checkpoint's metadata.
ModelConfig read_checkpoint_config(const std::string& path);

}  // namespace hkt::models
