#!/usr/bin/env bash
# Installs what is needed, builds from nothing and runs every test:
#   1. the release build (with the CUDA backend when nvcc is found) and all tests;
#   2. the CPU tests again under AddressSanitizer + UndefinedBehaviorSanitizer
#      (with LeakSanitizer), in a separate build folder;
#   3. every parser fuzzed for HKT_FUZZ_SECONDS (default 20) each (scripts/fuzz.sh).
# CUDA tests skip on a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${HKT_JOBS:-$(nproc)}"

./scripts/install-deps.sh all

echo "== release build"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DHKT_TESTS=ON  # ON: scripts/listops.sh may have built here without
cmake --build build -j "$jobs"
ctest --test-dir build -j "$jobs" --output-on-failure

echo "== sanitizer build (address, undefined, leak)"
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=Debug -DHKT_SANITIZE=ON -DHKT_CUDA=OFF -DHKT_NATIVE=OFF \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g"
cmake --build build-sanitize -j "$jobs"
ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
  LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp" \
  ctest --test-dir build-sanitize -j "$jobs" --output-on-failure
echo "== fuzzing (scripts/fuzz.sh)"
./scripts/fuzz.sh
echo "== all tests passed"
