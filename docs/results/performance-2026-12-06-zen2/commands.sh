#!/usr/bin/env bash
# The AVX2 path on an AMD EPYC Zen 2 VM (2 vCPUs, AVX2 + FMA, no AVX-512): this session's four changes
# (60d3084 alpha held in memory during the micro-kernel's k loop, 9ca0fd8 GELU four vectors interleaved,
# 44a167e -fschedule-insns -fsched-pressure for the AVX2 file, 1e759d4 forward exponentials interleaved)
# against b5aa864, the commit before them. BEFORE: b5aa864 built in a worktree; build-nocuda: HEAD; both
# -DCMAKE_BUILD_TYPE=Release -DHKT_CUDA=OFF -DHKT_TESTS=OFF. Builds alternate in every round. Nothing else ran.
set -u
out=docs/results/performance-2026-12-06-zen2
BEFORE=${BEFORE:-/work/wt-base/build}
export VENV=${VENV:-/work/venv-bench}
lscpu | grep -E "Model name|CPU family|^Model:|^CPU\(s\)|L1d|L2|L3|Flags" | cut -c1-120 > $out/machine.txt
THREADS=1 bench/ab.sh attention "$BEFORE" build-nocuda 6 > $out/ab-attention-1thread.txt 2>&1
THREADS=1 STEPS=6 bench/ab.sh step "$BEFORE" build-nocuda 4 > $out/ab-step-1thread.txt 2>&1
THREADS=2 STEPS=6 bench/ab.sh step "$BEFORE" build-nocuda 3 > $out/ab-step-2threads.txt 2>&1
BUILD=build-nocuda ROUNDS=5 MODEL=mha MODE=sdpa OUT=/tmp/rounds-mha bench/rounds.sh > $out/rounds-mha-sdpa.txt 2>&1
BUILD=build-nocuda ROUNDS=3 MODEL=hkt MODE=sdpa OUT=/tmp/rounds-hkt bench/rounds.sh > $out/rounds-hkt-sdpa.txt 2>&1
{
for t in 1 1 2 2; do
  echo "== threads $t: $(uptime)"
  build-nocuda/hkt-bench step --model both --down-pointwise --threads $t --steps 8 --warmup 1 2>/dev/null | grep -i "ratio"
done
echo "== after: $(uptime)"
} > $out/step-ratio-interleaved.txt 2>&1
{
for t in 1 2; do
  echo "== threads $t: $(uptime)"
  build-nocuda/hkt-bench step --model both --profile --down-pointwise --threads $t --steps 8 --warmup 1 | grep -v '^{'
done
} > $out/step-profile.txt 2>&1
build-nocuda/hkt-bench gemm --threads 1 2>/dev/null | grep -v '^{' > $out/gemm-1thread.txt
