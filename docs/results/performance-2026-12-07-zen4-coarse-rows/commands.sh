#!/usr/bin/env bash
# 2026-12-07, third session of the day: HKT's coarse rows past what a valid position reads,
# the GEMMs' zero-row runs, and the masked kernels' balanced schedules.
# Run from the repository root. "Before" is 7b9bd71 (this session's start) in a worktree:
#   git worktree add /work/wt-base 7b9bd71
#   cmake -S /work/wt-base -B /work/wt-base/build-nocuda -DCMAKE_BUILD_TYPE=Release -DHKT_CUDA=OFF -DHKT_TESTS=OFF
#   cmake --build /work/wt-base/build-nocuda -j2 --target hkt-bench hkt-train listops-gen
# build-nocuda/ is HEAD configured the same way, build/ HEAD with tests and CUDA (compare.sh uses it).
# HEAD was 7a596e4 when this script ran. Nothing else ran on the machine.
set -u
out=docs/results/performance-2026-12-07-zen4-coarse-rows
base=/work/wt-base/build-nocuda
export VENV=${VENV:-/work/venv-bench}
lscpu | grep -E "Model name|^CPU\(s\)|Flags" | cut -c1-200 > $out/machine.txt
# Per kernel, before against after, alternating: 1 thread (steady to a few %), then 2 threads passive.
THREADS=1 STEPS=4 bench/ab.sh profile $base build-nocuda 6 > $out/ab-profile-1thread.txt 2>&1
THREADS=2 STEPS=8 bench/ab.sh profile $base build-nocuda 6 > $out/ab-profile-2threads.txt 2>&1
THREADS=2 bench/ab.sh listops $base build-nocuda 4 > $out/ab-listops-2threads.txt 2>&1
# The HKT/MHA ratio, before and after alternating (steps interleaved in one process, libgomp's default wait).
{
for lengths in spread full; do
  for t in 2 2 2 2 2 1 1 1; do
    for dir in $base build-nocuda; do
      echo "== $dir lengths $lengths, threads $t: $(uptime)"
      $dir/hkt-bench step --model both --down-pointwise --threads $t --steps 20 --warmup 2 \
        --lengths $lengths 2>/dev/null | grep '"step_pair"'
    done
  done
done
} > $out/step-ratio.txt 2>&1
# MHA against PyTorch's best mode, alternating rounds, both batches.
BUILD=build-nocuda ROUNDS=7 MODEL=mha MODE=compile+sdpa OUT=/tmp/rounds-mha bench/rounds.sh 2>&1 |
  grep -v "^W12" > $out/rounds-mha-compile-sdpa.txt
LENGTHS=full BUILD=build-nocuda ROUNDS=7 MODEL=mha MODE=compile+sdpa OUT=/tmp/rounds-mha-full bench/rounds.sh 2>&1 |
  grep -v "^W12" > $out/rounds-mha-compile-sdpa-full-length.txt
# The table in one run.
BUILD=build VENV=$VENV OUT=/tmp/compare bench/compare.sh > $out/compare.txt 2>&1
# Earlier in the session, on the builds then current (kept for the "Tried" notes in docs/PERFORMANCE.md):
#   profile-2threads-hkt-vs-mha.txt: THREADS=2 STEPS=8 bench/ab.sh profile build-nocuda build-nocuda 4 (at 39ad583)
#   ab-profile-2threads-layernorm-round-robin.txt: the same against $base, LayerNorm blocks schedule(static, 1)
#   ab-profile-2threads-min-work-131072.txt: build-nocuda against a wrapper that sets HKT_PARALLEL_MIN_WORK=131072
#   ab-profile-1thread-mix-longest-first.txt: 39ad583 against 245a23a (the mix's backward longest first)
#   triad.txt: g++ -O3 -march=native -fopenmp triad.cpp; c = 1.5 a + b over 1, 4 and 16 M floats, 1 and 2 threads
# rss-allocs.txt: hkt-bench step --model both --down-pointwise --threads 2 --steps 6, each build
