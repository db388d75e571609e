#include "train/checkpoint.h"

#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "io/json.h"
#include "io/safetensors.h"
#include "models/model_size.h"

namespace hkt::models {
namespace {

// Written by hkt-train, so it must carry a checksum.
constexpr const char* kFormat = "hkt-checkpoint-2";

// Whether the first 64 KiB (where __metadata__ is written) name kFormat.
bool names_our_format(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(1 << 16, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  return head.find(kFormat) != std::string::npos;
}

// The file, once its checksum matches (when it has one). A file that names
// hkt-train's format but has no checksum lost it to damage.
SafetensorsFile load_verified(const std::string& path, bool& has_checksum) {
  const std::string who = "checkpoint " + path;
  has_checksum = verify_safetensors_checksum(path, who) == ChecksumStatus::Verified;
  SafetensorsFile file;
  try {
    file = load_safetensors(path);
  } catch (const Error& error) {
    // A byte flipped inside the checksum field hides it and may break the header too.
    if (!has_checksum && names_our_format(path))
      fail(who, ": checksum mismatch (corrupt file): no checksum found; ", error.what());
    throw;
  }
  auto format = file.metadata.find("format");
  check(has_checksum || format == file.metadata.end() || format->second != kFormat, who,
        ": checksum mismatch (corrupt file): format ", kFormat, " but no checksum in __metadata__");
  return file;
}

SafetensorsFile load_verified(const std::string& path) {
  bool has_checksum = false;
  return load_verified(path, has_checksum);
}

std::string describe_differences(const ModelConfig& stored, const ModelConfig& live) {
  Json a = config_to_json(stored), b = config_to_json(live);
  std::string differences;
  for (const auto& [key, value] : a.as_object()) {
    if (value == b.at(key)) continue;
    differences += (differences.empty() ? "" : ", ") + key + " " + to_json(value) + " (checkpoint) vs " +
                   to_json(b.at(key)) + " (model)";
  }
  return differences;
}

// A config describing more parameters than the file holds is not its
// model's: refused before a model that size is built from it.
void check_config_fits_file(const SafetensorsFile& file, const ModelConfig& config, const std::string& path) {
  double stored = 0;
  for (const auto& [name, tensor] : file.tensors)
    if (name.rfind("optim.", 0) != 0) stored += static_cast<double>(tensor.numel());
  const double wanted = parameter_count(config);
  check(wanted <= stored, "checkpoint ", path, ": its config (", describe_sizes(config), ") describes ", wanted,
        " parameters, but the file holds ", stored);
}

ModelConfig config_of(const SafetensorsFile& file, const std::string& path) {
  auto it = file.metadata.find("config");
  check(it != file.metadata.end(), "checkpoint ", path, ": no \"config\" in __metadata__");
  ModelConfig config;
  try {
    config = config_from_json(parse_json(it->second));
  } catch (const Error& error) {
    fail("checkpoint ", path, ": bad config: ", error.what());
  }
  check_config_fits_file(file, config, path);
  return config;
}

// What a resumed run would otherwise take on trust: a step that is not
// negative and agrees with optim.step, no optim.* tensor the optimizer does
// not have, and finite values, with AdamW's exp_avg_sq (a running mean of
// squares) non-negative: a negative one is a NaN one step later.
void check_training_state(const SafetensorsFile& file, const Optimizer& optimizer, int64_t step,
                          const std::string& path) {
  check(step >= 0, "checkpoint ", path, ": step ", step, " in __metadata__ is negative");
  std::set<std::string> known;
  for (const auto& [name, _] : optimizer.state()) known.insert(name);
  for (const auto& [name, tensor] : file.tensors) {
    const bool optimizer_state = name.rfind("optim.", 0) == 0;
    check(!optimizer_state || known.count(name), "checkpoint ", path, ": unknown optimizer tensor '", name, "'");
    if (name == "optim.step") {
      check(tensor.numel() == 1 && !is_floating(tensor.dtype()), "checkpoint ", path,
            ": optim.step must be one integer, got ", tensor);
      const int64_t optimizer_step = tensor.to_vector<int64_t>()[0];
      check(optimizer_step == step, "checkpoint ", path, ": optim.step ", optimizer_step,
            " disagrees with the step in __metadata__, ", step);
      continue;
    }
    const bool squares = name.rfind("optim.exp_avg_sq.", 0) == 0;
    const std::vector<double> values = tensor.to_vector<double>();
    for (size_t i = 0; i < values.size(); ++i) {
      check(std::isfinite(values[i]), "checkpoint ", path, ": '", name, "' holds ", values[i], " at flat index ", i);
      check(!squares || values[i] >= 0, "checkpoint ", path, ": '", name, "' holds the negative ", values[i],
            " at flat index ", i, " (a mean of squares)");
    }
  }
}

// Points the parameter's storage at the loaded values (its handles stay valid).
void assign_parameter(const Tensor& parameter, const Tensor& loaded) {
  Tensor converted = loaded.to(parameter.dtype()).to(parameter.device()).clone();
  parameter.impl()->storage = converted.impl()->storage;
  parameter.impl()->byte_offset = converted.impl()->byte_offset;
}

}  // namespace

void save_checkpoint(const std::string& path, const Classifier& model, const Optimizer& optimizer, int64_t step) {
  NamedTensors tensors = model.named_parameters();
  for (auto& named : optimizer.state()) tensors.push_back(named);
  std::map<std::string, std::string> metadata{
      {"format", kFormat}, {"config", to_json(config_to_json(model.config()))}, {"step", std::to_string(step)}};
  save_safetensors(path, tensors, metadata, /*checksum=*/true);
}

ModelConfig read_checkpoint_config(const std::string& path) { return config_of(load_verified(path), path); }

namespace {

// The step: metadata "step" (hkt-train's), else the optimizer's step count, else 0.
int64_t step_of(const SafetensorsFile& file, const std::string& path) {
  if (auto entry = file.metadata.find("step"); entry != file.metadata.end()) {
    try {
      return parse_json(entry->second).as_int();
    } catch (const Error& error) {
      fail("checkpoint ", path, ": bad step '", entry->second, "': ", error.what());
    }
  }
  for (const auto& [name, value] : file.tensors)
    if (name == "optim.step" && value.numel() == 1) return static_cast<int64_t>(value.to(DType::Float64).item());
  return 0;
}

// Loads the parameters; returns the optim. tensors, for the caller to use or skip.
NamedTensors load_parameters(const SafetensorsFile& file, const std::string& path, Classifier& model) {
  ModelConfig stored = config_of(file, path);
  if (!(stored == model.config()))
    fail("checkpoint ", path, ": its config does not match the model: ", describe_differences(stored, model.config()));
  std::map<std::string, Tensor> by_name;
  NamedTensors optimizer_state;
  for (auto& [name, value] : file.tensors) {
    if (name.rfind("optim.", 0) == 0) optimizer_state.emplace_back(name, value);
    else by_name[name] = value;
  }
  std::vector<std::pair<Tensor, Tensor>> assignments;  // (parameter, stored value), applied once all are checked
  for (auto& [name, parameter] : model.named_parameters()) {
    auto it = by_name.find(name);
    check(it != by_name.end(), "checkpoint ", path, ": parameter '", name, "' is missing");
    check(it->second.shape() == parameter.shape(), "checkpoint ", path, ": parameter '", name, "' has shape ",
          it->second.shape(), ", the model wants ", parameter.shape());
    check(is_floating(it->second.dtype()), "checkpoint ", path, ": parameter '", name, "' is ", it->second);
    assignments.emplace_back(parameter, it->second);
    by_name.erase(it);
  }
  check(by_name.empty(), "checkpoint ", path, ": unexpected tensor '",
        by_name.empty() ? "" : by_name.begin()->first, "'");
  for (auto& [parameter, value] : assignments) assign_parameter(parameter, value);
  return optimizer_state;
}

}  // namespace

LoadedCheckpoint load_weights(const std::string& path, Classifier& model) {
  LoadedCheckpoint loaded;
  SafetensorsFile file = load_verified(path, loaded.checksum);
  load_parameters(file, path, model);
  loaded.step = step_of(file, path);
  return loaded;
}

LoadedCheckpoint load_checkpoint(const std::string& path, Classifier& model, Optimizer& optimizer) {
  LoadedCheckpoint loaded;
  SafetensorsFile file = load_verified(path, loaded.checksum);
  const NamedTensors optimizer_state = load_parameters(file, path, model);
  loaded.step = step_of(file, path);
  check_training_state(file, optimizer, loaded.step, path);
  loaded.optimizer_state = !optimizer_state.empty();
  if (!loaded.optimizer_state) return loaded;  // weights alone (e.g. from PyTorch): the optimizer starts fresh
  try {
    optimizer.load_state(optimizer_state);
  } catch (const Error& error) {
    fail("checkpoint ", path, ": ", error.what());
  }
  return loaded;
}

}  // namespace hkt::models
