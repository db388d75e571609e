// Fuzzes the JSON parser and the two configs read from a run folder, on the
// same input: the model config a checkpoint's __metadata__ holds
// (config_from_json, validate), as load_checkpoint reads it, and a run's
// config.json (options_from_json with validate_options; its "model" is such
// a config), as hkt-train --resume and hkt-inspect read it. What the latter
// accepts must write back to the same options: to_json of options_to_json,
// read again, gives the same text. One target for both keeps CI's fuzzing
// time (the seeds of tests/corpus/config_json hold both kinds).
#include <string>

#include "io/json.h"
#include "models/config.h"
#include "train/training.h"

namespace {

void read_model_config(const hkt::Json& json) {
  try {
    hkt::models::config_from_json(json).validate();
  } catch (const hkt::Error&) {
  }
}

void read_run_config(const hkt::Json& json) {
  hkt::models::TrainOptions options;
  try {
    options = hkt::models::options_from_json(json);
  } catch (const hkt::Error&) {
    return;
  }
  const std::string written = hkt::to_json(hkt::models::options_to_json(options));
  const std::string again =
      hkt::to_json(hkt::models::options_to_json(hkt::models::options_from_json(hkt::parse_json(written))));
  if (written != again) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  hkt::Json json;
  try {
    json = hkt::parse_json(text);
    (void)hkt::to_json(json);  // what was read can be written back
  } catch (const hkt::Error&) {
    return 0;
  }
  read_model_config(json);
  read_run_config(json);
  return 0;
}
