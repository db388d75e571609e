#!/usr/bin/env bash
# What a GPU session runs to check the CUDA backend, writing every log to OUTDIR:
#   1. a fresh release build for sm_90 (H100/H200) in build-gpu;
#   2. the CPU-vs-CUDA parity tests (ctest -R parity), then the whole suite;
#   3. hkt-bench --device cuda (if this hkt-bench has the flag);
#   4. a short hkt-train --device cuda run on a generated ListOps set.
# Keeps going after a failing step and exits non-zero if any step failed;
# OUTDIR/summary.txt lists each step's exit code.
#   ./scripts/gpu-check.sh OUTDIR
# With GPU_CHECK_PREBUILT=1, steps 1's configure and build are skipped and
# build-gpu must already hold a CUDA build (one made on another machine for
# sm_90, when the GPU machine has no OpenBLAS or Catch2 to build with).
set -uo pipefail
if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
cd "$(dirname "$0")/.."
out="$(mkdir -p "$1" && cd "$1" && pwd)"
jobs="${HKT_JOBS:-$(nproc)}"
build=build-gpu
failed=0
: > "$out/summary.txt"

step() {  # step NAME COMMAND...: runs the command, its output to OUTDIR/NAME.log
  local name="$1"
  shift
  echo "== $name"
  "$@" > "$out/$name.log" 2>&1
  local status=$?
  echo "$name: exit $status" | tee -a "$out/summary.txt"
  [ "$status" -eq 0 ] || failed=1
  return "$status"
}

export OMP_WAIT_POLICY=passive
nvidia-smi > "$out/nvidia-smi.log" 2>&1 || true
if [ "${GPU_CHECK_PREBUILT:-0}" = 1 ]; then
  [ -x "$build/hkt-train" ] || { echo "GPU_CHECK_PREBUILT=1 but $build/hkt-train is missing" >&2; exit 1; }
  echo "configure, build: skipped (GPU_CHECK_PREBUILT=1)" | tee -a "$out/summary.txt"
else
  step configure cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DHKT_CUDA=ON || {
    echo "configure failed; see $out/configure.log"
    exit 1
  }
  step build cmake --build "$build" -j "$jobs" || {
    echo "build failed; see $out/build.log"
    exit 1
  }
fi
step ctest-parity ctest --test-dir "$build" -R parity --output-on-failure -V  # -V: shows a skip line
grep -q "no CUDA device: parity tests skipped" "$out/ctest-parity.log" &&
  echo "WARNING: the parity tests skipped (no CUDA device seen)" | tee -a "$out/summary.txt"
step ctest-all ctest --test-dir "$build" -j "$jobs" --output-on-failure

if "$build/hkt-bench" --help 2>&1 | grep -q -- "--device"; then
  step bench-cuda "$build/hkt-bench" --device cuda ${GPU_CHECK_BENCH_ARGS:-}  # e.g. "--max-t 2048" for a short run
else
  echo "bench-cuda: skipped (this hkt-bench has no --device flag)" | tee -a "$out/summary.txt"
fi

data="$out/listops-data"
mkdir -p "$data"
gen() { "$build/listops-gen" --seed "$1" --count "$2" --min-len 16 --max-len 96 --max-depth 4 --max-args 5 --out "$data/$3"; }
gen_all() { gen 1 2000 train.tsv && gen 2 300 val.tsv && gen 3 300 test.tsv; }
step listops-gen gen_all
for impl in composed fused; do
  step "train-cuda-$impl" "$build/hkt-train" --task listops --data "$data" --seq-len 96 --d-model 64 --layers 2 \
    --heads 4 --d-ff 128 --batch 32 --steps 100 --eval-every 50 --lr 2e-3 --seed 0 --model hkt \
    --attention-impl "$impl" --device cuda --overwrite --out "$out/train-cuda-$impl"
done
step train-cpu-reference "$build/hkt-train" --task listops --data "$data" --seq-len 96 --d-model 64 --layers 2 \
  --heads 4 --d-ff 128 --batch 32 --steps 100 --eval-every 50 --lr 2e-3 --seed 0 --model hkt \
  --attention-impl composed --device cpu --overwrite --out "$out/train-cpu-reference"

echo "== summary"
cat "$out/summary.txt"
exit "$failed"
