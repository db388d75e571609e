#!/usr/bin/env bash
# The same as step-ratio.sh on 1 thread, 10 steps a round.
out=$1; rounds=${2:-5}
echo "uptime before: $(uptime)" > $out
for r in $(seq $rounds); do
  for dir in /work/wt-base /work/main; do
    line=$($dir/build-nocuda/hkt-bench step --model both --down-pointwise --threads 1 --steps 10 | grep step_pair)
    echo "$r $(basename $dir) $line" >> $out
  done
done
echo "uptime after: $(uptime)" >> $out
