#include "tools/inspect/run.h"

#include <cstdio>
#include <filesystem>
#include <numeric>

#include "data/listops.h"
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

std::vector<std::string> token_names(const std::string& task, const data::Batch& batch, int64_t example) {
  static const std::vector<std::string> kListOps = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9",
                                                    "[MAX", "[MIN", "[MED", "[SM", "]", "(", ")"};
  const int64_t length = batch.lengths.to_vector<int64_t>()[static_cast<size_t>(example)];
  const std::vector<int64_t> ids = batch.tokens.to_vector<int64_t>();
  std::vector<std::string> names;
  for (int64_t i = 0; i < length; ++i) {
    const int64_t id = ids[static_cast<size_t>(example * batch.tokens.size(1) + i)];
    std::string name = std::to_string(id);
    if (task == "listops") {
      for (const std::string& token : kListOps)
        if (data::listops_token_id(token) == id) name = token;
    } else if (task == "imdb" && id >= 1 && id <= 256) {
      const int byte = static_cast<int>(id - 1);
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02X", byte);
      name = byte > 0x20 && byte < 0x7F ? std::string(1, static_cast<char>(byte)) : byte == 0x20 ? "␣" : escaped;
    }
    names.push_back(name);
  }
  return names;
}

Tensor classifier_loss(const models::Classifier& model, const data::Batch& batch) {
  return cross_entropy(model.forward(batch.tokens, batch.lengths), batch.labels);
}

}  // namespace hkt::inspect
