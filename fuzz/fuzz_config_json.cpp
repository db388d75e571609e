// Fuzzes the JSON parser and the model config a checkpoint's __metadata__
// holds (parse_json, config_from_json, validate), as load_checkpoint reads it.
#include <string>

#include "io/json.h"
#include "models/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    hkt::Json json = hkt::parse_json(text);
    (void)hkt::to_json(json);  // what was read can be written back
    hkt::models::ModelConfig config = hkt::models::config_from_json(json);
    config.validate();
  } catch (const hkt::Error&) {
  }
  return 0;
}
