#pragma once
// Checkpoints (SPEC section 6): one safetensors file holding every parameter
// under its SPEC name, the optimizer state under "optim." names, and in
// __metadata__ the model config (JSON, key "config") and the step. Written to
// a temporary file and renamed, so a crash leaves the old file or the new one.
// __metadata__ also holds a CRC-32 of the file (verify_safetensors_checksum):
// loading a damaged file fails with "checkpoint <path>: checksum mismatch
// (corrupt file)" before any of it is used.
//
// Files from other writers load too (SPEC section 6): what Python's
// safetensors.torch.save_file(model.state_dict(), path, metadata={"config":
// ...}) writes has no checksum, step or optimizer state, and may hold F16 or
// BF16 tensors (converted to float32). A file without a checksum is verified
// by its structure alone; only a file that says it was written by hkt-train
// (format hkt-checkpoint-2) must carry one.
#include <cstdint>
#include <string>

#include "models/classifier.h"
#include "nn/optim.h"

namespace hkt::models {

void save_checkpoint(const std::string& path, const Classifier& model, const Optimizer& optimizer, int64_t step);

struct LoadedCheckpoint {
  int64_t step = 0;               // metadata "step", else the tensor optim.step, else 0
  bool optimizer_state = false;   // false: the file holds no optim. tensors; the optimizer was left fresh
  bool checksum = false;          // false: the file has none (not written by hkt-train)
};

// Loads into an existing model and optimizer. Throws, naming the file, when
// the config differs from the model's (listing every differing key), or a
// parameter is missing, unexpected or of another shape.
LoadedCheckpoint load_checkpoint(const std::string& path, Classifier& model, Optimizer& optimizer);

// The parameters alone (inspection, inference): optim. tensors are skipped.
LoadedCheckpoint load_weights(const std::string& path, Classifier& model);

// The model config stored in a checkpoint's metadata.
ModelConfig read_checkpoint_config(const std::string& path);

}  // namespace hkt::models
