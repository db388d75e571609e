#!/usr/bin/env bash
# Alternating rounds: the session's start (/work/wt-base, 25b55ed) and its end (/work/main), the interleaved
# pair of steps (hkt-bench step --model both), one line per build and round.
#   step-ratio.sh OUT [rounds] [threads] [steps]     (defaults: 12 rounds, 2 threads, 30 steps)
out=$1; rounds=${2:-12}; threads=${3:-2}; steps=${4:-30}
echo "uptime before: $(uptime)" > $out
for r in $(seq $rounds); do
  for dir in /work/wt-base /work/main; do
    line=$($dir/build-nocuda/hkt-bench step --model both --down-pointwise --threads $threads --steps $steps | grep step_pair)
    echo "$r $(basename $dir) $line" >> $out
  done
done
echo "uptime after: $(uptime)" >> $out
