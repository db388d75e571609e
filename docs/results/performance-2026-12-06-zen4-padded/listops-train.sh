#!/usr/bin/env bash
# hkt-train's step on ListOps as reproduce.sh generates it (lengths 64 … 512, mean 277 of T = 512),
# before (444da4a, BEFORE) and after (build-nocuda), alternating; median step_ms after the first step.
set -u
out=docs/results/performance-2026-12-06-zen4-padded
BEFORE=${BEFORE:-/work/wt-base/build-nocuda}
data=/tmp/lo
mkdir -p $data
build-nocuda/listops-gen --seed 5 --count 512 --min-len 64 --max-len 512 --max-depth 10 --max-args 10 --out $data/train.tsv
build-nocuda/listops-gen --seed 6 --count 64 --min-len 64 --max-len 512 --max-depth 10 --max-args 10 --out $data/val.tsv
median() { grep '"type":"train"' "$1" | tail -n +2 | sed 's/.*"step_ms":\([0-9.]*\).*/\1/' | sort -n |
  awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo "uptime before: $(uptime)"
for r in 1 2 3; do for dir in "$BEFORE" build-nocuda; do for model in mha hkt; do
  extra=(); [ $model = hkt ] && extra=(--down-pointwise true)
  $dir/hkt-train --task listops --data $data --seq-len 512 --d-model 64 --layers 2 --heads 4 --d-ff 128 --batch 32 \
    --steps 30 --log-every 1 --eval-every 1000000 --eval-batches 1 --threads ${THREADS:-2} --model $model "${extra[@]}" \
    --overwrite --out /tmp/lo/run >/dev/null 2>&1
  echo "round $r $dir $model: median step $(median /tmp/lo/run/metrics.jsonl) ms"
done; done; done
echo "uptime after: $(uptime)"
