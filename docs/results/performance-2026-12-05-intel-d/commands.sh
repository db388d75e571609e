#!/usr/bin/env bash
# The weight gradient's prefetch made real (7e6f104: GCC 12 had deleted the calls to the non-inlined
# prefetch helpers, so a962981's depth-block prefetch never ran) measured against the commit before it
# (ce47e93), on the same Intel Xeon VM as ../performance-2026-12-05-intel-c (2 vCPUs, AVX-512). Run from
# the repository root of a Release build (build/); BEFORE: ce47e93's hkt-bench, built in a worktree with
# the same flags (-DHKT_CUDA=OFF -DHKT_TESTS=OFF); build-nocuda: HEAD configured the same way. Builds
# alternate in every round so both see the same noise. Nothing else ran.
set -u
out=docs/results/performance-2026-12-05-intel-d
BEFORE=${BEFORE:-/work/wt-base/build}
lscpu | grep -E "Model name|^CPU\(s\)|L1d|L2|L3" > $out/machine.txt
# Per thread count, model and build: the step's and the GEMM family's minimum and median over the rounds.
summarize_step_gemm() {
  python3 - "$1" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 5: runs[(f[1], f[2], f[0])].append((float(f[3]), float(f[4])))
for (t, model, build), v in sorted(runs.items()):
    print("threads %s %-4s %-22s step min %7.1f median %7.1f   gemm min %6.1f median %6.1f" % (t, model, build[-22:],
          min(x[0] for x in v), statistics.median(x[0] for x in v), min(x[1] for x in v), statistics.median(x[1] for x in v)))
PY
}
# The step's nine GEMM shapes in cache and from memory, 3 alternating rounds per thread count.
{
for t in 1 2; do
  for r in 1 2 3; do
    for dir in "$BEFORE" build; do
      echo "== $dir, threads $t, round $r: $(uptime)"
      "$dir/hkt-bench" gemm --threads $t 2>/dev/null | grep '"bench"'
    done
  done
done
echo "== after: $(uptime)"
} > $out/gemm-before-after.txt 2>&1
# Its summary: per shape, the range over the rounds of each build's best call, in cache / from memory.
python3 - $out/gemm-before-after.txt > $out/gemm-summary.txt <<'PY'
import json,collections,re,statistics,sys
rows=collections.defaultdict(lambda: collections.defaultdict(list))
cur=None
for line in open(sys.argv[1]):
    if line.startswith('=='):
        m=re.match(r'== (\S+), threads (\d)',line)
        if m: cur=('before' if 'wt-base' in m.group(1) else 'after')
        continue
    d=json.loads(line)
    key=(d['threads'],d['pass'],d['m'],d['n'],d['k'])
    rows[key][cur+'_cache'].append(d['in_cache_gflops']); rows[key][cur+'_mem'].append(d['from_memory_gflops'])
print("%-2s %-12s %-18s %-28s %-28s"%("T","pass","m x n x k","before cache / memory","after cache / memory"))
for k,v in sorted(rows.items()):
    f=lambda n: "%5.1f-%5.1f"%(min(v[n]),max(v[n]))
    print("%-2s %-12s %-18s %-28s %-28s"%(k[0],k[1],"%dx%dx%d"%k[2:],f('before_cache')+" / "+f('before_mem'),f('after_cache')+" / "+f('after_mem')))
PY
# The GEMM family's time inside the step (the op profiler), 8 alternating rounds per thread count.
{
for t in 1 2; do
  for r in $(seq 8); do
    for dir in "$BEFORE" build; do
      OMP_WAIT_POLICY=passive "$dir/hkt-bench" step --model both --profile --down-pointwise --threads $t --steps 6 \
        --warmup 1 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    if "\"bench\":\"step\"" in line:
        d = json.loads(line)
        print(sys.argv[1], sys.argv[2], d["model"], d["median_ms"], d["ops_ms_per_step"]["gemm"])' "$dir" "$t"
    done
  done
done
echo "== after: $(uptime)"
} > $out/step-gemm-before-after.txt 2>&1
summarize_step_gemm $out/step-gemm-before-after.txt > $out/step-gemm-summary.txt
# The rounds above compared a CUDA-enabled build (build/, the default where nvcc is found) with a build
# without CUDA (the worktree's): the step was 3-4 % slower in the first at 1 thread, the GEMMs only 1-2 %.
# Separating the two: HEAD without CUDA (build-nocuda/, the same flags as BEFORE) against BEFORE (the
# prefetch alone), then HEAD with and without CUDA (the build alone).
THREADS=1 STEPS=6 bench/ab.sh step "$BEFORE" build-nocuda 6 > $out/ab-step-prefetch-1thread.txt 2>&1
THREADS=1 STEPS=6 bench/ab.sh step build-nocuda build 6 > $out/ab-step-cuda-build-1thread.txt 2>&1
# The GEMM family alone inside the step, prefetch against none with the same build flags, 10 rounds, 1 thread.
{
for r in $(seq 10); do
  for dir in "$BEFORE" build-nocuda; do
    OMP_WAIT_POLICY=passive "$dir/hkt-bench" step --model both --profile --down-pointwise --threads 1 --steps 6 \
      --warmup 1 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    if "\"bench\":\"step\"" in line:
        d = json.loads(line)
        print(sys.argv[1], 1, d["model"], d["median_ms"], d["ops_ms_per_step"]["gemm"])' "$dir"
  done
done
echo "== after: $(uptime)"
} > $out/step-gemm-prefetch-1thread.txt 2>&1
summarize_step_gemm $out/step-gemm-prefetch-1thread.txt > $out/step-gemm-prefetch-summary.txt
# Issue 15's targets at HEAD on this VM (the venv of bench/setup-venv.sh at $VENV): PyTorch's fastest
# modes in alternating rounds, HKT/MHA with both models interleaved in one process, the step profile.
export VENV=${VENV:-/work/venv-bench}
ROUNDS=7 MODEL=mha MODE=sdpa OUT=/tmp/rounds-mha bench/rounds.sh > $out/rounds-mha-sdpa.txt 2>&1
ROUNDS=5 MODEL=hkt MODE=sdpa OUT=/tmp/rounds-hkt bench/rounds.sh > $out/rounds-hkt-sdpa.txt 2>&1
ROUNDS=3 MODEL=mha MODE=compile+sdpa OUT=/tmp/rounds-mha-c bench/rounds.sh > $out/rounds-mha-compile-sdpa.txt 2>&1
{
for t in 1 1 1 2 2 2; do
  echo "== threads $t: $(uptime)"
  build/hkt-bench step --model both --down-pointwise --threads $t --steps 8 --warmup 1 2>/dev/null | grep -i "ratio"
done
echo "== after: $(uptime)"
} > $out/step-ratio-interleaved.txt 2>&1
{
for t in 1 2; do
  echo "== threads $t: $(uptime)"
  build/hkt-bench step --model both --profile --down-pointwise --threads $t --steps 8 --warmup 1
done
echo "== after: $(uptime)"
} > $out/step-profile.txt 2>&1
# Peak RSS: the step's in builds with and without the CUDA backend, and a tool that only prints its version
# (what loading cudart, cuBLAS, cuBLASLt and NCCL costs before any op runs). Run at 7e6f104, where the
# library linked cuBLAS (peak-rss-linked-cublas.txt), and again at 03259be, where it opens cuBLAS on the
# first CUDA GEMM (peak-rss-cublas-on-first-use.txt).
peak_rss() {
  for b in build build-nocuda "$BEFORE"; do
    echo "$b: step $("$b/hkt-bench" step --model both --down-pointwise --threads 2 --steps 3 --warmup 1 2>/dev/null |
      grep -o '"model":"[a-z]*"\|"peak_rss_mib":[0-9.]*' | paste -sd' ')"
    /usr/bin/time -f "$b: hkt-bench --version %e s, peak RSS %M KiB" "$b/hkt-bench" --version > /dev/null
  done
}
peak_rss > $out/peak-rss-cublas-on-first-use.txt 2>&1
# The same speed whatever OpenBLAS believes the CPU is: the tools' re-exec (OPENBLAS_CORETYPE=SkylakeX)
# against OpenBLAS left on its Prescott kernels (HKT_BLAS_REEXEC=1), alternating, 4 rounds per thread count.
{
for t in 1 2; do
  for r in 1 2 3 4; do
    for reexec in "" 1; do
      echo "== threads $t, round $r, HKT_BLAS_REEXEC=${reexec:-unset}: $(uptime)"
      env ${reexec:+HKT_BLAS_REEXEC=1} build/hkt-bench step --model both --down-pointwise --threads $t --steps 6 --warmup 1 \
        2>/dev/null | grep -E '"blas_core"|"bench":"step"' | grep -o '"blas_core":"[A-Za-z0-9]*"\|"model":"[a-z]*"\|"median_ms":[0-9.]*' | paste -sd' '
    done
  done
done
} > $out/blas-core-type.txt 2>&1
