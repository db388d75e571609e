#!/usr/bin/env bash
# Reproduces the paper's comparison (issue 17) with one protocol for both
# models, at a size where they learn: ListOps T = 512 (a learning-rate sweep
# on seed 0 for each model, then three seeds at its best rate), the level
# ablation, sequential Fashion-MNIST (T = 784), the step-time ratio
# HKT/MHA for L = 1..4, and the analysis quantities of the trained models.
#
#   scripts/reproduce.sh --dry-run | plan         every run in order: its state and command
#   scripts/reproduce.sh [--dry-run] run NAME...  the named runs; NAME is EXPERIMENT/RUN or
#                                                 EXPERIMENT (all its runs), e.g. listops-lr/hkt-lr1e-3-seed0
#   scripts/reproduce.sh [--dry-run] all          every run in plan order, JOBS at a time
#   scripts/reproduce.sh summary                  every table, from $RESULTS, into $RESULTS/summary.md
#                                                 and between the markers of docs/RESULTS.md
#
# A run trains in $RUNS/NAME (checkpoints, best.safetensors, log: never
# committed). When it finishes, its metrics.jsonl and config.json (and the
# header and end of its log, as run.txt) are copied to $RESULTS/NAME, which
# is committed: a run whose $RESULTS/NAME holds a test line is finished and is
# skipped, an interrupted one (a checkpoint in $RUNS/NAME) is resumed, so
# runs can be spread over sessions and machines. Runs that need the sweep's
# learning rate wait until the sweep is finished. --dry-run prints what would
# start without starting it.
#
# Environment: RUNS (default runs/reproduce), RESULTS (docs/results), BUILD
# (build: a Release build with hkt-train, hkt-bench, hkt-inspect,
# listops-gen; hkt-plot for the curves), JOBS (2 runs at a time), NICE (19),
# DEVICE (cpu, or cuda with JOBS=1), RESULTS_MD (docs/RESULTS.md). Each CPU
# run uses one thread.
set -euo pipefail
cd "$(dirname "$0")/.."

dry_run=0
[ "${1:-}" = --dry-run ] && { dry_run=1; shift; }
command_name=${1:-}
[ $# -gt 0 ] && shift

: "${RUNS:=runs/reproduce}" "${RESULTS:=docs/results}" "${BUILD:=build}"
: "${JOBS:=2}" "${NICE:=19}" "${DEVICE:=cpu}" "${RESULTS_MD:=docs/RESULTS.md}"
: "${POLL:=10}"  # seconds between looks at the running jobs
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive

# ---- the protocol (docs/RESULTS.md, "Protocol") ------------------------------
SEEDS="0 1 2"
SWEEP_LRS="3e-4 1e-3 3e-3"
# The SPEC model for both (HKT L = 3, s = 2, k = 3, kc = 5, pointwise downsampling).
MODEL_FLAGS="--d-model 64 --layers 2 --heads 4 --d-ff 128 --stride 2"
# The same budget for every run: 5,000 steps of batch 32 (1.7 epochs of
# ListOps), warm-up 10 %, cosine decay, the whole validation set every 250 steps.
BUDGET_FLAGS="--batch 32 --steps 5000 --eval-every 250 --eval-batches 0 --log-every 50"
LISTOPS_DATA="$RUNS/data/listops-T512"
LISTOPS_SPLITS="train:96000:101 val:2000:102 test:2000:103"  # split:count:generator seed (disjoint)
FMNIST_VAL=2000  # held out of the 60,000 training images by each run's seed; test: all 10,000

tool() { echo "$BUILD/$1"; }
model_flag() { if [ "$1" = hkt ]; then echo "--model hkt --levels ${2:-3}"; else echo "--model mha"; fi; }

# HKT L = 3 has more attention parameters than MHA (two more q/k pairs, the
# downsampling convolutions, pointwise projections and LayerNorms, the hybrid
# head's convolution, the mixing logits); the matched MHA gets them back as
# feed-forward width (2d + 1 parameters per unit). Prints that d_ff.
matched_dff() {
  awk -v d=64 -v h=4 -v ff=128 -v L=3 -v k=3 -v kc=5 'BEGIN {
    extra = (L - 1) * 2 * (d * d + d) + (L - 1) * (d * k + d + d * d + d + 2 * d) + h * L + d * kc + d + h
    printf "%d", ff + int(extra / (2 * d + 1) + 0.5) }'
}

# The best learning rate of MODEL in the ListOps sweep; while the sweep of
# that model is unfinished, nothing (or, for the plan, a placeholder).
placeholders=0
best_lr() {
  local lr
  lr=$(python3 scripts/reproduce_summary.py best-lr "$RESULTS" "$1" "$SWEEP_LRS")
  if [ -z "$lr" ] && [ "$placeholders" = 1 ]; then lr="BEST_LR_OF_$1"; fi
  echo "$lr"
}

listops_flags() { echo "--task listops --data $LISTOPS_DATA --seq-len 512 $MODEL_FLAGS $BUDGET_FLAGS"; }

# ---- the plan: every run, in the order `all` starts them -----------------------
plan_names() {
  local model lr seed
  for lr in 1e-3 3e-4 3e-3; do for model in mha hkt; do echo "listops-lr/$model-lr$lr-seed0"; done; done
  for seed in 1 2; do for model in mha hkt; do echo "listops/$model-seed$seed"; done; done
  for seed in $SEEDS; do
    for run in hkt-L1 hkt-L2 mha-matched; do echo "listops-ablation/$run-seed$seed"; done
    for model in mha hkt; do echo "fmnist/$model-seed$seed"; done
  done
  for levels in 1 2 3 4; do echo "cost/step-L$levels"; done
  for seed in $SEEDS; do for model in mha hkt; do echo "analysis/$model-seed$seed"; done; done
}

# The folder of listops MODEL seed SEED: seed 0 is the sweep's run at the best rate.
listops_run() {  # model seed -> name, or nothing while the sweep is unfinished
  local lr
  lr=$(best_lr "$1")
  [ -n "$lr" ] || return 0
  if [ "$2" = 0 ]; then echo "listops-lr/$1-lr$lr-seed0"; else echo "listops/$1-seed$2"; fi
}

# Prints the command of run NAME, or "wait: REASON" when it cannot start yet.
command_of() {
  local name=$1 experiment=${1%%/*} run=${1#*/} model seed lr levels
  seed=${run##*-seed}
  case $experiment in
    listops-lr)
      model=${run%%-*} lr=${run#*-lr}; lr=${lr%-seed*}
      echo "$(tool hkt-train) $(listops_flags) $(model_flag "$model") --lr $lr --seed 0" ;;
    listops|listops-ablation|fmnist)
      model=${run%%-*}
      case $run in mha-matched-*) lr=$(best_lr mha) ;; *) lr=$(best_lr "$model") ;; esac
      [ -n "$lr" ] || { echo "wait: the listops-lr sweep of $model is unfinished"; return; }
      case $experiment in
        listops) echo "$(tool hkt-train) $(listops_flags) $(model_flag "$model") --lr $lr --seed $seed" ;;
        listops-ablation)
          case $run in
            hkt-L*) levels=${run#hkt-L}; levels=${levels%%-*}
              echo "$(tool hkt-train) $(listops_flags) $(model_flag hkt "$levels") --lr $lr --seed $seed" ;;
            mha-matched-*)
              echo "$(tool hkt-train) $(listops_flags | sed "s/--d-ff 128/--d-ff $(matched_dff)/") --model mha --lr $lr --seed $seed" ;;
          esac ;;
        fmnist)
          echo "$(tool hkt-train) --task fmnist --val-size $FMNIST_VAL $MODEL_FLAGS $BUDGET_FLAGS $(model_flag "$model") --lr $lr --seed $seed" ;;
      esac ;;
    cost)
      levels=${run#step-L}
      echo "$(tool hkt-bench) step --model both --levels $levels --down-pointwise --threads 1 --steps 10 --warmup 2" ;;
    analysis)
      model=${run%%-*}
      local source
      source=$(listops_run "$model" "$seed")
      [ -n "$source" ] || { echo "wait: the listops-lr sweep of $model is unfinished"; return; }
      if [ "$placeholders" = 0 ]; then
        finished "$source" || { echo "wait: $source is unfinished"; return; }
        [ -f "$RUNS/$source/best.safetensors" ] || { echo "wait: no $RUNS/$source/best.safetensors on this machine"; return; }
      fi
      echo "$(tool hkt-inspect) analysis --run $RUNS/$source --checkpoint $RUNS/$source/best.safetensors --batch 8 --threads 1 --json" ;;
    *) echo "wait: unknown experiment '$experiment'" ;;
  esac
}

# A run is finished when its committed results hold everything its summary reads.
finished() {
  local results="$RESULTS/$1"
  case ${1%%/*} in
    cost|analysis) [ -s "$results/output.jsonl" ] ;;
    *) [ -f "$results/metrics.jsonl" ] && grep -q '"type":"test"' "$results/metrics.jsonl" ;;
  esac
}
pid_of() { cat "$RUNS/$1.pid" 2>/dev/null; }  # the file goes when the run ends
running() { local pid; pid=$(pid_of "$1") && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; }
busy_slots() {
  local n=0 pidfile
  while IFS= read -r pidfile; do kill -0 "$(cat "$pidfile" 2>/dev/null)" 2>/dev/null && n=$((n + 1)); done \
    < <(find "$RUNS" -name '*.pid' 2>/dev/null)
  echo "$n"
}

state_of() {  # finished | running | interrupted | ready | wait: ...
  local command
  if finished "$1"; then echo finished; return; fi
  if running "$1"; then echo "running (pid $(pid_of "$1"))"; return; fi
  command=$(command_of "$1")
  case $command in wait:*) echo "$command" ;; *)
    if [ -f "$RUNS/$1/checkpoint.safetensors" ]; then echo interrupted; else echo ready; fi ;;
  esac
}

make_listops_data() {
  local spec split count seed
  mkdir -p "$LISTOPS_DATA"
  for spec in $LISTOPS_SPLITS; do
    IFS=: read -r split count seed <<<"$spec"
    [ -f "$LISTOPS_DATA/$split.tsv" ] && continue
    "$(tool listops-gen)" --seed "$seed" --count "$count" --min-len 64 --max-len 512 --max-depth 10 --max-args 10 \
      --out "$LISTOPS_DATA/$split.tsv" >"$LISTOPS_DATA/$split.summary.txt"
  done
  mkdir -p "$RESULTS/data/listops-T512"  # the class shares, for the summary's majority-class baseline
  cp "$LISTOPS_DATA"/*.summary.txt "$RESULTS/data/listops-T512/"
}

# Copies what the summary reads into $RESULTS/NAME (never a checkpoint).
collect() {
  local name=$1 out="$RESULTS/$1" folder="$RUNS/$1"
  mkdir -p "$out"
  case ${name%%/*} in
    cost|analysis) grep '^{' "$folder.log" >"$out/output.jsonl" ;;
    *) cp "$folder/metrics.jsonl" "$folder/config.json" "$out/"
       { head -n 3 "$folder.log"; tail -n 2 "$folder.log"; } | tr '\r' '\n' | grep -v '^ *$' >"$out/run.txt" || true ;;
  esac
}

# Starts run NAME in the background (resuming it when interrupted); the
# runner subshell collects it when it succeeds.
launch() {
  local name=$1 command folder="$RUNS/$1"
  command=$(command_of "$name")
  case ${name%%/*} in
    cost|analysis) ;;
    *) if [ -f "$folder/checkpoint.safetensors" ]; then
         # --device always: a run interrupted on another machine (a GPU's) continues on this one's
         command="$(tool hkt-train) --resume $folder --threads 1 --device $DEVICE"
       else
         command="$command --threads 1 --overwrite --out $folder"  # no checkpoint yet: start again
         [ "$DEVICE" = cpu ] || command="$command --device $DEVICE"
       fi ;;
  esac
  if [ "$dry_run" = 1 ]; then echo "$command"; return; fi
  mkdir -p "$(dirname "$folder")"
  echo "$(date -u +%H:%M:%S) start $name: $command"
  (nice -n "$NICE" bash -c "$command" >"$folder.log" 2>&1 && collect "$name" &&
     echo "$(date -u +%H:%M:%S) done  $name -> $RESULTS/$name" ||
     echo "$(date -u +%H:%M:%S) FAILED $name (see $folder.log)"
   rm -f "$folder.pid") &
  launched=$!
  echo "$launched" >"$folder.pid"
}

# `nice` alone does not make the runs yield on Linux with autogroups (the
# default): the scheduler first shares the CPU between sessions, so a niced
# run in its own session still takes a whole core from an interactive one.
# Started as a session leader (setsid), the script lowers its session's
# autogroup to NICE too; otherwise it says how to.
yield_to_other_sessions() {
  [ "$NICE" -gt 0 ] && [ -w /proc/self/autogroup ] || return 0
  if [ "$(ps -o sid= -p $$ | tr -d ' ')" = "$$" ]; then
    echo "$NICE" >/proc/self/autogroup 2>/dev/null || true
  else
    echo "note: start with setsid (setsid scripts/reproduce.sh ...) so that the runs yield to other sessions" >&2
  fi
}

# Runs NAMEs JOBS at a time, in plan order: whenever a slot is free, the
# first startable run takes it, so a run that waited for the sweep goes
# before the runs after it in the plan (not after all of them). Stops when
# nothing runs and nothing left can start.
run_names() {
  local pending=("$@") left name state blocked
  [ "$dry_run" = 1 ] || { [ -x "$(tool hkt-train)" ] || { echo "reproduce.sh: no $(tool hkt-train); build it (BUILD=$BUILD)" >&2; exit 1; }; yield_to_other_sessions; make_listops_data; }
  while [ ${#pending[@]} -gt 0 ]; do
    left=() blocked=0
    for name in "${pending[@]}"; do
      if [ "$blocked" = 1 ]; then left+=("$name"); continue; fi
      state=$(state_of "$name")
      case $state in
        finished) echo "skip $name (finished)" ;;
        running*) echo "skip $name ($state)" ;;
        wait:*) left+=("$name") ;;
        *) # a timing runs alone, a training beside at most JOBS - 1 others
           if [ "$dry_run" = 0 ] &&
              [ "$(busy_slots)" -ge "$([ "${name%%/*}" = cost ] && echo 1 || echo "$JOBS")" ]; then
             left+=("$name") blocked=1  # no free slot: look again from the top
             continue
           fi
           launch "$name"
           if [ "$dry_run" = 0 ] && [ "${name%%/*}" = cost ]; then wait "$launched"; fi ;;
      esac
    done
    pending=("${left[@]+"${left[@]}"}")
    [ ${#pending[@]} -eq 0 ] && break
    if [ "$dry_run" = 1 ] || { [ "$blocked" = 0 ] && [ "$(busy_slots)" = 0 ]; }; then
      for name in "${pending[@]}"; do echo "not started: $name ($(state_of "$name"))"; done
      break
    fi
    sleep "$POLL"
  done
  [ "$dry_run" = 1 ] || wait
}

expand_names() {  # NAME... -> run names (an experiment stands for all its runs)
  local arg found
  for arg in "$@"; do
    found=$(plan_names | awk -v a="$arg" '$0 == a || index($0, a "/") == 1')
    [ -n "$found" ] || { echo "reproduce.sh: no run or experiment '$arg' (see: reproduce.sh plan)" >&2; exit 2; }
    echo "$found"
  done
}

case $command_name in
  plan|"")  # every run: its state, and the command it starts with (placeholders for what the sweep decides)
    [ -n "$command_name" ] || [ "$dry_run" = 1 ] || { echo "reproduce.sh: name a command (see --help)" >&2; exit 2; }
    while IFS= read -r name; do
      printf '%-36s %s\n' "$name" "$(state_of "$name")"
      printf '    %s\n' "$(dry_run=1 placeholders=1 launch "$name")"
    done < <(plan_names) ;;
  run)
    [ $# -gt 0 ] || { echo "reproduce.sh: run needs NAME... (see: reproduce.sh plan)" >&2; exit 2; }
    listed=$(expand_names "$@")  # exits 2 on an unknown name
    mapfile -t names <<<"$listed"
    run_names "${names[@]}" ;;
  all)
    mapfile -t names < <(plan_names)
    run_names "${names[@]}" ;;
  summary)
    python3 scripts/reproduce_summary.py summary "$RESULTS" "$SWEEP_LRS" "$(matched_dff)" "$RESULTS_MD"
    if [ -x "$(tool hkt-plot)" ]; then  # the learning curves, beside the tables
      python3 scripts/reproduce_summary.py figures "$RESULTS" "$SWEEP_LRS" |
        while IFS=$'\t' read -r png runs labels; do
          "$(tool hkt-plot)" --runs "$runs" --labels "$labels" --out "$png" >/dev/null && echo "wrote $png"
        done
    else
      echo "note: no $(tool hkt-plot): curves not drawn"
    fi ;;
  -h|--help) awk 'NR > 1 && !/^#/ {exit} NR > 1' "$0" | sed 's/^# \{0,1\}//' ;;
  *) echo "reproduce.sh: unknown command '$command_name' (plan, run, all, summary; see --help)" >&2; exit 2 ;;
esac
