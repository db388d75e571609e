#!/usr/bin/env bash
# Measures the training step time of MHA and HKT side by side in one run, at
# the sizes of the paper's ListOps setting scaled to this machine: T = 512,
# d = 64, 2 layers, 4 heads, d_ff = 128, batch 32 (defaults; override with
# THREADS, STEPS). Prints the median step time of each model (steps after
# the first) for the fused and the composed attention, and the ratios.
# BUILD picks the build folder (default build), IMPLS the attention
# implementations (default "fused composed"); POINTWISE=0 runs HKT without
# SPEC section 2's down_pointwise projection (default: with it, as hkt-train).
set -euo pipefail
cd "$(dirname "$0")/.."
threads="${THREADS:-2}"
steps="${STEPS:-8}"
build="${BUILD:-build}"
impls="${IMPLS:-fused composed}"
data=runs/step-time-data
mkdir -p "$data"
[ -f "$data/train.tsv" ] || "$build"/listops-gen --seed 11 --count 256 --min-len 400 --max-len 512 --out "$data/train.tsv" >/dev/null
[ -f "$data/val.tsv" ] || "$build"/listops-gen --seed 12 --count 32 --min-len 400 --max-len 512 --out "$data/val.tsv" >/dev/null
median_ms() {  # median step_ms of the train lines after step 1
  grep '"type":"train"' "$1" | tail -n +2 | sed 's/.*"step_ms":\([0-9.]*\).*/\1/' | sort -n |
    awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
model_flags() {  # down_pointwise is an HKT option
  if [ "$1" = hkt ]; then [ "${POINTWISE:-1}" = 1 ] && echo "--down-pointwise true" || echo "--down-pointwise false"; fi
}
printf "%-10s %-9s %12s\n" model attention "step ms"
for impl in $impls; do
  for model in mha hkt; do
    out="runs/step-time-$(basename "$build")-$model-$impl"
    "$build"/hkt-train --task listops --data "$data" --seq-len 512 --d-model 64 --layers 2 --heads 4 --d-ff 128 \
      --batch 32 --steps "$steps" --log-every 1 --eval-every 1000000 --eval-batches 1 --threads "$threads" \
      --model "$model" --attention-impl "$impl" $(model_flags "$model") --overwrite --out "$out" >/dev/null
    ms=$(median_ms "$out/metrics.jsonl")
    eval "ms_${model}_${impl}=$ms"
    printf "%-10s %-9s %12.1f\n" "$model" "$impl" "$ms"
  done
done
for impl in $impls; do
  awk -v h="$(eval echo "\$ms_hkt_$impl")" -v m="$(eval echo "\$ms_mha_$impl")" -v impl="$impl" 'BEGIN {
    printf "HKT/MHA step-time ratio, %s: %.3f (threads '"$threads"')\n", impl, h / m }'
done
