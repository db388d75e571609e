#!/usr/bin/env bash
# Issue 15's measurements on this session's machine (Intel Xeon VM, AVX-512, OpenBLAS mis-detects it as Prescott).
# Run from the repository root of a Release build (build/), with the venv of bench/setup-venv.sh.
set -u
out=docs/results/performance-2026-12-05-intel
export VENV=/work/venv-bench
rm -f docs/results/cost/step-L*/output.jsonl
RUNS=/work/runs-17 BUILD=build JOBS=1 NICE=0 scripts/reproduce.sh run cost > /tmp/cost.log 2>&1
lscpu | grep -E "Model name|^CPU\(s\)|L2|L3" > $out/machine.txt
{
for t in 1 2; do
  echo "== threads $t, tools re-exec with OPENBLAS_CORETYPE=SkylakeX (default): $(uptime)"
  build/hkt-bench step --model both --profile --down-pointwise --threads $t --steps 8 --warmup 1
  echo "== threads $t, HKT_BLAS_REEXEC=1: OpenBLAS left on its Prescott kernels: $(uptime)"
  HKT_BLAS_REEXEC=1 build/hkt-bench step --model both --down-pointwise --threads $t --steps 8 --warmup 1
done
} > $out/step-profile.txt 2>&1
ROUNDS=7 MODEL=mha OUT=/tmp/rounds-mha bench/rounds.sh > $out/rounds-mha.txt 2>&1
ROUNDS=5 MODEL=hkt OUT=/tmp/rounds-hkt bench/rounds.sh > $out/rounds-hkt.txt 2>&1
$VENV/bin/python bench/pytorch_step.py --threads 2 --steps 6 --models mha,hkt --modes sdpa,compile+sdpa --down-pointwise > $out/pytorch-sdpa-modes.txt 2>&1
echo done

# Then, into thread-scaling-mha.txt: one and two threads, ours and PyTorch compile+sdpa.
echo "== $(uptime)"
for t in 1 2; do
  build/hkt-bench step --model mha --threads $t --steps 8 --warmup 1 | grep -v '^{' | sed -n 2,3p
  OMP_NUM_THREADS=$t /work/venv-bench/bin/python bench/pytorch_step.py --threads $t --steps 8 --models mha --modes compile+sdpa 2>/dev/null | grep -v '^W'
done
echo "== $(uptime)"
