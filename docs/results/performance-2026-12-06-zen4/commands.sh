#!/usr/bin/env bash
# Zero-gradient rows skipped in the backward, on the AMD EPYC Zen 4 VM (2 vCPUs, AVX-512): this
# session's changes — 7fc6045 the attention backward stops a head's query tiles at its last row with
# a nonzero dO (70673f6: in whole blocks of 8 rows), fc1a63d the CPU GEMMs skip all-zero blocks of A —
# and hkt-bench step timing the batch the Python scripts time (lengths spread over T/2 … T).
# BEFORE: 8f5193e (the session's start) with 7fc6045's tools/bench/step.{h,cpp} (the --lengths flag
# only) in a worktree; MID: 70673f6 (attention skip, no GEMM skip); build-nocuda: HEAD. All
# -DCMAKE_BUILD_TYPE=Release -DHKT_CUDA=OFF -DHKT_TESTS=OFF; builds alternate in every round.
# Nothing else ran. VENV: bench/setup-venv.sh's environment (PyTorch 2.15, JAX 0.10).
set -u
out=docs/results/performance-2026-12-06-zen4
BEFORE=${BEFORE:-/work/wt-before/build-nocuda}
MID=${MID:-/work/wt-base/build-nocuda}
export VENV=${VENV:-/work/venv-bench}
lscpu | grep -E "Model name|CPU family|^Model:|^CPU\(s\)|L1d|L2|L3|Flags" | cut -c1-400 > $out/machine.txt
THREADS=2 STEPS=6 bench/ab.sh step "$BEFORE" build-nocuda 6 > $out/ab-step-2threads.txt 2>&1
THREADS=1 STEPS=4 bench/ab.sh step "$BEFORE" build-nocuda 5 > $out/ab-step-1thread.txt 2>&1
THREADS=1 STEPS=4 EXTRA="--down-pointwise --lengths full" bench/ab.sh step "$BEFORE" build-nocuda 4 \
  > $out/ab-step-1thread-full-length.txt 2>&1
THREADS=1 STEPS=4 bench/ab.sh step "$MID" build-nocuda 5 > $out/ab-step-gemm-skip-1thread.txt 2>&1
# The per-kernel breakdown before and after, alternating, 2 threads then 1.
{
for t in 2 1; do
  for dir in "$BEFORE" build-nocuda; do
    echo "== $dir, threads $t: $(uptime)"
    $dir/hkt-bench step --model both --profile --down-pointwise --threads $t --steps 8 --warmup 1 | grep -v '^{' | grep -v "ratio"
  done
done
} > $out/step-profile-before-after.txt 2>&1
{
for lengths in spread full; do
  for pointwise in --down-pointwise ""; do
    for t in 1 2 2; do
      echo "== lengths $lengths, threads $t, HKT ${pointwise:-without the pointwise projection}: $(uptime)"
      build-nocuda/hkt-bench step --model both $pointwise --lengths $lengths --threads $t --steps 8 --warmup 1 \
        2>/dev/null | grep -i "ratio"
    done
  done
done
echo "== after: $(uptime)"
} > $out/step-ratio-interleaved.txt 2>&1
BUILD=build-nocuda ROUNDS=7 MODEL=mha MODE=compile+sdpa OUT=/tmp/rounds-mha-c bench/rounds.sh > $out/rounds-mha-compile-sdpa.txt 2>&1
BUILD=build-nocuda ROUNDS=5 MODEL=mha MODE=sdpa OUT=/tmp/rounds-mha bench/rounds.sh > $out/rounds-mha-sdpa.txt 2>&1
LENGTHS=full BUILD=build-nocuda ROUNDS=5 MODEL=mha MODE=compile+sdpa OUT=/tmp/rounds-mha-cf bench/rounds.sh \
  > $out/rounds-mha-compile-sdpa-full-length.txt 2>&1
BUILD=build-nocuda ROUNDS=5 MODEL=hkt MODE=sdpa OUT=/tmp/rounds-hkt bench/rounds.sh > $out/rounds-hkt-sdpa.txt 2>&1
LENGTHS=full BUILD=build-nocuda ROUNDS=3 MODEL=hkt MODE=sdpa OUT=/tmp/rounds-hkt-f bench/rounds.sh \
  > $out/rounds-hkt-sdpa-full-length.txt 2>&1
# What OpenBLAS believes the CPU is: its own detection (Cooperlake here) against Prescott's SSE3 kernels.
{
for r in 1 2 3; do
  for core in "" Prescott; do
    echo "== OPENBLAS_CORETYPE=${core:-unset}, round $r: $(uptime)"
    if [ -n "$core" ]; then setting=(env OPENBLAS_CORETYPE=$core); else setting=(env -u OPENBLAS_CORETYPE); fi
    "${setting[@]}" build-nocuda/hkt-bench step --model both --down-pointwise --threads 2 --steps 8 --warmup 1 2>/dev/null |
      grep -E '^(mha|hkt) |blas_core' | cut -c1-200
  done
done
} > $out/blas-core-type.txt 2>&1
# The whole table of issue 15 in one run (needs build/ with hkt-train: the full build).
BUILD=build OUT=/tmp/compare bench/compare.sh > $out/compare.txt 2>&1
# Re-measured at 21:02-21:06 on a quiet machine (load average under 1.6, nothing else running).
LENGTHS=full BUILD=build-nocuda ROUNDS=9 MODEL=mha MODE=compile+sdpa OUT=/tmp/rounds-mha-cf9 bench/rounds.sh 2>&1 |
  grep -v "^W1206" > $out/rounds-mha-compile-sdpa-full-length-9.txt
BUILD=build-nocuda ROUNDS=7 MODEL=mha MODE=compile+sdpa OUT=/tmp/rounds-mha-c7 bench/rounds.sh 2>&1 |
  grep -v "^W1206" > $out/rounds-mha-compile-sdpa-quiet.txt
{
for L in spread full; do for p in --down-pointwise ""; do for t in 2 2 1; do
  echo "== lengths $L, threads $t, ${p:-no pointwise}: $(uptime)"
  build-nocuda/hkt-bench step --model both $p --lengths $L --threads $t --steps 8 --warmup 1 2>/dev/null | grep "interleaved"
done; done; done
} > $out/step-ratio-interleaved-quiet.txt
