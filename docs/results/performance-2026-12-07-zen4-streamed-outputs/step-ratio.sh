#!/usr/bin/env bash
# Alternating rounds: the session's start (25b55ed) and its end, interleaved pair of steps on 2 threads.
out=$1; rounds=${2:-12}
echo "uptime before: $(uptime)" > $out
for r in $(seq $rounds); do
  for dir in /work/wt-base /work/main; do
    line=$($dir/build-nocuda/hkt-bench step --model both --down-pointwise --threads 2 --steps 30 | grep step_pair)
    echo "$r $(basename $dir) $line" >> $out
  done
done
echo "uptime after: $(uptime)" >> $out
