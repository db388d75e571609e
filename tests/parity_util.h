#pragma once
// CPU-vs-CUDA parity tests: the CPU float32 result is the reference.
//
// On a machine without a CUDA device (or a build without CUDA) every parity
// test returns at once; the first one prints the single line that says so.
#include <catch2/catch.hpp>
#include <cstdio>

#include "engine/dispatch.h"

namespace hkt::testing {

inline bool cuda_available() {
  static const bool available = [] {
    bool present = dispatch::device_count(DeviceType::CUDA) > 0;
    if (!present) std::printf("no CUDA device: parity tests skipped\n");
    return present;
  }();
  return available;
}

}  // namespace hkt::testing

// First line of every parity test case.
#define HKT_REQUIRE_CUDA_OR_SKIP()               \
  do {                                           \
    if (!::hkt::testing::cuda_available()) return; \
  } while (0)
