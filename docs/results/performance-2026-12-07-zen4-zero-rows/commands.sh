#!/usr/bin/env bash
# Zero-gradient rows skipped in GELU's, LayerNorm's, the convolution's and the hybrid mix's backward
# (e61c4bd, a363832), on the AMD EPYC Zen 4 VM (2 vCPUs, AVX-512). BEFORE: a198b81 (the session's start)
# in a worktree; build-nocuda: HEAD. Both -DCMAKE_BUILD_TYPE=Release -DHKT_CUDA=OFF -DHKT_TESTS=OFF;
# builds alternate in every round. Nothing else ran. VENV: bench/setup-venv.sh's environment (PyTorch 2.15).
set -u
out=docs/results/performance-2026-12-07-zen4-zero-rows
BEFORE=${BEFORE:-/work/wt-base/build-nocuda}
export VENV=${VENV:-/work/venv-bench}
lscpu | grep -E "Model name|CPU family|^Model:|^CPU\(s\)|L1d|L2|L3" > $out/machine.txt
# The per-kernel breakdown before and after, alternating, 1 thread (steady) then 2.
{
for t in 1 1 1 2 2; do
  for dir in "$BEFORE" build-nocuda; do
    echo "== $dir, threads $t: $(uptime)"
    $dir/hkt-bench step --model both --profile --down-pointwise --threads $t --steps 6 --warmup 1 | grep -v '^{' | grep -v "ratio"
  done
done
} > $out/step-profile-before-after.txt 2>&1
THREADS=2 STEPS=6 bench/ab.sh step "$BEFORE" build-nocuda 6 > $out/ab-step-2threads.txt 2>&1
# HKT/MHA at HEAD: steps interleaved in one process, 20 steps a run, 7 runs on 2 threads and 3 on 1.
{
for t in 2 2 2 2 2 2 2 1 1 1; do
  echo "== threads $t: $(uptime)"
  build-nocuda/hkt-bench step --model both --down-pointwise --threads $t --steps 20 --warmup 2 2>/dev/null | grep '"step_pair"'
done
} > $out/step-ratio.txt 2>&1
BUILD=build-nocuda ROUNDS=7 MODEL=mha MODE=compile+sdpa OUT=/tmp/rounds-mha-c bench/rounds.sh 2>&1 |
  grep -v "^W12" > $out/rounds-mha-compile-sdpa.txt
LENGTHS=full BUILD=build-nocuda ROUNDS=7 MODEL=mha MODE=compile+sdpa OUT=/tmp/rounds-mha-cf bench/rounds.sh 2>&1 |
  grep -v "^W12" > $out/rounds-mha-compile-sdpa-full-length.txt
BUILD=build-nocuda ROUNDS=5 MODEL=hkt MODE=sdpa OUT=/tmp/rounds-hkt bench/rounds.sh 2>&1 |
  grep -v "^W12" > $out/rounds-hkt-sdpa.txt
BUILD=build VENV=$VENV OUT=/tmp/compare bench/compare.sh > $out/compare.txt 2>&1
# Last (01:12-01:14, load average 0.4-1.2): hkt-train on ListOps, before and after.
THREADS=2 bench/ab.sh listops "$BEFORE" build-nocuda 3 > $out/ab-listops-2threads.txt 2>&1
THREADS=1 bench/ab.sh listops "$BEFORE" build-nocuda 3 > $out/ab-listops-1thread.txt 2>&1
