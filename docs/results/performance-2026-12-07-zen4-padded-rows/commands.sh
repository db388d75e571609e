#!/usr/bin/env bash
# 2026-12-07, the session after the zero-rows one: padded rows skipped in the position-wise forward.
# Run from the repository root. "Before" is 5e0e215 (this session's start) in a worktree:
#   git worktree add /work/wt-base 5e0e215
#   cmake -S /work/wt-base -B /work/wt-base/build-nocuda -DCMAKE_BUILD_TYPE=Release -DHKT_CUDA=OFF -DHKT_TESTS=OFF
#   cmake --build /work/wt-base/build-nocuda -j2 --target hkt-bench hkt-train listops-gen
# build-nocuda/ is HEAD configured the same way, build/ HEAD with tests and CUDA (compare.sh uses it).
# HEAD was 28843ff when this script ran (03:55–04:09): the masked LayerNorm and hybrid mix, not yet
# gelu_masked. Nothing else ran on the machine.
set -u
out=docs/results/performance-2026-12-07-zen4-padded-rows
base=/work/wt-base/build-nocuda
export VENV=${VENV:-/work/venv-bench}
lscpu | grep -E "Model name|^CPU\(s\)|Flags" | cut -c1-200 > $out/machine.txt
# Per kernel, before against after, alternating (1 thread: steady to a few %).
THREADS=1 STEPS=4 bench/ab.sh profile $base build-nocuda 6 > $out/ab-profile-1thread.txt 2>&1
THREADS=2 STEPS=6 bench/ab.sh step $base build-nocuda 6 > $out/ab-step-2threads.txt 2>&1
THREADS=2 bench/ab.sh listops $base build-nocuda 4 > $out/ab-listops-2threads.txt 2>&1
# The HKT/MHA ratio at HEAD: the Python scripts' batch (lengths T/2 … T) and full length.
{
for lengths in spread full; do
  for t in 2 2 2 2 2 1 1 1; do
    echo "== lengths $lengths, threads $t: $(uptime)"
    build-nocuda/hkt-bench step --model both --down-pointwise --threads $t --steps 20 --warmup 2 \
      --lengths $lengths 2>/dev/null | grep '"step_pair"'
  done
done
} > $out/step-ratio.txt 2>&1
# MHA against PyTorch's best mode, alternating rounds, both batches.
BUILD=build-nocuda ROUNDS=7 MODEL=mha MODE=compile+sdpa OUT=/tmp/rounds-mha bench/rounds.sh 2>&1 |
  grep -v "^W12" > $out/rounds-mha-compile-sdpa.txt
LENGTHS=full BUILD=build-nocuda ROUNDS=7 MODEL=mha MODE=compile+sdpa OUT=/tmp/rounds-mha-full bench/rounds.sh 2>&1 |
  grep -v "^W12" > $out/rounds-mha-compile-sdpa-full-length.txt
# The table in one run.
BUILD=build VENV=$VENV OUT=/tmp/compare bench/compare.sh > $out/compare.txt 2>&1
# Later, at bd678fe (gelu_masked added), the per-kernel comparison again:
#   THREADS=1 STEPS=4 bench/ab.sh profile $base build-nocuda 5 > $out/ab-profile-1thread-gelu-masked.txt 2>&1
