#!/usr/bin/env bash
# 2026-12-07, fourth session of the day: the mix's lane kernels (ops/conv1d_lanes.h) and
# whole heads per thread in the attention forward.
# Run from the repository root. "Before" is 2b09b42 (this session's start) in a worktree:
#   git worktree add /work/wt-exp 2b09b42
#   cmake -S /work/wt-exp -B /work/wt-exp/build-nocuda -DCMAKE_BUILD_TYPE=Release -DHKT_CUDA=OFF -DHKT_TESTS=OFF
#   cmake --build /work/wt-exp/build-nocuda -j2 --target hkt-bench hkt-train listops-gen
# build-nocuda/ is HEAD configured the same way, build/ HEAD with tests and CUDA (compare.sh uses it).
# HEAD was 9cc816c when this script ran. Nothing else ran on the machine.
set -u
out=docs/results/performance-2026-12-07-zen4-mix-lanes
base=/work/wt-exp/build-nocuda
export VENV=${VENV:-/work/venv-bench}
lscpu | grep -E "Model name|^CPU\(s\)|Flags" | cut -c1-200 > $out/machine.txt
# Per kernel, before against after, alternating: 1 thread, then 2 threads passive.
THREADS=1 STEPS=4 bench/ab.sh profile $base build-nocuda 6 > $out/ab-profile-1thread.txt 2>&1
THREADS=2 STEPS=8 bench/ab.sh profile $base build-nocuda 6 > $out/ab-profile-2threads.txt 2>&1
THREADS=2 bench/ab.sh listops $base build-nocuda 4 > $out/ab-listops-2threads.txt 2>&1
# The HKT/MHA ratio, before and after alternating (steps interleaved in one process, libgomp's default wait).
{
for lengths in spread full; do
  for t in 2 2 2 2 2 2 1 1 1; do
    for dir in $base build-nocuda; do
      echo "== $dir lengths $lengths, threads $t: $(uptime)"
      $dir/hkt-bench step --model both --down-pointwise --threads $t --steps 20 --warmup 2 \
        --lengths $lengths 2>/dev/null | grep '"step_pair"'
    done
  done
done
} > $out/step-ratio.txt 2>&1
# Peak RSS and allocations per step, each build.
for dir in $base build-nocuda; do
  echo "== $dir"
  $dir/hkt-bench step --model both --down-pointwise --threads 2 --steps 6 2>/dev/null | grep -E '^(mha|hkt|model) '
done > $out/rss-allocs.txt 2>&1
# MHA against PyTorch's best mode, alternating rounds, both batches.
BUILD=build-nocuda ROUNDS=7 MODEL=mha MODE=compile+sdpa OUT=/tmp/rounds-mha bench/rounds.sh 2>&1 |
  grep -v "^W12" > $out/rounds-mha-compile-sdpa.txt
LENGTHS=full BUILD=build-nocuda ROUNDS=7 MODEL=mha MODE=compile+sdpa OUT=/tmp/rounds-mha-full bench/rounds.sh 2>&1 |
  grep -v "^W12" > $out/rounds-mha-compile-sdpa-full-length.txt
# The table in one run.
BUILD=build VENV=$VENV OUT=/tmp/compare bench/compare.sh > $out/compare.txt 2>&1
echo finished > $out/.done
