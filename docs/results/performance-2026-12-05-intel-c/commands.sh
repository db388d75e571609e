#!/usr/bin/env bash
# Issue 15's measurements after the tenth and eleventh sessions' changes (64-deep weight-gradient blocks,
# software prefetch in the GEMMs, binary ops' backward without unneeded gradients), on the same Intel
# Xeon VM as ../performance-2026-12-05-intel (2 vCPUs, AVX-512). Run from the repository root of a Release
# build (build/) with the venv of bench/setup-venv.sh; BEFORE: the build directory of the
# tenth session's starting commit 587a33f (a git worktree built with the same flags), for the
# before/after rounds. Nothing else ran during these.
set -u
out=docs/results/performance-2026-12-05-intel-c
export VENV=/work/venv-bench BEFORE=${BEFORE:-/work/wt-before/build}
lscpu | grep -E "Model name|^CPU\(s\)|L1d|L2|L3" > $out/machine.txt
# Before/after, alternating builds: the training step of both models (1 and 2 threads). The
# attention kernels did not change since 587a33f.
THREADS=1 STEPS=6 bench/ab.sh step "$BEFORE" build 6 > $out/before-after-step-1thread.txt 2>&1
THREADS=2 STEPS=6 bench/ab.sh step "$BEFORE" build 6 > $out/before-after-step-2threads.txt 2>&1
{
for t in 1 2; do
  echo "== threads $t: $(uptime)"
  build/hkt-bench step --model both --profile --down-pointwise --threads $t --steps 8 --warmup 1
done
echo "== after: $(uptime)"
} > $out/step-profile.txt 2>&1
# HKT / MHA with both models' steps interleaved in one process, three runs per thread count.
{
for t in 1 1 1 2 2 2; do
  echo "== threads $t: $(uptime)"
  build/hkt-bench step --model both --down-pointwise --threads $t --steps 8 --warmup 1 2>/dev/null | grep -i "ratio"
done
echo "== after: $(uptime)"
} > $out/step-ratio-interleaved.txt 2>&1
# PyTorch's fastest mode on this machine is plain sdpa (../performance-2026-12-05-intel/pytorch-sdpa-modes.txt).
ROUNDS=7 MODEL=mha MODE=sdpa OUT=/tmp/rounds-mha bench/rounds.sh > $out/rounds-mha-sdpa.txt 2>&1
ROUNDS=5 MODEL=hkt MODE=sdpa OUT=/tmp/rounds-hkt bench/rounds.sh > $out/rounds-hkt-sdpa.txt 2>&1
ROUNDS=3 MODEL=mha MODE=compile+sdpa OUT=/tmp/rounds-mha-c bench/rounds.sh > $out/rounds-mha-compile-sdpa.txt 2>&1
echo done
# The step's GEMMs in cache and from memory (hkt-bench gemm, added after the runs above, at 658837d):
# the project's micro-kernel, then OpenBLAS (told its core type by the tool's re-exec), 1 and 2 threads.
{
for t in 1 2; do
  echo "== micro-kernel, threads $t: $(uptime)"
  build/hkt-bench gemm --threads $t
  echo "== OpenBLAS, threads $t: $(uptime)"
  HKT_CPU_GEMM=blas build/hkt-bench gemm --threads $t
done
echo "== after: $(uptime)"
} > $out/gemm.txt 2>&1
