// Fuzzes a run's config.json as hkt-train --resume and hkt-inspect read it
// (parse_json, options_from_json with validate_options), and checks that
// what is accepted writes back to the same options: to_json of
// options_to_json, read again, gives the same text.
#include <string>

#include "io/json.h"
#include "train/training.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  hkt::models::TrainOptions options;
  try {
    options = hkt::models::options_from_json(hkt::parse_json(text));
  } catch (const hkt::Error&) {
    return 0;
  }
  const std::string written = hkt::to_json(hkt::models::options_to_json(options));
  const std::string again = hkt::to_json(hkt::models::options_to_json(hkt::models::options_from_json(hkt::parse_json(written))));
  if (written != again) __builtin_trap();
  return 0;
}
