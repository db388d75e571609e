#!/usr/bin/env bash
# scripts/reproduce.sh without training: the dry run prints every run's
# command; runs launched through a stand-in hkt-train are collected, skipped
# once finished, resumed when interrupted, and wait for the sweep's rate;
# `summary` rebuilds the tables from the results alone, with numbers known
# in advance. Usage: reproduce-smoke.sh LISTOPS_GEN
set -euo pipefail
listops_gen="$1"
repo="$(cd "$(dirname "$0")/.." && pwd)"
folder="$(mktemp -d)"
trap 'rm -rf "$folder"' EXIT
fail() { echo "reproduce-smoke: $*" >&2; exit 1; }
expect() { grep -qF -- "$1" "$2" || { cat "$2" >&2; fail "expected '$1' in $2"; }; }

# A stand-in hkt-train: a finished run whose accuracy is known from its flags
# (HKT 5 points above MHA, +1 point per seed, the best rate 1e-3).
mkdir -p "$folder/build"
cat >"$folder/build/hkt-train" <<'FAKE'
#!/usr/bin/env bash
out="" lr=0.001 seed=0 model=hkt
while [ $# -gt 0 ]; do
  case $1 in --out|--resume) out=$2; shift ;; --lr) lr=$2; shift ;; --seed) seed=$2; shift ;; --model) model=$2; shift ;; esac
  shift
done
mkdir -p "$out"
sleep "${FAKE_SECONDS:-0}"
echo "listops: $model, 1000 parameters, 10 train / 10 val examples, T = 8, 2 steps (1 per epoch)"
acc=$(awk -v lr="$lr" -v s="$seed" -v m="$model" 'BEGIN { printf "%.4f", 0.3 + (m == "hkt" ? 0.05 : 0) + 0.01 * s - (lr - 0.001) ^ 2 * 1000 }')
printf '{"type":"train","step":2,"loss":1,"step_ms":10}\n{"type":"eval","step":2,"val_loss":1,"val_accuracy":%s}\n{"type":"test","step":2,"best_step":2,"test_loss":1,"test_accuracy":%s}\n' "$acc" "$acc" >"$out/metrics.jsonl"
echo "{\"lr\":$lr}" >"$out/config.json"
FAKE
chmod +x "$folder/build/hkt-train"
ln -s "$listops_gen" "$folder/build/listops-gen"
export RUNS="$folder/runs" RESULTS="$folder/results" BUILD="$folder/build" RESULTS_MD="$folder/RESULTS.md" NICE=0 POLL=1

# The plan: every run once, with the protocol's budget, and placeholders for the sweep's rate.
"$repo/scripts/reproduce.sh" --dry-run >"$folder/plan.txt"
test "$(grep -c '^[a-z-]*/[a-zA-Z0-9.-]* ' "$folder/plan.txt")" -eq 35 || fail "the plan does not list 35 runs"
test "$(grep -c 'hkt-train .*--batch 32 --steps 5000 --eval-every 250 --eval-batches 0' "$folder/plan.txt")" -eq 25 ||
  fail "not every training has the protocol's budget"
expect "--model hkt --levels 3 --lr 3e-4 --seed 0" "$folder/plan.txt"
expect "--d-ff 331" "$folder/plan.txt"  # the parameter-matched MHA
expect "--lr BEST_LR_OF_mha --seed 1" "$folder/plan.txt"
expect "hkt-bench step --model both --levels 4 --down-pointwise" "$folder/plan.txt"
if "$repo/scripts/reproduce.sh" run no-such-run >"$folder/out.txt" 2>&1; then fail "an unknown run was accepted"; fi
expect "no run or experiment 'no-such-run'" "$folder/out.txt"

# Runs that need the sweep wait for it; then they start at its best rate.
"$repo/scripts/reproduce.sh" run listops/hkt-seed1 >"$folder/out.txt"
expect "not started: listops/hkt-seed1 (wait: the listops-lr sweep of hkt is unfinished)" "$folder/out.txt"
"$repo/scripts/reproduce.sh" run listops-lr listops >"$folder/out.txt"
expect "--model hkt --levels 3 --lr 1e-3 --seed 2" "$folder/out.txt"
test -f "$RESULTS/listops/mha-seed2/metrics.jsonl" -a -f "$RESULTS/listops/mha-seed2/config.json" || fail "not collected"
test -f "$RESULTS/data/listops-T512/val.summary.txt" || fail "the data summary was not kept"
"$repo/scripts/reproduce.sh" run listops >"$folder/out.txt"
expect "skip listops/hkt-seed2 (finished)" "$folder/out.txt"
# When a slot frees, the first startable run in plan order takes it: HKT's
# seed 1, which waited for HKT's sweep, goes before the matched MHA that
# was ready earlier (one slot, each stand-in run taking a second).
RUNS="$folder/runs-order" RESULTS="$folder/results-order" JOBS=1 FAKE_SECONDS=1 \
  "$repo/scripts/reproduce.sh" run listops-lr listops/hkt-seed1 listops-ablation/mha-matched-seed0 >"$folder/out.txt"
first=$(grep -E -m1 -o 'start (listops/hkt-seed1|listops-ablation/mha-matched-seed0)' "$folder/out.txt" || true)
test "$first" = "start listops/hkt-seed1" || { cat "$folder/out.txt" >&2; fail "a run that waited for the sweep lost its place in the plan"; }
mkdir -p "$RUNS/listops-ablation/hkt-L1-seed0" && touch "$RUNS/listops-ablation/hkt-L1-seed0/checkpoint.safetensors"
"$repo/scripts/reproduce.sh" --dry-run run listops-ablation/hkt-L1-seed0 >"$folder/out.txt"
expect "hkt-train --resume $RUNS/listops-ablation/hkt-L1-seed0 --threads 1 --device cpu" "$folder/out.txt"

# The statistics against published values: t(0.975) for 1, 2 and 30 degrees
# of freedom, and scipy's ttest_ind([1, 2, 3], [4, 5, 7], equal_var=False).
PYTHONPATH="$repo/scripts" python3 -c '
from reproduce_stats import t_quantile, welch
assert [round(t_quantile(0.975, df), 3) for df in (1, 2, 30)] == [12.706, 4.303, 2.042]
t, df, p = welch([1, 2, 3], [4, 5, 7])
assert (round(t, 4), round(df, 3), round(p, 4)) == (-3.1623, 3.448, 0.0419), (t, df, p)
' || fail "the statistics disagree with the published values"

# The summary, from the results alone (the run folders removed).
rm -rf "$RUNS"
mkdir -p "$RESULTS/cost/step-L2" "$RESULTS/cost/step-L3" "$RESULTS/analysis/hkt-seed0"
# Where the steps were also interleaved in one process, the table takes that
# pair's medians and ratio, not the separate runs'.
printf '{"bench":"step","model":"mha","median_ms":500}\n{"bench":"step","model":"hkt","median_ms":900}\n%s\n' \
  '{"bench":"step_pair","mha_median_ms":600,"hkt_median_ms":750,"ratio":1.26}' >"$RESULTS/cost/step-L2/output.jsonl"
printf '{"machine":"cpu","threads":1}\n{"bench":"step","model":"mha","median_ms":700}\n{"bench":"step","model":"hkt","median_ms":1000}\n' \
  >"$RESULTS/cost/step-L3/output.jsonl"
printf '{"kurtosis":[{"block":0,"level":"fused","kappa":33.0},{"block":0,"level":0,"kappa":2.0}],"bilinear":[%s]}\n' \
  '{"block":0,"level":0,"head":0,"norm":5.0,"symmetric":4.0,"antisymmetric":3.0}' >"$RESULTS/analysis/hkt-seed0/output.jsonl"
# A run begun on another machine (slow steps there) and resumed here at step 3:
# its step time is this machine's, so the HKT row still reads 10 ms.
resumed="$RESULTS/listops/hkt-seed1"
{ printf '{"type":"train","step":2,"loss":1,"step_ms":500}\n{"type":"train","step":3,"loss":1,"step_ms":500}\n'
  printf '{"type":"train","step":4,"loss":1,"step_ms":10}\n'; grep -v '"train"' "$resumed/metrics.jsonl"; } >"$folder/m.jsonl"
mv "$folder/m.jsonl" "$resumed/metrics.jsonl"
printf 'listops: hkt, 1000 parameters, 10 train / 10 val examples, T = 8, 4 steps (1 per epoch), resuming at step 3\n' \
  >"$resumed/run.txt"
printf 'intro\n<!-- reproduce-summary:begin -->\nold\n<!-- reproduce-summary:end -->\nrest\n' >"$RESULTS_MD"
"$repo/scripts/reproduce.sh" summary >"$folder/out.txt"
summary="$RESULTS/summary.md"
expect "| MHA | 1e-3 | 30.00 (2) | 30.00 | 30.00 | yes |" "$summary"
expect "| HKT (L = 3) | 1000 | 3 | 36.00 ± 1.00 | 36.00 ± 1.00 | 10 ± 0 |" "$summary"
expect "seed 0: +5.00, seed 1: +5.00, seed 2: +5.00." "$summary"
expect "**Verdict: confirmed (the interval lies above 0)**" "$summary"
expect "**Verdict: not evaluable yet (3 and 0 of 3 seeds finished)**" "$summary"
expect "| 2 | 600 | 750 | 1.26 | 1.2500 |  |" "$summary"
expect "| 3 | 700 | 1000 | 1.43 | 1.3125 | 1.31× |" "$summary"
expect "| HKT | 1 | 33.0 | l = 0: 2.0 | 36.0 % |" "$summary"  # (3 / 5)^2 of ‖M‖² is antisymmetric
if grep -qx old "$RESULTS_MD"; then fail "the old text between the markers was kept"; fi
expect "HKT (L = 3) | 1000 | 3" "$RESULTS_MD"
expect "rest" "$RESULTS_MD"
echo "reproduce-smoke: ok"
