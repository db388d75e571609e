#!/usr/bin/env bash
# 2026-12-07, fifth session: a new machine (AMD EPYC, family 26 = Zen 5, 2 vCPUs, AVX-512 with a full
# 512-bit datapath), error messages formatted only on failure (4a8de3c, f138adc), per-task partial
# sums on cache lines of their own (f138adc, 0bfddea) and the split-depth GEMM's vector reduction (02204b1).
# Run from the repository root. "Before" is fdd72d1 (this session's start) in a worktree:
#   git worktree add /work/wt-base fdd72d1
#   cmake -S /work/wt-base -B /work/wt-base/build-nocuda -DCMAKE_BUILD_TYPE=Release -DHKT_CUDA=OFF -DHKT_TESTS=OFF
#   cmake --build /work/wt-base/build-nocuda -j2 --target hkt-bench hkt-train listops-gen
# build-nocuda/ is HEAD configured the same way. Nothing else ran on the machine.
# This machine's environment sets OPENBLAS_CORETYPE=Haswell (OpenBLAS alone detects Cooperlake here);
# the last block measures the step with and without it.
# compare-session-start.txt is the table at fdd72d1, run before any change (13:55, build-nocuda then
# at fdd72d1): BUILD=build-nocuda VENV=$VENV OUT=/tmp/compare bench/compare.sh
# The script below ran on 02204b1; 6f80a32 (LayerNorm's vector reduction) came after it.
set -u
out=docs/results/performance-2026-12-07-zen5-op-overhead
base=/work/wt-base/build-nocuda
export VENV=${VENV:-/work/venv-bench}
{ lscpu | grep -E "Model name|^CPU\(s\)|Flags|L2|L3" | cut -c1-200; grep -m2 -E "cpu family|^model\s" /proc/cpuinfo
  env | grep OPENBLAS; uptime; } > $out/machine.txt
# The fixed cost of an op, each build (one thread).
for dir in $base build-nocuda; do
  src=$(dirname $dir)
  g++ -O2 -std=c++20 -I$src $out/op_overhead.cpp -o /tmp/op_overhead -L$dir -lhkt -Wl,-rpath,$(realpath $dir)
  echo "== $dir"; OMP_NUM_THREADS=1 /tmp/op_overhead
done > $out/op-overhead.txt 2>&1
# Per kernel, before against after, alternating: 1 thread, then 2 threads passive.
THREADS=1 STEPS=4 bench/ab.sh profile $base build-nocuda 6 > $out/ab-profile-1thread.txt 2>&1
THREADS=2 STEPS=8 bench/ab.sh profile $base build-nocuda 6 > $out/ab-profile-2threads.txt 2>&1
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
# OpenBLAS's kernels: the environment's Haswell against its own detection (Cooperlake), alternating.
for i in 1 2 3; do
  for core in Haswell ""; do
    echo "== OPENBLAS_CORETYPE='$core'"
    OPENBLAS_CORETYPE=$core build-nocuda/hkt-bench step --model both --down-pointwise --threads 2 --steps 10 \
      2>/dev/null | grep -E '"blas_core"|"step_pair"' | cut -c1-260
  done
done > $out/blas-core-type.txt 2>&1
# MHA against PyTorch's fastest mode here (F.scaled_dot_product_attention in compare.txt), alternating rounds.
BUILD=build-nocuda ROUNDS=7 MODEL=mha MODE=sdpa OUT=/tmp/rounds-mha bench/rounds.sh 2>&1 |
  grep -v "^W12" > $out/rounds-mha-sdpa.txt
LENGTHS=full BUILD=build-nocuda ROUNDS=7 MODEL=mha MODE=sdpa OUT=/tmp/rounds-mha-full bench/rounds.sh 2>&1 |
  grep -v "^W12" > $out/rounds-mha-sdpa-full-length.txt
# The table in one run.
BUILD=build-nocuda VENV=$VENV OUT=/tmp/compare bench/compare.sh > $out/compare.txt 2>&1
echo finished > $out/.done
