#pragma once
// What every hkt-inspect subcommand starts from: a trained run (its
// config.json and checkpoint) loaded into a model, and a batch of its data.
#include <memory>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "models/classifier.h"
#include "train/training.h"

namespace hkt::inspect {

struct LoadedRun {
  models::TrainOptions options;  // DIR/config.json: task, data folder, seq_len, ...
  std::unique_ptr<models::Classifier> model;
  std::string checkpoint;        // the file the parameters came from
  int64_t step = 0;              // the checkpoint's step
  bool checksum = false;         // false: the checkpoint has none (not written by hkt-train)
};

// Loads DIR/config.json and `checkpoint` (default DIR/checkpoint.safetensors);
// throws hkt::Error naming the file at fault.
LoadedRun load_run(const std::string& folder, const std::string& checkpoint = "");

// `count` examples of a split ("train", "val" or "test") of the run's task,
// starting at `offset`; throws when the split is empty or too short.
data::Batch load_batch(const models::TrainOptions& options, const std::string& split, int64_t offset, int64_t count);

// The tokens of example `example` of the batch as text, for labels: ListOps
// tokens as written ("[MAX", "7", ")"), IMDB bytes as characters (\xNN when
// not printable), pixel values as numbers.
std::vector<std::string> token_names(const std::string& task, const data::Batch& batch, int64_t example);

// The training loss, the mean cross-entropy of the batch (SPEC section 5).
Tensor classifier_loss(const models::Classifier& model, const data::Batch& batch);

}  // namespace hkt::inspect
