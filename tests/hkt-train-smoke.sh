#!/usr/bin/env bash
# A few steps of the real hkt-train (stopped, resumed, with --detect-anomaly),
# run by CTest so that the sanitizer build checks the tool for leaks and
# memory errors end to end. Usage: hkt-train-smoke.sh LISTOPS_GEN HKT_TRAIN
set -euo pipefail
listops_gen="$1" hkt_train="$2"
folder="$(mktemp -d)"
trap 'rm -rf "$folder"' EXIT
"$listops_gen" --seed 1 --count 64 --min-len 5 --max-len 24 --out "$folder/train.tsv"
"$listops_gen" --seed 2 --count 16 --min-len 5 --max-len 24 --out "$folder/val.tsv"
common=(--task listops --data "$folder" --seq-len 24 --d-model 16 --layers 1 --heads 2 --d-ff 16 --batch 8
        --steps 4 --log-every 1 --eval-every 2 --eval-batches 1 --threads 2 --seed 1)
"$hkt_train" "${common[@]}" --stop-at 2 --out "$folder/run"
"$hkt_train" --resume "$folder/run" --detect-anomaly
test "$(grep -c '"type":"train"' "$folder/run/metrics.jsonl")" -eq 4
