# usage: cycrun.sh BUILD_DIR [threads] -> prints the pair's section cycles (TSC M over the run)
rm -f /tmp/exp/cyc-[0-9]*.txt
"$1/hkt-bench" step --model both --down-pointwise --threads ${2:-1} --steps 10 --warmup 1 | grep -o '"mha_median_ms.*'
f=$(ls -t /tmp/exp/cyc-[0-9]*.txt | while read f; do if awk '{a+=$2;b+=$3} END{exit !(a>0&&b>0)}' $f; then echo $f; fi; done | head -1)
cat $f
