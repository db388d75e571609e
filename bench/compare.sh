#!/usr/bin/env bash
# One command, one run: the training step of the MHA and HKT classifiers in
# this project (hkt-train, fused attention), in PyTorch 2 (eager, sdpa,
# compile, compile+sdpa: bench/pytorch_step.py) and in JAX (jax.jit of the
# whole step: bench/jax_step.py), at the same sizes and thread count, printed
# as the table of issue 15, with `uptime` before and after (a loaded machine
# shows there; on a shared one, timings with 2 threads swing by 10x when
# another process takes a core).
#
#   bench/setup-venv.sh                   # once: the Python environment
#   BUILD=build bench/compare.sh          # the comparison (not run by CI)
#
# Settings (environment):
#   BUILD     build folder with hkt-train and listops-gen (default build)
#   VENV      Python environment from bench/setup-venv.sh (default bench/.venv)
#   THREADS   threads for every framework (default 2)
#   STEPS     steps per row, warm-up included (default 8)
#   WARMUP    leading Python steps left out of the median (default 2; the
#             compiling steps are among them). hkt-train's median leaves out
#             step 1, as scripts/step-time.sh does.
#   SEQ_LEN BATCH D_MODEL LAYERS HEADS D_FF LEVELS
#             sizes (default 512 32 64 2 4 128 3, the SPEC's ListOps setting)
#   CAUSAL=1  causal attention everywhere (default bidirectional)
#   MODES     PyTorch modes (default eager,sdpa,compile,compile+sdpa)
#   PARTS     what to run (default "ours pytorch jax")
#   OUT       folder for the raw outputs (default runs/compare)
#
# Ours, three rows: `hkt-bench step` (bidirectional only) on the Python
# scripts' batch (random tokens, lengths spread evenly over T/2 … T by one
# formula in all three programs), the same at full length T for every
# example (--lengths full: all the work the padded batch hides from us; the
# ratios are printed for both), and hkt-train on generated ListOps: at the default sizes,
# bidirectional, scripts/step-time.sh with IMPLS=fused (median step_ms of
# hkt-train's metric lines after step 1); at other sizes or causal, the same
# hkt-train command with those flags (step-time.sh fixes T = 512 and batch
# 32). ListOps' lengths are 400-512 at T = 512, and our kernels skip the keys
# past a sequence's length, and in the backward the padded query rows and
# the GEMMs' zero gradient rows. The Python scripts compute the full padded
# T x T attention and every row of every GEMM (a mask cannot skip work), so
# their lengths do not change their work. The HKT of every row has
# SPEC section 2's down_pointwise projection (hkt-train's default; the Python
# scripts get --down-pointwise); POINTWISE=0 leaves it out everywhere.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD:-build}"
venv="${VENV:-bench/.venv}"
threads="${THREADS:-2}"
steps="${STEPS:-8}"
warmup="${WARMUP:-2}"
seq_len="${SEQ_LEN:-512}" batch="${BATCH:-32}" d_model="${D_MODEL:-64}" layers="${LAYERS:-2}"
heads="${HEADS:-4}" d_ff="${D_FF:-128}" levels="${LEVELS:-3}"
modes="${MODES:-eager,sdpa,compile,compile+sdpa}"
parts="${PARTS:-ours pytorch jax}"
out="${OUT:-runs/compare}"
causal_flag=""
[ "${CAUSAL:-0}" = 1 ] && causal_flag="--causal"
python="$venv/bin/python"

has_part() { case " $parts " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
if has_part pytorch || has_part jax; then
  [ -x "$python" ] || { echo "compare.sh: no $python; run bench/setup-venv.sh first (or set VENV)" >&2; exit 1; }
fi
if has_part ours; then
  [ -x "$build/hkt-train" ] || { echo "compare.sh: no $build/hkt-train; build it or set BUILD" >&2; exit 1; }
fi
mkdir -p "$out"
rm -f "$out"/ours.txt "$out"/ours-bench-*.txt "$out"/pytorch.jsonl "$out"/jax.jsonl

echo "== uptime before: $(uptime)"
echo "== $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p'), $(nproc) CPUs; threads $threads; T = $seq_len," \
  "d = $d_model, $layers layers, $heads heads, d_ff = $d_ff, batch $batch, HKT L = $levels," \
  "${causal_flag:+causal}${causal_flag:-bidirectional}; $steps steps per row"
export OMP_NUM_THREADS="$threads"

if has_part ours; then
  [ -x "$build/hkt-bench" ] || { echo "compare.sh: no $build/hkt-bench; build it or set BUILD" >&2; exit 1; }
  if [ -z "$causal_flag" ]; then  # hkt-bench step times the bidirectional models only
    pointwise_bench=""
    [ "${POINTWISE:-1}" = 1 ] && pointwise_bench="--down-pointwise"
    for lengths in spread full; do
      echo "== this project: hkt-bench step ($build), lengths $lengths"
      "$build"/hkt-bench step --model both --threads "$threads" --steps "$steps" --warmup 1 --seq-len "$seq_len" \
        --batch "$batch" --d-model "$d_model" --layers "$layers" --heads "$heads" --d-ff "$d_ff" --levels "$levels" \
        --lengths "$lengths" $pointwise_bench | tee "$out/ours-bench-$lengths.txt"
    done
  fi
  echo "== this project: hkt-train ($build), fused attention"
  if [ -z "$causal_flag" ] && [ "$seq_len $batch $d_model $layers $heads $d_ff $levels" = "512 32 64 2 4 128 3" ]; then
    BUILD="$build" IMPLS=fused THREADS="$threads" STEPS="$steps" scripts/step-time.sh | tee "$out/ours.txt"
  else
    data="runs/compare-data-$seq_len"
    mkdir -p "$data"
    min_len=$((seq_len * 25 / 32))
    [ -f "$data/train.tsv" ] || "$build"/listops-gen --seed 11 --count 256 --min-len "$min_len" --max-len "$seq_len" \
      --out "$data/train.tsv" >/dev/null
    [ -f "$data/val.tsv" ] || "$build"/listops-gen --seed 12 --count 32 --min-len "$min_len" --max-len "$seq_len" \
      --out "$data/val.tsv" >/dev/null
    for model in mha hkt; do
      run="$out/hkt-train-$model"
      pointwise_flag=""
      [ "$model" = hkt ] && pointwise_flag="--down-pointwise $([ "${POINTWISE:-1}" = 1 ] && echo true || echo false)"
      "$build"/hkt-train --task listops --data "$data" --seq-len "$seq_len" --d-model "$d_model" --layers "$layers" \
        --heads "$heads" --d-ff "$d_ff" --levels "$levels" $causal_flag --batch "$batch" --steps "$steps" \
        --log-every 1 --eval-every 1000000 --eval-batches 1 --threads "$threads" --model "$model" \
        --attention-impl fused $pointwise_flag --overwrite --out "$run" >/dev/null
      ms=$(grep '"type":"train"' "$run/metrics.jsonl" | tail -n +2 | sed 's/.*"step_ms":\([0-9.]*\).*/\1/' | sort -n |
        awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}')
      printf "%-10s %-9s %12.1f\n" "$model" fused "$ms" | tee -a "$out/ours.txt"
    done
  fi
fi

sizes=(--threads "$threads" --steps "$steps" --warmup "$warmup" --seq-len "$seq_len" --batch "$batch"
  --d-model "$d_model" --layers "$layers" --heads "$heads" --d-ff "$d_ff" --levels "$levels" $causal_flag)
[ "${POINTWISE:-1}" = 1 ] && sizes+=(--down-pointwise)
if has_part pytorch; then
  echo "== PyTorch: bench/pytorch_step.py --modes $modes"
  "$python" bench/pytorch_step.py "${sizes[@]}" --modes "$modes" --check | tee "$out/pytorch.log" |
    grep '^{' | tee "$out/pytorch.jsonl" ||
    echo "compare.sh: bench/pytorch_step.py failed, or a mode's first loss differs from eager's: see $out/pytorch.log" >&2
fi
if has_part jax; then
  echo "== JAX: bench/jax_step.py"
  "$python" bench/jax_step.py "${sizes[@]}" | tee "$out/jax.jsonl" || echo "compare.sh: bench/jax_step.py failed" >&2
fi
echo "== uptime after: $(uptime)"

# The table: one row per framework and mode, MHA and HKT step medians.
[ -x "$python" ] || python=python3
"$python" - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
rows = {}
def add(name, model, ms):
    rows.setdefault(name, {})[model] = ms
SAME = "this project, the Python scripts' batch (hkt-bench step)"
FULL = "this project, full length (hkt-bench step --lengths full)"
pair_ratio = {}
for lengths, label in (("spread", SAME), ("full", FULL)):
    path = os.path.join(out, f"ours-bench-{lengths}.txt")
    if not os.path.exists(path):
        continue
    for line in open(path):
        if line.startswith("{"):
            r = json.loads(line)
            if r.get("bench") == "step":
                add(label, r["model"], r["median_ms"])
            elif r.get("bench") == "step_pair":  # both models' steps alternating in one process
                add(label + ", MHA and HKT steps interleaved", "mha", r["mha_median_ms"])
                add(label + ", MHA and HKT steps interleaved", "hkt", r["hkt_median_ms"])
                pair_ratio[label] = r["ratio"]
path = os.path.join(out, "ours.txt")
if os.path.exists(path):
    for line in open(path):
        f = line.split()
        if len(f) == 3 and f[0] in ("mha", "hkt") and f[1] == "fused":
            add("this project, fused attention (hkt-train)", f[0], float(f[2]))
labels = {"eager": "eager", "sdpa": "F.scaled_dot_product_attention", "compile": "torch.compile",
          "compile+sdpa": "torch.compile + SDPA", "jit": "jax.jit of the whole step (optax AdamW)"}
for name in ("pytorch.jsonl", "jax.jsonl"):
    path = os.path.join(out, name)
    if os.path.exists(path):
        for line in open(path):
            r = json.loads(line)
            add(f"{r['framework'].split('+')[0]} {labels.get(r['mode'], r['mode'])}", r["model"], r["step_ms_median"])
best = {m: min((v[m] for k, v in rows.items() if not k.startswith("this project") and m in v), default=None)
        for m in ("mha", "hkt")}
print("\n| | MHA step ms | HKT step ms |\n|---|---|---|")
for name, v in rows.items():
    cell = lambda m: "–" if m not in v else (f"**{v[m]:.0f}**" if v[m] == best[m] else f"{v[m]:.0f}")
    print(f"| {name} | {cell('mha')} | {cell('hkt')} |")
for label in (SAME, FULL, "this project, fused attention (hkt-train)"):
    ours = rows.get(label, {})
    for m in ("mha", "hkt"):
        if m in ours and best[m]:
            print(f"{m.upper()}: ours ({label}) / best other = {ours[m] / best[m]:.2f}")
    if "mha" in ours and "hkt" in ours:
        print(f"ours HKT / ours MHA ({label}) = {ours['hkt'] / ours['mha']:.2f}")
    if label in pair_ratio:
        print(f"ours HKT / ours MHA ({label}), steps interleaved (median of the step pairs' ratios) = "
              f"{pair_ratio[label]:.2f}")
PY
