#!/usr/bin/env bash
# The AVX2 path on the AMD EPYC Zen 2 VM again (2 vCPUs, AVX2 + FMA, no AVX-512), the session after
# performance-2026-12-06-zen2: this session's changes (077b7b6 the backward's P in a pass of its own,
# 6dd2df2 the upsampled addend stored column by column, 5a01410 no upper clamp on the softmax's exp2,
# f7990c9 AdamW vectorised) against 4a8ed64, the commit before them. BEFORE: 4a8ed64 built in a worktree; build-nocuda: HEAD; both
# -DCMAKE_BUILD_TYPE=Release -DHKT_CUDA=OFF -DHKT_TESTS=OFF. Builds alternate in every round. Nothing else ran.
set -u
out=docs/results/performance-2026-12-06-zen2-b
BEFORE=${BEFORE:-/work/wt-base/build}
export VENV=${VENV:-/work/venv-bench}
lscpu | grep -E "Model name|CPU family|^Model:|^CPU\(s\)|L1d|L2|L3|Flags" | cut -c1-120 > $out/machine.txt
THREADS=1 bench/ab.sh attention "$BEFORE" build-nocuda 8 > $out/ab-attention-1thread.txt 2>&1
THREADS=1 STEPS=6 bench/ab.sh step "$BEFORE" build-nocuda 4 > $out/ab-step-1thread.txt 2>&1
THREADS=2 STEPS=6 bench/ab.sh step "$BEFORE" build-nocuda 3 > $out/ab-step-2threads.txt 2>&1
BUILD=build-nocuda ROUNDS=5 MODEL=mha MODE=sdpa OUT=/tmp/rounds-mha bench/rounds.sh > $out/rounds-mha-sdpa.txt 2>&1
BUILD=build-nocuda ROUNDS=3 MODEL=mha MODE=compile+sdpa OUT=/tmp/rounds-mha-c bench/rounds.sh > $out/rounds-mha-compile-sdpa.txt 2>&1
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
# The per-kernel breakdown before and after, one after the other on a quiet machine.
{
for t in 1 2; do
  for dir in "$BEFORE" build-nocuda; do
    echo "== $dir, threads $t: $(uptime)"
    $dir/hkt-bench step --model both --profile --down-pointwise --threads $t --steps 8 --warmup 1 | grep -v '^{' | grep -v "ratio"
  done
done
} > $out/step-profile-before-after.txt 2>&1
