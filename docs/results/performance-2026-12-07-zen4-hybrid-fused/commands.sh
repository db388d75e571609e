#!/usr/bin/env bash
# 2026-12-07, seventh session, on an AMD EPYC Zen 4 VM (family 25 model 17, 2 vCPUs, AVX-512, 1 MiB L2 a
# core, 32 MiB L3): HKT's hybrid mix folded into the multi-scale attention kernels
# (hybrid_multiscale_attention: 4a950d7, register windows be8bc4a).
# Run from the repository root. "Before" is f3bca85 (this session's start) in a worktree:
#   git worktree add /work/wt-base f3bca85
#   cmake -S /work/wt-base -B /work/wt-base/build-nocuda -DCMAKE_BUILD_TYPE=Release -DHKT_CUDA=OFF -DHKT_TESTS=OFF
#   cmake --build /work/wt-base/build-nocuda -j2 --target hkt-bench
# build-nocuda/ is HEAD configured the same way (targets hkt-bench hkt-train listops-gen). Nothing else
# ran on the machine during a measurement.
# perf-hkt-2threads-*.txt: `perf record -e cpu-clock -F 2000` (4000 for d6712d9) of
#   hkt-bench step --model hkt --down-pointwise --threads 2 --steps 20
# at 4a950d7 (the fused op, loops over k) and d6712d9 (register windows), symbols shortened.
# profile-all-kernels-after.txt: hkt-bench step --model both --profile at 1 and 2 threads (two runs each)
# with the table's 0.5 % cut-off removed for the run (tools/bench/step.cpp, not committed).
set -u
out=docs/results/performance-2026-12-07-zen4-hybrid-fused
base=/work/wt-base/build-nocuda
export VENV=${VENV:-/work/venv-bench}
{ lscpu | grep -E "Model name|^CPU\(s\)|Flags|L2|L3" | cut -c1-200; grep -m2 -E "cpu family|^model\s" /proc/cpuinfo
  env | grep OPENBLAS; uptime; } > $out/machine.txt
# The HKT/MHA ratio, before and after alternating: steps interleaved in one process (step_pair), 9 rounds
# of 30 steps on 2 threads, then 5 rounds of 10 steps on 1 thread. Columns: build, MHA ms, HKT ms, ratio.
# (step-ratio.txt ran this loop with the builds named by their worktrees, /work/wt-base and /work/main.)
ratio_rounds() {
  for r in $(seq "$1"); do
    for dir in $base build-nocuda; do
      $dir/hkt-bench step --model both --down-pointwise --threads "$2" --steps "$3" 2>/dev/null | grep step_pair |
        python3 -c "import json, sys; d = json.loads(sys.stdin.read())
print('$dir', d['mha_median_ms'], d['hkt_median_ms'], d['ratio'])"
    done
  done
}
{ uptime; ratio_rounds 9 2 30; uptime; ratio_rounds 5 1 10; uptime; } > $out/step-ratio.txt 2>&1
# Nine more rounds on 2 threads after CI, with HEAD at 233f1b9 (the same kernels).
{ uptime; ratio_rounds 9 2 30; uptime; } > $out/step-ratio-2.txt 2>&1
# Per kernel, before against after, alternating, 2 threads with libgomp's default wait.
WAIT=default THREADS=2 STEPS=6 bench/ab.sh profile $base build-nocuda 5 > $out/ab-profile-2threads.txt 2>&1
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
# OpenBLAS's own detection (Cooperlake here) against Prescott, alternating.
for i in 1 2 3; do
  for core in "" Prescott; do
    echo "== OPENBLAS_CORETYPE='$core'"
    OPENBLAS_CORETYPE=$core build-nocuda/hkt-bench step --model both --down-pointwise --threads 2 --steps 10 \
      2>/dev/null | grep -E '"blas_core"|"step_pair"' | cut -c1-260
  done
done > $out/blas-core-type.txt 2>&1
# attention-and-mix-ab.txt: the attention and the hybrid mix, forward and backward (ms a step, summed over
# the kernels whose name holds "attention" or "hybrid"), before and after alternating, 10 rounds, 2 threads.
for r in $(seq 10); do
  for dir in $base build-nocuda; do
    $dir/hkt-bench step --model hkt --down-pointwise --threads 2 --steps 8 --profile 2>/dev/null |
      sed -n '/time per step/,$p' | python3 -c "
import sys
t = {}
for line in sys.stdin:
    p = line.split()
    if len(p) >= 2 and ('attention' in p[0] or 'hybrid' in p[0]): t[p[0]] = float(p[1])
print('$dir', round(sum(t.values()), 2), t)"
  done
done > $out/attention-and-mix-ab.txt
# compare-slow-phase.txt: the first run of compare.sh, during which another tenant held a core (hkt-bench
# measured an FMA peak of 116 GFLOP/s on 2 threads, half of the 227-235 of other runs); compare.txt is
# the same command run again right after it.
