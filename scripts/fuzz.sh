#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang, ASan + UBSan) and runs each one
# for HKT_FUZZ_SECONDS (default 20) from its seed corpus tests/corpus/<target>.
# Every bad input must end in hkt::Error; a crash, a sanitizer report, a hang
# over 10 s or more than 2 GiB of memory fails the run and leaves the input
# as build-fuzz/artifacts/<target>/crash-* (make it a regression test).
# New interesting inputs go to build-fuzz/corpus/<target>, not into the repo.
#   HKT_FUZZ_SECONDS=300 scripts/fuzz.sh           # longer runs
#   HKT_FUZZ_TARGETS="safetensors idx" scripts/fuzz.sh
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${HKT_FUZZ_SECONDS:-20}"
jobs="${HKT_JOBS:-$(nproc)}"
targets=(${HKT_FUZZ_TARGETS:-safetensors config_json listops idx cifar imdb cli metrics})

cmake -S fuzz -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ >/dev/null
cmake --build build-fuzz -j "$jobs"

export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0"
export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp"  # fontconfig's caches (fuzz_metrics draws text)
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export OMP_WAIT_POLICY=passive OMP_NUM_THREADS=1
for target in "${targets[@]}"; do
  corpus="build-fuzz/corpus/$target" artifacts="build-fuzz/artifacts/$target"
  mkdir -p "$corpus" "$artifacts"
  echo "== fuzz $target for ${seconds}s"
  # -close_fd_mask=1: the command-line target prints --help's usage.
  ./build-fuzz/fuzz_"$target" "$corpus" "tests/corpus/$target" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -malloc_limit_mb=1024 -max_len=8192 -close_fd_mask=1 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" 2>"build-fuzz/$target.log" || {
    tail -n 60 "build-fuzz/$target.log"
    echo "fuzz $target: FAILED; the input is in $artifacts/"
    exit 1
  }
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "build-fuzz/$target.log" | tr '\n' ' '
  echo
done
echo "== fuzzing passed"
