// Fuzzes load_safetensors (and the checkpoint checksum check) on whole files.
#include "fuzz/fuzz_input.h"
#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = hkt::fuzz::input_file(data, size);
  try {
    hkt::verify_safetensors_checksum(path, "fuzz");
  } catch (const hkt::Error&) {
  }
  try {
    hkt::SafetensorsFile file = hkt::load_safetensors(path);
    for (auto& [name, tensor] : file.tensors) (void)tensor.nbytes();
  } catch (const hkt::Error&) {
  }
  return 0;
}
