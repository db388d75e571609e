#!/usr/bin/env bash
# Gradients added where they are made, on the Intel Xeon VM again (2 vCPUs, AVX-512; the machine of
# the 2026-12-05 sections): this session's changes (6d6cb00 backward products, LayerNorm and conv add
# into the gradient an input already has; 9ddc4e9 strided zeroing in the attention backward; 204ab44
# linear's bias gradient summed inside the weight gradient's product; b3fb5ae the hybrid head as one
# op, hybrid_mix) against 668e56a, the commit before them, and hybrid_mix alone against 2366c84 (MID).
# BEFORE: 668e56a built in a worktree, MID: 2366c84 likewise; build-nocuda: HEAD; all
# -DCMAKE_BUILD_TYPE=Release -DHKT_CUDA=OFF -DHKT_TESTS=OFF. Builds alternate in every round.
# Nothing else ran. VENV: bench/setup-venv.sh's environment (PyTorch 2.15, JAX 0.10).
set -u
out=docs/results/performance-2026-12-06-intel
BEFORE=${BEFORE:-/work/wt-base/build}
MID=${MID:-/work/wt-head/build}
export VENV=${VENV:-/work/venv-bench}
lscpu | grep -E "Model name|CPU family|^Model:|^CPU\(s\)|L1d|L2|L3" > $out/machine.txt
THREADS=1 STEPS=6 bench/ab.sh step "$BEFORE" build-nocuda 8 > $out/ab-step-1thread.txt 2>&1
THREADS=2 STEPS=6 bench/ab.sh step "$BEFORE" build-nocuda 5 > $out/ab-step-2threads.txt 2>&1
THREADS=1 STEPS=6 bench/ab.sh step "$MID" build-nocuda 6 > $out/ab-step-hybrid-mix-1thread.txt 2>&1
# The families hybrid_mix replaces, alternating, 1 thread.
for r in 1 2 3; do
  for dir in "$MID" build-nocuda; do
    echo "== $dir, round $r: $(uptime)"
    $dir/hkt-bench step --model hkt --down-pointwise --threads 1 --profile --steps 6 --warmup 1 2>/dev/null |
      grep '"bench":"step"'
  done
done > $out/hybrid-mix-profile.txt 2>&1
# The per-kernel breakdown before and after, one after the other.
{
for t in 1 2; do
  for dir in "$BEFORE" build-nocuda; do
    echo "== $dir, threads $t: $(uptime)"
    $dir/hkt-bench step --model both --profile --down-pointwise --threads $t --steps 8 --warmup 1 | grep -v '^{' | grep -v "ratio"
  done
done
} > $out/step-profile-before-after.txt 2>&1
{
for t in 1 1 1 2 2 2; do
  echo "== threads $t: $(uptime)"
  build-nocuda/hkt-bench step --model both --down-pointwise --threads $t --steps 8 --warmup 1 2>/dev/null | grep -i "ratio"
done
echo "== after: $(uptime)"
} > $out/step-ratio-interleaved.txt 2>&1
BUILD=build-nocuda ROUNDS=7 MODEL=mha MODE=sdpa OUT=/tmp/rounds-mha bench/rounds.sh > $out/rounds-mha-sdpa.txt 2>&1
BUILD=build-nocuda ROUNDS=3 MODEL=mha MODE=compile+sdpa OUT=/tmp/rounds-mha-c bench/rounds.sh > $out/rounds-mha-compile-sdpa.txt 2>&1
BUILD=build-nocuda ROUNDS=5 MODEL=hkt MODE=sdpa OUT=/tmp/rounds-hkt bench/rounds.sh > $out/rounds-hkt-sdpa.txt 2>&1
# What OpenBLAS believes the CPU is: its own detection (SkylakeX here) against Prescott's SSE3 kernels.
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
