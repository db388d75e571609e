#!/usr/bin/env bash
# After 95bd3c0 (zero_rows without a memset call per row): the targets again at HEAD, 2 threads unless said.
# Same machine and venv as commands.sh; nothing else ran.
set -u
out=docs/results/performance-2026-12-07-zen4-zero-rows
export VENV=${VENV:-/work/venv-bench}
{
for t in 2 2 2 2 2 2 2 1 1 1; do
  echo "== threads $t: $(uptime)"
  build-nocuda/hkt-bench step --model both --down-pointwise --threads $t --steps 20 --warmup 2 2>/dev/null | grep '"step_pair"'
done
} > $out/step-ratio-95bd3c0.txt 2>&1
BUILD=build-nocuda ROUNDS=7 MODEL=mha MODE=compile+sdpa OUT=/tmp/rounds-mha-c2 bench/rounds.sh 2>&1 |
  grep -v "^W12" > $out/rounds-mha-compile-sdpa-95bd3c0.txt
LENGTHS=full BUILD=build-nocuda ROUNDS=7 MODEL=mha MODE=compile+sdpa OUT=/tmp/rounds-mha-cf2 bench/rounds.sh 2>&1 |
  grep -v "^W12" > $out/rounds-mha-compile-sdpa-full-length-95bd3c0.txt
BUILD=build VENV=$VENV OUT=/tmp/compare2 bench/compare.sh > $out/compare-95bd3c0.txt 2>&1
