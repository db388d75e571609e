// Fuzzes the CIFAR-10 binary reader, grey and colour.
#include "data/cifar.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = hkt::fuzz::input_file(data, size);
  for (auto pixels : {hkt::data::CifarPixels::Grey, hkt::data::CifarPixels::Colour}) {
    try {
      hkt::data::validate(hkt::data::read_cifar10_file(path, pixels), "fuzz");
    } catch (const hkt::Error&) {
    }
  }
  return 0;
}
