// Fuzzes the ListOps TSV reader (header, tabs, tokens, nesting, answers).
#include "data/listops.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = hkt::fuzz::input_file(data, size);
  try {
    hkt::data::Dataset dataset = hkt::data::load_listops(path, 64);
    hkt::data::validate(dataset, "fuzz");
  } catch (const hkt::Error&) {
  }
  return 0;
}
