#!/usr/bin/env bash
# Steps per second of hkt-train at 1 and 2 ranks (mpirun, one thread each)
# and one process with 2 threads, same global batch, on a generated ListOps
# set (T = 96, d = 64, 2 layers, batch 32); prints the mean step time and the
# mean gradient all-reduce time per step from metrics.jsonl.
#   scripts/data-parallel-bench.sh [STEPS] [BUILD_DIR]
set -euo pipefail
steps="${1:-40}"
build="${2:-build}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export OMP_WAIT_POLICY=passive OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
gen=(--min-len 16 --max-len 96 --max-depth 4 --max-args 5)
"$build/listops-gen" --seed 1 --count 4000 "${gen[@]}" --out "$work/train.tsv" > /dev/null
"$build/listops-gen" --seed 2 --count 64 "${gen[@]}" --out "$work/val.tsv" > /dev/null
train=(--task listops --data "$work" --seq-len 96 --model hkt --d-model 64 --layers 2 --heads 4 --d-ff 128
       --batch 32 --steps "$steps" --log-every 1 --eval-every 100000 --eval-batches 1 --seed 1)

summary() {  # mean step_ms and allreduce_ms over the train lines, the first (warm-up) step left out
  awk -v name="$1" -F'[:,}]' '/"type":"train"/ {
      for (i = 1; i < NF; i++) { if ($i ~ /"step"$/) s = $(i+1); if ($i ~ /"step_ms"$/) t = $(i+1);
                                 if ($i ~ /"allreduce_ms"$/) a = $(i+1) }
      if (s > 1) { n++; st += t; ar += a } }
    END { printf "%-26s %6.1f steps/s  step %7.1f ms  all-reduce %6.2f ms/step\n", name, 1000 * n / st, st / n, ar / n }' \
    "$2/metrics.jsonl"
}

"$build/hkt-train" "${train[@]}" --threads 1 --out "$work/one" > /dev/null
summary "1 process, 1 thread" "$work/one"
"$build/hkt-train" "${train[@]}" --threads 2 --out "$work/two-threads" > /dev/null
summary "1 process, 2 threads" "$work/two-threads"
mpirun -np 2 --oversubscribe --bind-to none --mca btl self,tcp "$build/hkt-train" "${train[@]}" --threads 1 \
  --out "$work/two-ranks" > /dev/null
summary "2 ranks (tcp), 1 thread each" "$work/two-ranks"
mpirun -np 2 --oversubscribe --bind-to none --mca btl self,vader "$build/hkt-train" "${train[@]}" --threads 1 \
  --out "$work/two-ranks-shm" > /dev/null
summary "2 ranks (shm), 1 thread each" "$work/two-ranks-shm"
