#!/usr/bin/env bash
# The README's main command: generates a small ListOps set, trains an HKT and
# an MHA classifier of the same size on it (same data, steps, seed and
# learning rate), and prints their validation and test accuracy side by side
# with the majority-class baseline. Takes a few minutes on 2 cores.
#   ./scripts/listops.sh [STEPS]        (default 600)
set -euo pipefail
cd "$(dirname "$0")/.."
steps="${1:-600}"
threads="${OMP_NUM_THREADS:-$(nproc)}"
data=runs/listops-data
if [ ! -x build/hkt-train ] || [ ! -x build/listops-gen ]; then
  ./scripts/install-deps.sh run
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DHKT_TESTS=OFF >/dev/null
  cmake --build build -j "$(nproc)" --target hkt-train listops-gen
fi
mkdir -p "$data"
gen() { ./build/listops-gen --seed "$1" --count "$2" --min-len 16 --max-len 96 --max-depth 4 --max-args 5 --out "$data/$3"; }
[ -f "$data/train.tsv" ] || gen 1 6000 train.tsv
[ -f "$data/val.tsv" ] || gen 2 1000 val.tsv
[ -f "$data/test.tsv" ] || gen 3 1000 test.tsv

common=(--task listops --data "$data" --seq-len 96 --d-model 64 --layers 2 --heads 4 --d-ff 128 --batch 32
        --steps "$steps" --lr 2e-3 --eval-every 200 --seed 0 --threads "$threads")
for model in hkt mha; do
  echo "== training $model"
  ./build/hkt-train "${common[@]}" --model "$model" --overwrite --out "runs/listops-$model" | tee "runs/listops-$model.log"
done

accuracy() { sed -n "s/^eval $2 .*accuracy \([0-9.]*\).*/\1/p" "runs/listops-$1.log" | tail -1; }
majority=$(tail -n +2 "$data/val.tsv" | cut -f2 | sort | uniq -c | sort -rn | head -1 | awk -v n="$(tail -n +2 "$data/val.tsv" | wc -l)" '{printf "%.4f", $1 / n}')
echo
printf "%-26s %10s %10s\n" "ListOps (T<=96, $steps steps)" "val acc" "test acc"
printf "%-26s %10s %10s\n" "HKT (L=3, s=2)" "$(accuracy hkt val)" "$(accuracy hkt test)"
printf "%-26s %10s %10s\n" "MHA" "$(accuracy mha val)" "$(accuracy mha test)"
printf "%-26s %10s\n" "majority class" "$majority"
