#include "tools/inspect/run.h"

#include <filesystem>
#include <numeric>

#include "hkt.h"
#include "train/checkpoint.h"

namespace hkt::inspect {

LoadedRun load_run(const std::string& folder, const std::string& checkpoint) {
  namespace fs = std::filesystem;
  LoadedRun run;
  run.options = models::read_run_options(folder);
  run.checkpoint = checkpoint.empty() ? (fs::path(folder) / "checkpoint.safetensors").string() : checkpoint;
  models::ModelConfig config = models::read_checkpoint_config(run.checkpoint);
  run.model = std::make_unique<models::Classifier>(config, 0);
  run.model->set_fused_attention(run.options.fused_attention);
  const models::LoadedCheckpoint loaded = models::load_weights(run.checkpoint, *run.model);
  run.step = loaded.step;
  run.checksum = loaded.checksum;
  return run;
}

data::Batch load_batch(const models::TrainOptions& options, const std::string& split, int64_t offset, int64_t count) {
  check(split == "train" || split == "val" || split == "test", "--split must be train, val or test, got '", split, "'");
  check(count >= 1 && offset >= 0, "need --batch >= 1 and --offset >= 0, got ", count, " and ", offset);
  models::TaskData task = models::load_task(options);
  const data::Dataset& set = split == "train" ? task.train : split == "val" ? task.val : task.test;
  check(offset + count <= set.count, "the ", split, " split has ", set.count, " examples; --offset ",
        offset, " --batch ", count, " does not fit");
  std::vector<int64_t> indices(static_cast<size_t>(count));
  std::iota(indices.begin(), indices.end(), offset);
  return data::make_batch(set, indices);
}

Tensor classifier_loss(const models::Classifier& model, const data::Batch& batch) {
  return cross_entropy(model.forward(batch.tokens, batch.lengths), batch.labels);
}

}  // namespace hkt::inspect
