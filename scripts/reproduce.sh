#!/usr/bin/env bash
# Reproduces the paper's experiments (issue 7) at the scale a machine allows:
# HKT vs MHA on ListOps (T = 512), the level ablation with a
# parameter-matched MHA, sequential Fashion-MNIST (T = 784), and the
# per-step cost of HKT against MHA for L = 1..4 beside the bound sum 4^-l.
#
#   ./scripts/reproduce.sh [--paper] [--dry-run] EXPERIMENT...
#     listops           HKT (L=3, s=2) and MHA, one run per seed
#     listops-ablation  HKT with L=1 and L=2 and an MHA with as many
#                       parameters as HKT L=3, one run per seed
#     fmnist            sequential Fashion-MNIST, HKT (L=3) and MHA
#     cost              step time and score cost of MHA and HKT L=1..4
#     summary           tables (mean ± std over seeds) from the run folders
#     all               everything above, in priority order (ListOps, cost,
#                       one ablation seed, Fashion-MNIST, the other
#                       ablation seeds), then summary
#
# Every run keeps its folder (metrics.jsonl, config.json, log) under
# $RESULTS/<experiment>/<name>-seed<k>; finished runs are skipped when the
# script is run again, so an interrupted set can be completed. The summary
# goes to $RESULTS/summary.md (copied into docs/RESULTS.md by hand).
#
# Both models always get the same data, steps, batch, schedule and the same
# learning rate (one fixed lr for both, no search: see docs/RESULTS.md).
# Sizes are variables (defaults sized for a 2-core machine shared with other
# jobs, about an hour for `all`); --paper sets an LRA-sized stand-in for
# the paper's scale (days on a CPU). Any variable can be set in the
# environment, e.g. SEEDS="0 1" LISTOPS_STEPS=2000 ./scripts/reproduce.sh listops
set -euo pipefail
cd "$(dirname "$0")/.."

paper=0 dry_run=0 experiments=()
for arg in "$@"; do
  case "$arg" in
    --paper) paper=1 ;;
    --dry-run) dry_run=1 ;;
    --cost-worker) experiments+=(cost-worker) ;;  # internal: the cost job of the queue
    -h|--help) awk 'NR > 1 && !/^#/ {exit} NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    listops|listops-ablation|fmnist|cost|summary|all) experiments+=("$arg") ;;
    *) echo "reproduce.sh: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
  esac
done
[ ${#experiments[@]} -gt 0 ] || { echo "reproduce.sh: name an experiment (see --help)" >&2; exit 2; }

# ---- sizes (exported: the cost job reads them in a child) -----------------
set -a
if [ "$paper" = 1 ]; then  # an LRA-sized stand-in: the paper's own widths and steps are not known to us
  : "${LISTOPS_TRAIN:=96000}" "${LISTOPS_VAL:=2000}" "${LISTOPS_TEST:=2000}" "${LISTOPS_MIN_LEN:=128}"
  : "${LISTOPS_D:=512}" "${LISTOPS_LAYERS:=4}" "${LISTOPS_HEADS:=8}" "${LISTOPS_DFF:=1024}"
  : "${LISTOPS_BATCH:=32}" "${LISTOPS_STEPS:=5000}" "${LISTOPS_EVAL_EVERY:=500}"
  : "${FMNIST_D:=128}" "${FMNIST_LAYERS:=4}" "${FMNIST_HEADS:=4}" "${FMNIST_DFF:=256}"
  : "${FMNIST_BATCH:=32}" "${FMNIST_STEPS:=10000}" "${FMNIST_TRAIN_LIMIT:=0}" "${FMNIST_VAL:=6000}"
  : "${FMNIST_EVAL_EVERY:=1000}" "${FMNIST_EVAL_BATCHES:=0}"
  : "${COST_STEPS:=6}" "${THREADS:=$(nproc)}" "${JOBS:=1}"
fi
: "${RESULTS:=runs/reproduce}"   # where every run folder and the summary go
: "${SEEDS:=0 1 2}"              # model seeds (initialisation and data order)
: "${JOBS:=2}"                   # runs at a time
: "${THREADS:=1}"                # threads per run
: "${NICE:=10}"
: "${LR:=2e-3}"                  # the one learning rate of every run, both models
: "${LAST_START:=}"              # HH:MM (UTC): start no run after this time (empty: no limit)
# ListOps: one data set, train/val/test generated from seeds 101/102/103
: "${LISTOPS_T:=512}" "${LISTOPS_MIN_LEN:=64}" "${LISTOPS_MAX_DEPTH:=10}" "${LISTOPS_MAX_ARGS:=10}"
: "${LISTOPS_TRAIN:=10000}" "${LISTOPS_VAL:=500}" "${LISTOPS_TEST:=1000}"
: "${LISTOPS_D:=32}" "${LISTOPS_LAYERS:=2}" "${LISTOPS_HEADS:=2}" "${LISTOPS_DFF:=64}"
: "${LISTOPS_BATCH:=8}" "${LISTOPS_STEPS:=400}" "${LISTOPS_EVAL_EVERY:=200}"
# sequential Fashion-MNIST (T = 784): the validation set is held out of train by each run's seed
: "${FMNIST_D:=32}" "${FMNIST_LAYERS:=1}" "${FMNIST_HEADS:=2}" "${FMNIST_DFF:=64}"
: "${FMNIST_BATCH:=8}" "${FMNIST_STEPS:=200}" "${FMNIST_TRAIN_LIMIT:=20000}" "${FMNIST_VAL:=300}"
: "${FMNIST_EVAL_EVERY:=100}" "${FMNIST_EVAL_BATCHES:=63}"  # test on the first 63 batches (504 images)
# cost: training steps per configuration, each configuration measured twice, interleaved
: "${COST_STEPS:=6}" "${COST_ROUNDS:=2}" "${COST_BENCH:=1}"  # COST_BENCH=1: also time the attention ops alone

set +a
export OMP_WAIT_POLICY=passive OMP_NUM_THREADS="$THREADS"
build=build
listops_data="$RESULTS/data/listops-T$LISTOPS_T"

ensure_built() {
  [ -x $build/hkt-train ] && [ -x $build/listops-gen ] && [ -x $build/hkt-bench ] && return
  cmake -S . -B $build -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build $build -j "${BUILD_JOBS:-1}" --target hkt-train listops-gen hkt-bench
}

# HKT L=3 has more attention parameters than MHA (two more q/k pairs, the
# downsampling convolutions, the hybrid-head convolution, the mixing logits);
# the matched MHA gets them back as feed-forward width. Prints that d_ff.
matched_dff() {  # d heads d_ff levels down_kernel conv_kernel
  awk -v d="$1" -v h="$2" -v ff="$3" -v L="$4" -v k="$5" -v kc="$6" 'BEGIN {
    extra = (L - 1) * 2 * (d * d + d) + (L - 1) * (d * k + 3 * d) + h * L + d * kc + d + h
    printf "%d", ff + int(extra / (2 * d + 1) + 0.5) }'
}

# ---- the job queue -------------------------------------------------------
jobs_queued=()  # "name|folder|command" in the order they should start
queue() { jobs_queued+=("$1|$2|$3"); }

finished() { [ -f "$1/done" ] || { [ -f "$1/metrics.jsonl" ] && grep -q '"type":"test"' "$1/metrics.jsonl"; }; }

# A run in progress has <folder>.running holding its pid. Slots are counted
# over every live marker under $RESULTS, so a second invocation (say, with
# another order) shares the JOBS slots with the first and never starts a run
# that is already going.
is_running() { [ -f "$1.running" ] && kill -0 "$(cat "$1.running")" 2>/dev/null; }
busy_slots() {
  local n=0 marker
  while IFS= read -r marker; do
    kill -0 "$(cat "$marker")" 2>/dev/null && n=$((n + 1))
  done < <(find "$RESULTS" -maxdepth 2 -name '*.running' 2>/dev/null)
  echo "$n"
}

run_queue() {
  local entry name folder command
  for entry in "${jobs_queued[@]}"; do
    IFS='|' read -r name folder command <<<"$entry"
    if finished "$folder"; then echo "skip $folder (finished)"; continue; fi
    if [ "$dry_run" = 1 ]; then echo "$command"; continue; fi
    if is_running "$folder"; then echo "skip $folder (running, pid $(cat "$folder.running"))"; continue; fi
    while [ "$(busy_slots)" -ge "$JOBS" ]; do sleep 5; done
    if finished "$folder" || is_running "$folder"; then  # another invocation took it meanwhile
      echo "skip $folder (finished or running)"; continue
    fi
    if [ -n "$LAST_START" ] && [ "$(date -u +%H%M)" -gt "${LAST_START/:/}" ]; then
      echo "$(date -u +%H:%M:%S) not started (past LAST_START=$LAST_START): $folder"; continue
    fi
    mkdir -p "$folder"
    echo "$(date -u +%H:%M:%S) start $folder"
    (nice -n "$NICE" bash -c "$command" >"$folder.log" 2>&1 &&
       echo "$(date -u +%H:%M:%S) done  $folder" || echo "$(date -u +%H:%M:%S) FAILED $folder (see $folder.log)"
     rm -f "$folder.running") &
    echo $! >"$folder.running"
  done
  wait
}

train_command() {  # folder, then hkt-train flags
  local folder="$1"; shift
  echo "./$build/hkt-train $* --threads $THREADS --lr $LR --log-every 10 --overwrite --out $folder"
}

listops_flags() {  # model levels d_ff
  echo "--task listops --data $listops_data --seq-len $LISTOPS_T --model $1 --levels $2 --stride 2" \
       "--d-model $LISTOPS_D --layers $LISTOPS_LAYERS --heads $LISTOPS_HEADS --d-ff $3" \
       "--batch $LISTOPS_BATCH --steps $LISTOPS_STEPS --eval-every $LISTOPS_EVAL_EVERY"
}

make_listops_data() {
  mkdir -p "$listops_data"
  local split count seed
  for split in train val test; do
    case $split in train) count=$LISTOPS_TRAIN seed=101 ;; val) count=$LISTOPS_VAL seed=102 ;; test) count=$LISTOPS_TEST seed=103 ;; esac
    [ -f "$listops_data/$split.tsv" ] && continue
    ./$build/listops-gen --seed $seed --count "$count" --min-len "$LISTOPS_MIN_LEN" --max-len "$LISTOPS_T" \
      --max-depth "$LISTOPS_MAX_DEPTH" --max-args "$LISTOPS_MAX_ARGS" --out "$listops_data/$split.tsv" \
      >"$listops_data/$split.summary.txt"
  done
}

queue_listops() {  # seeds
  local seed
  for seed in $1; do
    for model in hkt mha; do
      local folder="$RESULTS/listops/$model-seed$seed"
      queue listops "$folder" "$(train_command "$folder" "$(listops_flags $model 3 "$LISTOPS_DFF") --seed $seed")"
    done
  done
}

queue_ablation() {  # seeds
  local seed folder levels dff
  dff=$(matched_dff "$LISTOPS_D" "$LISTOPS_HEADS" "$LISTOPS_DFF" 3 3 5)
  for seed in $1; do
    for levels in 1 2; do
      folder="$RESULTS/listops-ablation/hkt-L$levels-seed$seed"
      queue ablation "$folder" "$(train_command "$folder" "$(listops_flags hkt $levels "$LISTOPS_DFF") --seed $seed")"
    done
    folder="$RESULTS/listops-ablation/mha-matched-seed$seed"
    queue ablation "$folder" "$(train_command "$folder" "$(listops_flags mha 1 "$dff") --seed $seed")"
  done
}

queue_fmnist() {  # seeds
  local seed model folder
  for seed in $1; do
    for model in hkt mha; do
      folder="$RESULTS/fmnist/$model-seed$seed"
      queue fmnist "$folder" "$(train_command "$folder" "--task fmnist --model $model --levels 3 --stride 2" \
        "--d-model $FMNIST_D --layers $FMNIST_LAYERS --heads $FMNIST_HEADS --d-ff $FMNIST_DFF" \
        "--batch $FMNIST_BATCH --steps $FMNIST_STEPS --train-limit $FMNIST_TRAIN_LIMIT --val-size $FMNIST_VAL" \
        "--eval-every $FMNIST_EVAL_EVERY --eval-batches $FMNIST_EVAL_BATCHES --seed $seed")"
    done
  done
}

# The cost run: every configuration trains COST_STEPS steps on the ListOps
# data at the ListOps sizes, the configurations interleaved COST_ROUNDS
# times so that a change in the machine's load hits all of them alike.
run_cost() {
  local out="$RESULTS/cost" round config model levels folder
  mkdir -p "$out"
  for round in $(seq 1 "$COST_ROUNDS"); do
    for config in mha hkt-L1 hkt-L2 hkt-L3 hkt-L4; do
      model=${config%%-*} levels=${config#hkt-L}; [ "$model" = mha ] && levels=1
      folder="$out/$config-round$round"
      ./$build/hkt-train $(listops_flags "$model" "$levels" "$LISTOPS_DFF" | sed "s/--steps [0-9]*/--steps $COST_STEPS/; s/--eval-every [0-9]*//") \
        --eval-every 1000000 --eval-batches 1 --log-every 1 --seed 0 --threads "$THREADS" --lr "$LR" \
        --overwrite --out "$folder" >"$folder.log" 2>&1
    done
  done
  # the attention ops alone, forward and forward+backward, at T = 256 and 512
  if [ "$COST_BENCH" = 1 ] && [ -x $build/hkt-bench ]; then ./$build/hkt-bench --max-t "$LISTOPS_T" --threads "$THREADS" --repeats 3 >"$out/hkt-bench.txt" 2>&1 || true; fi
  touch "$out/done"
}

# ---- the summary ---------------------------------------------------------
# one line per run: val accuracy (last evaluation), test accuracy, median
# step_ms of the steps after the first, parameter count (from the log), val loss
run_line() {  # folder
  local params
  params=$(sed -n 's/.*, \([0-9]*\) parameters,.*/\1/p' "$1.log" 2>/dev/null | head -1)
  awk -v params="${params:-?}" '
    function num(key,   m) { return match($0, "\"" key "\":[-0-9.eE+]+") ? substr($0, RSTART + length(key) + 3, RLENGTH - length(key) - 3) : "" }
    /"type":"train"/ && num("step") > 1 { ms[++n] = num("step_ms") }
    /"type":"eval"/ { val = num("val_accuracy"); val_loss = num("val_loss") }
    /"type":"test"/ { test = num("test_accuracy") }
    END {
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (ms[j] < ms[i]) { t = ms[i]; ms[i] = ms[j]; ms[j] = t }
      median = n == 0 ? "" : (n % 2 ? ms[(n + 1) / 2] : (ms[n / 2] + ms[n / 2 + 1]) / 2)
      print val, test, median, params, val_loss }' "$1/metrics.jsonl"
}

# Table of mean ± sample std over the seeds of each group of runs
# (folders <group>-seed<k>) in an experiment folder.
group_table() {  # experiment-folder "group:label ..."
  local dir="$1" spec group label folder
  echo "| model | seeds | parameters | val accuracy | test accuracy | val loss | step (ms) |"
  echo "|---|---|---|---|---|---|---|"
  for spec in $2; do
    group=${spec%%:*} label=${spec#*:}
    for folder in "$dir/$group"-seed*; do
      if [ -d "$folder" ] && finished "$folder"; then run_line "$folder"; fi
    done | awk -v label="${label//_/ }" '
      function ms(sum, sq, k) { return k > 1 ? sprintf("%.4f ± %.4f", sum / k, sqrt((sq - sum * sum / k) / (k - 1))) : sprintf("%.4f", sum / k) }
      { v += $1; vv += $1 * $1; t += $2; tt += $2 * $2; s += $3; ss += $3 * $3; p = $4; l += $5; ll += $5 * $5; k++
        }
      END { if (k == 0) { printf "| %s | 0 | | (no finished run) | | | |\n", label; exit }
            printf "| %s | %d | %s | %s | %s | %s | %s |\n", label, k, p, ms(v, vv, k), ms(t, tt, k), ms(l, ll, k),
                   (k > 1 ? sprintf("%.0f ± %.0f", s / k, sqrt((ss - s * s / k) / (k - 1))) : sprintf("%.0f", s)) }'
  done
  echo
  echo "Per seed (val/test):"
  for spec in $2; do
    group=${spec%%:*} label=${spec#*:}
    printf -- "- %s:" "${label//_/ }"
    for folder in "$dir/$group"-seed*; do
      if [ -d "$folder" ] && finished "$folder"; then
        printf " seed %s %s;" "${folder##*-seed}" "$(run_line "$folder" | awk '{printf "%.4f/%.4f", $1, $2}')"
      fi
    done
    echo
  done
}

# Mean validation accuracy over seeds at each evaluation step, one column a group.
curve_table() {  # experiment-folder "group:label ..."
  local dir="$1" spec group
  for spec in $2; do
    group=${spec%%:*}
    for folder in "$dir/$group"-seed*; do
      if [ -f "$folder/metrics.jsonl" ]; then
        grep '"type":"eval"' "$folder/metrics.jsonl" |
          sed 's/.*"step":\([0-9]*\).*"val_accuracy":\([-0-9.eE+]*\).*/\1 \2/' | sed "s/^/$group /"
      fi
    done
  done | awk -v specs="$2" '
    BEGIN { n = split(specs, list, " "); for (i = 1; i <= n; i++) { split(list[i], gl, ":"); group[i] = gl[1]; label[i] = gl[2]; gsub("_", " ", label[i]) } }
    { sum[$1, $2] += $3; cnt[$1, $2]++; steps[$2] = 1 }
    END {
      header = "| step |"; rule = "|---|"
      for (i = 1; i <= n; i++) { header = header " " label[i] " |"; rule = rule "---|" }
      print header; print rule
      m = 0; for (s in steps) order[++m] = s + 0
      for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (order[j] < order[i]) { t = order[i]; order[i] = order[j]; order[j] = t }
      for (r = 1; r <= m; r++) {
        line = "| " order[r] " |"
        for (i = 1; i <= n; i++) line = line ((group[i], order[r]) in cnt ? sprintf(" %.4f (%d) |", sum[group[i], order[r]] / cnt[group[i], order[r]], cnt[group[i], order[r]]) : " |")
        print line }
    }'
}

cost_table() {
  local dir="$RESULTS/cost"
  echo "| model | parameters | score cost / MHA | bound sum 4^-l | step (ms), median of rounds | step / MHA step |"
  echo "|---|---|---|---|---|---|"
  local mha_ms config levels ms params
  mha_ms=$(for f in "$dir"/mha-round*; do if [ -d "$f" ]; then run_line "$f" | awk '{print $3}'; fi; done | sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}')
  for config in mha hkt-L1 hkt-L2 hkt-L3 hkt-L4; do
    levels=${config#hkt-L}; [ "$config" = mha ] && levels=1
    ms=$(for f in "$dir/$config"-round*; do if [ -d "$f" ]; then run_line "$f" | awk '{print $3}'; fi; done | sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}')
    params=$(run_line "$dir/$config-round1" | awk '{print $4}')
    # score entries of the levels, T_l = ceil(T_{l-1} / 2), relative to T^2; and the paper's bound
    awk -v T="$LISTOPS_T" -v L="$levels" -v name="$config" -v ms="$ms" -v mha="$mha_ms" -v p="$params" 'BEGIN {
      t = T; cost = 0; bound = 0; term = 1
      for (l = 0; l < L; l++) { cost += (t * t) / (T * T); bound += term; term /= 4; t = int((t + 1) / 2) }
      printf "| %s | %s | %.4f | %.4f | %.1f | %.3f |\n", name, p, cost, bound, ms, ms / mha }'
  done
}

write_summary() {
  local out="$RESULTS/summary.md" cmd=./scripts/reproduce.sh
  [ "$paper" = 1 ] && cmd="$cmd --paper"
  {
    echo "# Summary ($(date -u +%Y-%m-%d\ %H:%M) UTC, RESULTS=$RESULTS, SEEDS=\"$SEEDS\", LR=$LR, THREADS=$THREADS, JOBS=$JOBS)"
    echo
    echo "## ListOps, T = $LISTOPS_T: HKT (L = 3, s = 2) vs MHA"
    echo
    echo "Command: \`$cmd listops\` — d = $LISTOPS_D, $LISTOPS_LAYERS layers, $LISTOPS_HEADS heads, d_ff = $LISTOPS_DFF," \
         "batch $LISTOPS_BATCH, $LISTOPS_STEPS steps, lr $LR; $LISTOPS_TRAIN/$LISTOPS_VAL/$LISTOPS_TEST expressions of" \
         "$LISTOPS_MIN_LEN–$LISTOPS_T tokens (depth ≤ $LISTOPS_MAX_DEPTH, ≤ $LISTOPS_MAX_ARGS arguments)."
    [ -f "$listops_data/val.summary.txt" ] && { echo; echo '```'; cat "$listops_data/val.summary.txt"; echo '```'; }
    echo
    group_table "$RESULTS/listops" "hkt:HKT_(L_=_3) mha:MHA"
    echo
    echo "Validation accuracy during training (mean over the seeds; number of seeds in brackets):"
    echo
    curve_table "$RESULTS/listops" "hkt:HKT_(L_=_3) mha:MHA"
    echo
    echo "## ListOps ablation: levels and parameter count"
    echo
    echo "Command: \`$cmd listops-ablation\` (same sizes and data; the matched MHA has" \
         "d_ff = $(matched_dff "$LISTOPS_D" "$LISTOPS_HEADS" "$LISTOPS_DFF" 3 3 5)); HKT L = 3 and the plain MHA are the ListOps table above."
    echo
    group_table "$RESULTS/listops-ablation" "hkt-L1:HKT_L_=_1 hkt-L2:HKT_L_=_2 mha-matched:MHA,_parameter-matched"
    echo
    curve_table "$RESULTS/listops-ablation" "hkt-L1:HKT_L_=_1 hkt-L2:HKT_L_=_2 mha-matched:MHA_matched"
    echo
    echo "## Sequential Fashion-MNIST, T = 784"
    echo
    echo "Command: \`$cmd fmnist\` — d = $FMNIST_D, $FMNIST_LAYERS layer(s), $FMNIST_HEADS heads, d_ff = $FMNIST_DFF," \
         "batch $FMNIST_BATCH, $FMNIST_STEPS steps, lr $LR; the first $FMNIST_TRAIN_LIMIT training images" \
         "($FMNIST_VAL of them held out for validation, by seed), test on the first $((FMNIST_EVAL_BATCHES * FMNIST_BATCH)) test images" \
         "(0: all)."
    echo
    group_table "$RESULTS/fmnist" "hkt:HKT_(L_=_3) mha:MHA"
    echo
    curve_table "$RESULTS/fmnist" "hkt:HKT_(L_=_3) mha:MHA"
    echo
    echo "## Cost per training step, L = 1..4"
    echo
    echo "Command: \`$cmd cost\` — ListOps sizes above, $COST_STEPS steps a configuration (median of steps 2..$COST_STEPS)," \
         "$COST_ROUNDS interleaved rounds, $THREADS thread(s)."
    echo
    if [ -d "$RESULTS/cost" ]; then cost_table; fi
    if [ -f "$RESULTS/cost/hkt-bench.txt" ]; then
      echo; echo "The attention ops alone (\`hkt-bench --max-t $LISTOPS_T --threads $THREADS --repeats 3\`):"; echo
      echo '```'; grep -v '^{' "$RESULTS/cost/hkt-bench.txt"; echo '```'
    fi
  } >"$out"
  echo "wrote $out"
}

# The inspection tools of issue 6, when this build has them.
inspect_runs() {
  local dir
  if [ -x $build/hkt-plot ]; then
    for dir in listops listops-ablation fmnist; do
      [ -d "$RESULTS/$dir" ] || continue
      local runs labels
      runs=$(ls -d "$RESULTS/$dir"/*-seed*/ | sed 's:/$::' | paste -sd, -)
      labels=$(for r in ${runs//,/ }; do basename "$r"; done | paste -sd, -)
      ./$build/hkt-plot --runs "$runs" --labels "$labels" --out "$RESULTS/$dir.png" || echo "hkt-plot failed on $dir"
    done
  else
    echo "note: $build/hkt-plot not built (issue 6); no curve PNGs drawn"
  fi
  if [ -x $build/hkt-inspect ]; then
    for dir in "$RESULTS"/listops/*-seed0; do
      [ -f "$dir/checkpoint.safetensors" ] || continue
      ./$build/hkt-inspect analysis --run "$dir" --threads "$THREADS" >"$dir/analysis.txt" 2>&1 ||
        echo "hkt-inspect analysis failed on $dir (see $dir/analysis.txt)"
    done
  else
    echo "note: $build/hkt-inspect not built (issue 6); no kurtosis / symmetric-antisymmetric analysis"
  fi
}

# ---- main ------------------------------------------------------------------
ensure_built
if [ "${experiments[0]}" = cost-worker ]; then run_cost; exit 0; fi
need_listops_data=0
for e in "${experiments[@]}"; do case $e in listops|listops-ablation|cost|all) need_listops_data=1 ;; esac; done
if [ "$need_listops_data" = 1 ] && [ "$dry_run" = 0 ]; then make_listops_data; fi


queue_cost() { queue cost "$RESULTS/cost" "./scripts/reproduce.sh --cost-worker"; }
do_summary=0
for e in "${experiments[@]}"; do
  case $e in
    listops) queue_listops "$SEEDS" ;;
    listops-ablation) queue_ablation "$SEEDS" ;;
    fmnist) queue_fmnist "$SEEDS" ;;
    cost) queue_cost ;;
    summary) do_summary=1 ;;
    all)  # priority: the main comparison, the cost, then ablation and fmnist seed by seed
      # (ListOps at this scale may not leave the majority class, while
      # Fashion-MNIST learns within 200 steps: one ablation seed first, then
      # Fashion-MNIST, then the other ablation seeds)
      queue_listops "$SEEDS"; queue_cost
      first_seed=${SEEDS%% *}
      queue_ablation "$first_seed"; queue_fmnist "$SEEDS"; queue_ablation "${SEEDS#"$first_seed"}"
      do_summary=1 ;;
  esac
done
[ ${#jobs_queued[@]} -gt 0 ] && run_queue
# the summary reads whatever runs exist: a missing one leaves a gap, never stops it
if [ "$do_summary" = 1 ] && [ "$dry_run" = 0 ]; then (set +e +o pipefail; write_summary; inspect_runs); fi
