#!/usr/bin/env bash
# Our training step against one PyTorch mode in alternating rounds: ROUNDS
# times `hkt-bench step` then bench/pytorch_step.py, each round's ratio
# ours / PyTorch, and the median of those ratios. On a shared machine a
# burst of other tenants' load lands on one side of a single comparison
# (compare.sh runs each side once, minutes apart); alternating puts both
# sides under the same minutes, and the spread of the ratios shows the noise.
#
#   bench/setup-venv.sh                   # once: the Python environment
#   VENV=/path/to/venv bench/rounds.sh    # not run by CI
#
# Settings (environment): BUILD (build), VENV (bench/.venv), MODEL (mha or
# hkt; hkt with SPEC section 2's pointwise projection), MODE (compile+sdpa,
# the fastest PyTorch mode in docs/PERFORMANCE.md), ROUNDS (5), THREADS (2),
# STEPS (8 per side and round, warm-up included), OUT (runs/rounds: the raw
# outputs), LENGTHS (spread: the Python script's batch; full: every example
# at T, hkt-bench step --lengths). The SPEC ListOps sizes: T = 512, batch 32,
# d = 64, 2 layers.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD:-build}" venv="${VENV:-bench/.venv}" model="${MODEL:-mha}" mode="${MODE:-compile+sdpa}"
rounds="${ROUNDS:-5}" threads="${THREADS:-2}" steps="${STEPS:-8}" out="${OUT:-runs/rounds}" lengths="${LENGTHS:-spread}"
case $model in
  mha) pointwise=() ;;
  hkt) pointwise=(--down-pointwise) ;;
  *) echo "rounds.sh: MODEL must be mha or hkt, got '$model'" >&2; exit 2 ;;
esac
[ -x "$build/hkt-bench" ] || { echo "rounds.sh: no $build/hkt-bench; build it or set BUILD" >&2; exit 1; }
[ -x "$venv/bin/python" ] || { echo "rounds.sh: no $venv/bin/python; run bench/setup-venv.sh (or set VENV)" >&2; exit 1; }
mkdir -p "$out"
export OMP_NUM_THREADS="$threads"

echo "== uptime before: $(uptime)"
echo "== $model: hkt-bench step (lengths $lengths) against PyTorch $mode, $rounds alternating rounds, $threads threads, $steps steps each"
: > "$out/ratios.txt"
for round in $(seq 1 "$rounds"); do
  "$build/hkt-bench" step --model "$model" --threads "$threads" --steps "$steps" --warmup 1 "${pointwise[@]}" \
    --lengths "$lengths" > "$out/ours-$round.txt"
  ours=$(sed -n 's/^{"bench":"step".*"median_ms":\([0-9.]*\).*/\1/p' "$out/ours-$round.txt")
  "$venv/bin/python" bench/pytorch_step.py --threads "$threads" --steps "$steps" --models "$model" --modes "$mode" \
    "${pointwise[@]}" > "$out/pytorch-$round.txt"
  theirs=$(sed -n 's/^{.*"step_ms_median": *\([0-9.]*\).*/\1/p' "$out/pytorch-$round.txt")
  [ -n "$ours" ] && [ -n "$theirs" ] || { echo "rounds.sh: round $round gave no time; see $out/*-$round.txt" >&2; exit 1; }
  ratio=$(awk -v a="$ours" -v b="$theirs" 'BEGIN {printf "%.3f", a / b}')
  echo "$ratio" >> "$out/ratios.txt"
  printf "round %d: ours %.1f ms, PyTorch %s %.1f ms, ratio %s  (%s)\n" "$round" "$ours" "$mode" "$theirs" "$ratio" \
    "$(uptime | sed 's/.*load/load/')"
done
sort -n "$out/ratios.txt" | awk '{v[NR] = $1} END {
  median = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
  printf "ours / PyTorch: median %.3f over %d rounds (min %.3f, max %.3f)\n", median, NR, v[1], v[NR] }'
echo "== uptime after: $(uptime)"
