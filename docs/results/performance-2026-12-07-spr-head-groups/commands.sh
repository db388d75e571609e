#!/usr/bin/env bash
# 2026-12-07, sixth session: a new machine again (Intel Xeon, family 6 model 207 = Emerald Rapids,
# 2 vCPUs, AVX-512, 2 MiB L2 a core). A whole example per thread in the attention when the heads are
# interleaved, and the backward's gradients written by the first key tile instead of zeroed (8d9ffee).
# Run from the repository root. "Before" is 15ba7fd (this session's start plus bench/ab.sh's WAIT) in a worktree:
#   git worktree add /work/wt-base 15ba7fd
#   cmake -S /work/wt-base -B /work/wt-base/build-nocuda -DCMAKE_BUILD_TYPE=Release -DHKT_CUDA=OFF -DHKT_TESTS=OFF
#   cmake --build /work/wt-base/build-nocuda -j2 --target hkt-bench
# build-nocuda/ is HEAD configured the same way (targets hkt-bench hkt-train listops-gen). Nothing else
# ran on the machine.
# section-cycles-*.txt came from a build with section-cycles.patch applied (rdtsc around each part of
# the attention's backward and forward, atomically summed over threads; not committed code):
#   HKT_CYC=1 build-nocuda/hkt-bench step --model both --down-pointwise --threads T --steps 20
# (HKT_GROUP=1 turned the example groups on in that build). Each file holds three tables: the MHA
# child, the HKT child and the interleaved pair (MHA column, HKT column), in millions of TSC cycles.
set -u
out=docs/results/performance-2026-12-07-spr-head-groups
base=/work/wt-base/build-nocuda
export VENV=${VENV:-/work/venv-bench}
{ lscpu | grep -E "Model name|^CPU\(s\)|Flags|L2|L3" | cut -c1-200; grep -m2 -E "cpu family|^model\s" /proc/cpuinfo
  env | grep OPENBLAS; uptime; } > $out/machine.txt
# The HKT/MHA ratio, before and after alternating (steps interleaved in one process, libgomp's default wait).
{
for lengths in spread full; do
  threads="2 2 2 2 2 1 1"; [ $lengths = full ] && threads="2 2 2"
  for t in $threads; do
    for dir in $base build-nocuda; do
      echo "== $dir lengths $lengths, threads $t: $(uptime)"
      $dir/hkt-bench step --model both --down-pointwise --threads $t --steps 20 --warmup 2 \
        --lengths $lengths 2>/dev/null | grep '"step_pair"'
    done
  done
done
} > $out/step-ratio.txt 2>&1
# Per kernel, before against after, alternating, 2 threads with libgomp's default wait, then 1 thread.
WAIT=default THREADS=2 STEPS=6 bench/ab.sh profile $base build-nocuda 5 > $out/ab-profile-2threads.txt 2>&1
WAIT=default THREADS=1 STEPS=4 bench/ab.sh profile $base build-nocuda 4 > $out/ab-profile-1thread.txt 2>&1
# Peak RSS and allocations per step, each build.
for dir in $base build-nocuda; do
  echo "== $dir"
  $dir/hkt-bench step --model both --down-pointwise --threads 2 --steps 6 2>/dev/null | grep -E '^(mha|hkt|model) '
done > $out/rss-allocs.txt 2>&1
# The table in one run.
BUILD=build-nocuda OUT=/tmp/compare bench/compare.sh > $out/compare.txt 2>&1
# MHA against PyTorch's SDPA mode, alternating rounds.
BUILD=build-nocuda ROUNDS=5 MODEL=mha MODE=sdpa OUT=/tmp/rounds-mha bench/rounds.sh 2>&1 |
  grep -v "^W12" > $out/rounds-mha-sdpa.txt
# OpenBLAS's kernels: OPENBLAS_CORETYPE empty (OpenBLAS's own detection: Cooperlake here; unset, the
# tools' check names SkylakeX) against Prescott, the SSE3 kernels it falls back to on CPUs it does not
# know, alternating.
for i in 1 2 3; do
  for core in "" Prescott; do
    echo "== OPENBLAS_CORETYPE='$core'"
    OPENBLAS_CORETYPE=$core build-nocuda/hkt-bench step --model both --down-pointwise --threads 2 --steps 10 \
      2>/dev/null | grep -E '"blas_core"|"step_pair"' | cut -c1-260
  done
done > $out/blas-core-type.txt 2>&1
