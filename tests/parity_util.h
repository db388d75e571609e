#pragma once
// CPU-vs-CUDA parity tests: the CPU float32 result is the reference.
//
// On a machine without a CUDA device (or a build without CUDA) every parity
// test returns at once; the first one prints the single line that says so.
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/dispatch.h"

namespace hkt::testing {

// HKT_PARITY_DRY_RUN=1 runs the comparisons with the CPU standing in for
// CUDA (tests/parity_check.h); tests of CUDA-only behaviour skip then.
inline bool parity_dry_run() {
  const char* value = std::getenv("HKT_PARITY_DRY_RUN");
  return value != nullptr && std::string(value) == "1";
}

inline bool cuda_available() {
  static const bool available = [] {
    bool present = dispatch::device_count(DeviceType::CUDA) > 0;
    if (!present) std::printf("no CUDA device: parity tests skipped\n");
    return present;
  }();
  return available;
}

}  // namespace hkt::testing

// First line of every test of CUDA-only behaviour (allocator counters,
// device errors): a dry run has no CUDA tensors for them to look at.
#define HKT_REQUIRE_CUDA_OR_SKIP()                                                            \
  do {                                                                                        \
    if (::hkt::testing::parity_dry_run() || !::hkt::testing::cuda_available()) return;        \
  } while (0)
