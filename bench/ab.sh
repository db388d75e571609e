#!/usr/bin/env bash
# Before/after of two builds on this machine, interleaved so that both see the
# same noise: the fused attention ops (hkt-bench --case) or the training step
# (hkt-bench step), one thread by default — on a shared machine one thread is
# steady to 2-3 % where two threads swing by 10 % and more.
#
#   bench/ab.sh attention BUILD_A BUILD_B [rounds]   # MHA and HKT L=3, T=512: forward and backward ms
#   bench/ab.sh step BUILD_A BUILD_B [rounds]        # the SPEC-size step of both models: step ms, CPU ms
#   bench/ab.sh listops BUILD_A BUILD_B [rounds]     # hkt-train on ListOps as reproduce.sh makes it
#                                                    # (lengths 64 … 512, mean 277): median, min step ms
#   bench/ab.sh profile BUILD_A BUILD_B [rounds]     # the step's time per kernel (hkt-bench step --profile),
#                                                    # model:kernel rows of 0.3 ms and more
#
# Prints, per build and model, the minimum and median over the rounds (each
# round's value is itself the best of 10 runs, or the median of the steps;
# listops: of the steps after the first of a 30-step run).
# Settings (environment): THREADS (1), BATCH (attention: 8), STEPS (step: 4),
# EXTRA (step: extra flags, default --down-pointwise), WAIT (passive, or default:
# libgomp's own spin-then-sleep, which hkt-bench step's interleaved ratio uses).
# Stop other work first.
set -euo pipefail
mode="${1:?attention, step or listops}" a="${2:?BUILD_A}" b="${3:?BUILD_B}" rounds="${4:-5}"
threads="${THREADS:-1}"
[ "${WAIT:-passive}" = default ] || export OMP_WAIT_POLICY=passive
data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT
if [ "$mode" = listops ]; then
  "$b/listops-gen" --seed 5 --count 512 --min-len 64 --max-len 512 --max-depth 10 --max-args 10 \
    --out "$data/train.tsv" >/dev/null
  "$b/listops-gen" --seed 6 --count 64 --min-len 64 --max-len 512 --max-depth 10 --max-args 10 \
    --out "$data/val.tsv" >/dev/null
fi
echo "uptime before: $(uptime)"
for r in $(seq "$rounds"); do
  for dir in "$a" "$b"; do
    if [ "$mode" = listops ]; then
      for model in mha hkt; do  # HKT with SPEC section 2's pointwise projection, hkt-train's default
        "$dir/hkt-train" --task listops --data "$data" --seq-len 512 --d-model 64 --layers 2 --heads 4 --d-ff 128 \
          --batch 32 --steps 30 --log-every 1 --eval-every 1000000 --eval-batches 1 --threads "$threads" \
          --model "$model" --overwrite --out "$data/run" >/dev/null 2>&1
        python3 -c '
import json, statistics, sys
steps = [json.loads(l)["step_ms"] for l in open(sys.argv[3]) if "\"type\":\"train\"" in l][1:]
print(sys.argv[1], sys.argv[2], statistics.median(steps), min(steps))' "$dir" "$model" "$data/run/metrics.jsonl"
      done
    elif [ "$mode" = attention ]; then
      for c in mha,fused,1,512 hkt,fused,3,512; do
        "$dir/hkt-bench" --case "$c" --batch "${BATCH:-8}" --heads 4 --threads "$threads" --repeats 10 2>/dev/null |
          awk -v d="$dir" -v c="${c%%,*}" '{printf "%s %s %.3f %.3f\n", d, c, $1, $2 - $1}'
      done
    else
      profile=$([ "$mode" = profile ] && echo --profile || true)
      # shellcheck disable=SC2086
      "$dir/hkt-bench" step --model both --threads "$threads" --steps "${STEPS:-4}" $profile \
        ${EXTRA---down-pointwise} 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    if "\"bench\":\"step\"" in line:
        d = json.loads(line)
        print(sys.argv[1], d["model"], d["median_ms"], d["cpu_ms"])
        for op, ms in d.get("ops_ms_per_step", {}).items():
            if ms >= 0.3: print(sys.argv[1], d["model"] + ":" + op, ms, ms)' "$dir"
    fi
  done
done | python3 -c '
import collections, statistics, sys
names = {"attention": ("forward ms", "backward ms"), "listops": ("median step ms", "min step ms")}.get(
    sys.argv[1], ("step ms", "CPU ms"))
runs = collections.defaultdict(list)
for line in sys.stdin:
    build, model, x, y = line.split()
    runs[(model, build)].append((float(x), float(y)))
for (model, build), values in sorted(runs.items()):
    cols = ["%s min %8.2f median %8.2f" % (n, min(v[i] for v in values), statistics.median(v[i] for v in values))
            for i, n in enumerate(names)]
    print("%-4s %-28s %s" % (model, build[-28:], "   ".join(cols)))
' "$mode"
echo "uptime after: $(uptime)"
