#!/usr/bin/env bash
# 2026-12-07, eighth session, on the AMD EPYC Zen 4 VM of the seventh (family 25 model 17, 2 vCPUs,
# AVX-512, 1 MiB L2 a core, 32 MiB L3): A and the mix's Y streamed past the caches in the hybrid
# attention's forward, dλ summed per 16 rows (bda89d5). Run from the repository root.
# "Before" is 25b55ed (the session's start) in a worktree:
#   git worktree add /work/wt-base 25b55ed
#   cmake -S /work/wt-base -B /work/wt-base/build-nocuda -DCMAKE_BUILD_TYPE=Release -DHKT_CUDA=OFF -DHKT_TESTS=OFF
#   cmake --build /work/wt-base/build-nocuda -j2 --target hkt-bench
# build-nocuda/ (in /work/main) is HEAD configured the same way. Nothing else ran during a measurement.
set -u
out=docs/results/performance-2026-12-07-zen4-streamed-outputs
{ lscpu | head -20; cat /sys/kernel/mm/transparent_hugepage/enabled; } > $out/machine.txt

# The HKT/MHA ratio: 12 alternating rounds of the interleaved pair of steps, 30 steps, 2 threads, twice.
bash $out/step-ratio.sh $out/step-ratio.txt 12
bash $out/step-ratio.sh $out/step-ratio-2.txt 12
bash $out/step-ratio.sh $out/step-ratio-3.txt 12   # after CI
bash $out/step-ratio.sh $out/step-ratio-1thread.txt 5 1 10
python3 $out/step-ratio-stats.py $out/step-ratio.txt $out/step-ratio-2.txt $out/step-ratio-3.txt   # medians, rounds <= 1.30
# Per kernel, 8 alternating rounds (ab-profile-2threads.txt), and the table of issue 15 (compare.txt):
WAIT=default THREADS=2 STEPS=8 bash bench/ab.sh profile /work/wt-base/build-nocuda build-nocuda 8 > $out/ab-profile-2threads.txt
BUILD=build-nocuda VENV=${VENV:-/work/venv-bench} OUT=/tmp/compare bash bench/compare.sh > $out/compare.txt 2>&1

# Section cycles (section-cycles.txt): a worktree per build, the kernels' header instrumented, e.g.
#   git worktree add /work/wt-exp HEAD && python3 $out/section-cycles.py /work/wt-exp/ops/attention_cpu_kernels.h
#   (configure and build /work/wt-exp/build-nocuda as above; the same for the base worktree)
#   for r in 1 2 3; do for d in wt-base wt-exp; do
#     bash $out/section-cycles-run.sh /work/$d/build-nocuda 1 > /tmp/exp/cyc-$d-$r.txt; done; done
#   python3 $out/section-cycles-compare.py 3
# (section-cycles-run.sh writes into /tmp/exp/; the variants compared are described in section-cycles.txt.)

# The forward with the output projection (section-cycles.txt, part 2c): attention-and-projection.cpp
# linked against each build's libhkt, e.g.
#   g++ -std=c++20 -O2 -I. $out/attention-and-projection.cpp -Lbuild-nocuda -lhkt \
#       -Wl,-rpath,$PWD/build-nocuda -o /tmp/attn_o
#   WITH_O=1 /tmp/attn_o hy bthd spread 1 3; WITH_O=1 /tmp/attn_o mha bthd spread 1 1
# (arguments: op mha|ms|hy, layout bhtd|bthd, lengths full|spread, threads, levels).

# other-experiments.txt: the GEMMs per shape came from a profiler entry per (M, N, K, transposes) added to
# gemm_cpu for the run (not committed); the hog is
#   printf '%s\n' '#include <stdlib.h>' '#include <string.h>' 'int main() { size_t n = 64u << 20;
#     float *a = malloc(n * 4), *b = malloc(n * 4); memset(a, 1, n * 4); memset(b, 2, n * 4);
#     for (;;) for (size_t i = 0; i < n; ++i) b[i] = a[i] * 1.5f + b[i]; }' > /tmp/hog.c
#   gcc -O2 -march=native /tmp/hog.c -o /tmp/hog; taskset -c 1 /tmp/hog &
#   taskset -c 0 build-nocuda/hkt-bench step --model both --down-pointwise --threads 1 --steps 8
# and the huge pages `echo always > /sys/kernel/mm/transparent_hugepage/enabled` (madvise again after).
