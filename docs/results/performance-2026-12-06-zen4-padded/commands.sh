#!/usr/bin/env bash
# Padded query rows skipped in the forward (PaddedRows::Zero, db9c557) and heads taken longest first,
# on the AMD EPYC Zen 4 VM (2 vCPUs, AVX-512). BEFORE: 444da4a (the session's start) in a worktree;
# build-nocuda: HEAD. Both -DCMAKE_BUILD_TYPE=Release -DHKT_CUDA=OFF -DHKT_TESTS=OFF; builds
# alternate in every round. Nothing else ran. VENV: bench/setup-venv.sh's environment (PyTorch 2.15).
set -u
out=docs/results/performance-2026-12-06-zen4-padded
BEFORE=${BEFORE:-/work/wt-base/build-nocuda}
export VENV=${VENV:-/work/venv-bench}
lscpu | grep -E "Model name|CPU family|^Model:|^CPU\(s\)|L1d|L2|L3" > $out/machine.txt
THREADS=2 STEPS=6 bench/ab.sh step "$BEFORE" build-nocuda 6 > $out/ab-step-2threads.txt 2>&1
THREADS=1 STEPS=4 bench/ab.sh step "$BEFORE" build-nocuda 4 > $out/ab-step-1thread.txt 2>&1
THREADS=1 STEPS=4 EXTRA="--down-pointwise --lengths full" bench/ab.sh step "$BEFORE" build-nocuda 3 \
  > $out/ab-step-1thread-full-length.txt 2>&1
# The per-kernel breakdown before and after, alternating, 2 threads then 1.
{
for t in 2 1; do
  for dir in "$BEFORE" build-nocuda; do
    echo "== $dir, threads $t: $(uptime)"
    $dir/hkt-bench step --model both --profile --down-pointwise --threads $t --steps 8 --warmup 1 | grep -v '^{' | grep -v "ratio"
  done
done
} > $out/step-profile-before-after.txt 2>&1
# HKT/MHA: separate runs and steps interleaved in one process, before and after.
{
for L in spread full; do for p in --down-pointwise ""; do for t in 2 2 1; do for dir in "$BEFORE" build-nocuda; do
  echo "== $dir, lengths $L, threads $t, ${p:-no pointwise}: $(uptime)"
  $dir/hkt-bench step --model both $p --lengths $L --threads $t --steps 8 --warmup 1 2>/dev/null | grep -i "ratio"
done; done; done; done
} > $out/step-ratio.txt 2>&1
BUILD=build-nocuda ROUNDS=5 MODEL=mha MODE=compile+sdpa OUT=/tmp/rounds-mha-c bench/rounds.sh 2>&1 |
  grep -v "^W1206" > $out/rounds-mha-compile-sdpa.txt
LENGTHS=full BUILD=build-nocuda ROUNDS=5 MODEL=mha MODE=compile+sdpa OUT=/tmp/rounds-mha-cf bench/rounds.sh 2>&1 |
  grep -v "^W1206" > $out/rounds-mha-compile-sdpa-full-length.txt
BUILD=build-nocuda ROUNDS=5 MODEL=hkt MODE=sdpa OUT=/tmp/rounds-hkt bench/rounds.sh 2>&1 |
  grep -v "^W1206" > $out/rounds-hkt-sdpa.txt
# Re-measured at 22:53 on a quiet machine (load average under 0.8 at the start, nothing else running):
# the 1-thread per-kernel profile above ran 3 times alternating, then these.
{
for r in 1 2 3; do for dir in "$BEFORE" build-nocuda; do
  echo "== $dir, threads 1, round $r: $(uptime)"
  $dir/hkt-bench step --model both --profile --down-pointwise --threads 1 --steps 6 | grep -v '^{' | grep -v "ratio"
done; done
} > $out/step-profile-quiet-1thread.txt 2>&1
THREADS=2 STEPS=6 bench/ab.sh step "$BEFORE" build-nocuda 6 > $out/ab-step-2threads-quiet.txt 2>&1
BUILD=build-nocuda ROUNDS=7 MODEL=mha MODE=compile+sdpa OUT=/tmp/rounds-mha-c7 bench/rounds.sh 2>&1 |
  grep -v "^W1206" > $out/rounds-mha-compile-sdpa-quiet.txt
LENGTHS=full BUILD=build-nocuda ROUNDS=7 MODEL=mha MODE=compile+sdpa OUT=/tmp/rounds-mha-cf7 bench/rounds.sh 2>&1 |
  grep -v "^W1206" > $out/rounds-mha-compile-sdpa-full-length-quiet.txt
BUILD=build-nocuda ROUNDS=5 MODEL=hkt MODE=sdpa OUT=/tmp/rounds-hkt5 bench/rounds.sh 2>&1 |
  grep -v "^W1206" > $out/rounds-hkt-sdpa-quiet.txt
{
for L in spread full; do for p in --down-pointwise ""; do for t in 2 2 1; do
  echo "== lengths $L, threads $t, ${p:-no pointwise}: $(uptime)"
  build-nocuda/hkt-bench step --model both $p --lengths $L --threads $t --steps 8 --warmup 1 2>/dev/null | grep -i "ratio"
done; done; done
} > $out/step-ratio-quiet.txt 2>&1
BUILD=build VENV=/work/venv-bench OUT=/tmp/compare bench/compare.sh > $out/compare.txt 2>&1   # the whole table of issue 15 in one run (23:3x)
