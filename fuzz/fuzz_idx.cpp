// Fuzzes the IDX reader, plain and gzip-compressed (the magic bytes decide).
#include "data/idx.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = hkt::fuzz::input_file(data, size);
  try {
    hkt::data::IdxArray array = hkt::data::read_idx(path);
    (void)array.values.size();
  } catch (const hkt::Error&) {
  }
  return 0;
}
