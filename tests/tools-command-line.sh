#!/usr/bin/env bash
# Every tool answers --help (descriptions and defaults) and --version (the
# project's version) with exit 0, and a bad flag with exit 2 and one line
# naming the program once and the flag; values out of range are usage errors
# naming the flag and the range; a missing file is exit 1 (docs/TOOLS.md).
#   tests/tools-command-line.sh BUILD_DIR VERSION
set -uo pipefail
build="$1" version="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect CODE PATTERN COMMAND...: the exit code, and stdout+stderr matching the extended regex.
expect() {
  local code="$1" pattern="$2"
  shift 2
  local output status
  output="$("$@" 2>&1)"
  status=$?
  [ "$status" -eq "$code" ] || fail "$* exited $status, expected $code: $output"
  printf '%s' "$output" | grep -Eq -- "$pattern" || fail "$*: output does not match '$pattern': $output"
}

for tool in hkt-train hkt-inspect hkt-plot listops-gen hkt-bench hkt-demo api-example; do
  expect 0 "usage: $tool" "$build/$tool" --help
  expect 0 "^$tool $version\$" "$build/$tool" --version
  expect 2 "^$tool: unknown (flag --no-such-flag|subcommand '--no-such-flag') \(see $tool --help\)\$" \
    "$build/$tool" --no-such-flag
done
expect 0 "--seed N +seed of the initialisation \(default 0\)" "$build/api-example" --help
expect 0 "--lr X +peak learning rate.*\(default 0.001\)" "$build/hkt-train" --help
for sub in grads gradcheck dump heatmap analysis predict; do
  expect 0 "usage: hkt-inspect $sub" "$build/hkt-inspect" "$sub" --help
  expect 2 "^hkt-inspect $sub: unknown flag --bogus \(see hkt-inspect $sub --help\)\$" "$build/hkt-inspect" "$sub" --bogus 1
done
expect 0 "usage: hkt-bench step" "$build/hkt-bench" step --help
# A tiny step of both models: per-model lines, then the interleaved pair's ratio.
expect 0 '"bench":"step_pair".*"ratio":[0-9]' "$build/hkt-bench" step --model both --batch 2 --seq-len 16 \
  --d-model 16 --heads 2 --d-ff 32 --steps 2 --warmup 1 --threads 1 --down-pointwise
# --lengths: the JSON line says which batch ran; a value outside the choice is a usage error.
expect 0 '"bench":"step".*"lengths":"full"' "$build/hkt-bench" step --model mha --batch 3 --seq-len 16 --d-model 16 \
  --heads 2 --d-ff 32 --steps 1 --warmup 0 --threads 1 --lengths full
expect 2 "^hkt-bench step: --lengths must be one of spread \| full, got 'half'" "$build/hkt-bench" step --lengths half
expect 0 "usage: hkt-bench gemm" "$build/hkt-bench" gemm --help
# The step's nine GEMMs (three layers, three passes), small: each a JSON line with both columns.
gemm_lines="$("$build/hkt-bench" gemm --rows 96 --repeats 1 --memory-mib 1 --threads 1 2>&1 |
  grep -Ec '"bench":"gemm","pass":"(forward|grad_input|grad_weight)".*"in_cache_gflops":[0-9.]+,"from_memory_gflops":[0-9.]+')"
[ "$gemm_lines" = 9 ] || fail "hkt-bench gemm: $gemm_lines JSON lines with both columns, expected 9"
expect 2 "^hkt-bench gemm: --rows must be a whole number in 1\.\." "$build/hkt-bench" gemm --rows 0

# Ranges: the issue's examples, each a usage error naming the flag and what it takes.
expect 2 "^hkt-train: --lr must be a finite number >= 0, got '-1'" "$build/hkt-train" --lr -1
expect 2 "^hkt-train: --epochs must be a whole number in 1\.\.1000000, got '4611686018427387905'" \
  "$build/hkt-train" --epochs 4611686018427387905
expect 2 "^hkt-train: --threads must be a whole number in 0\.\.4096, got '4294967297'" "$build/hkt-train" --threads 4294967297
expect 2 "^hkt-inspect gradcheck: --atol must be a finite number >= 0, got '-1'" \
  "$build/hkt-inspect" gradcheck --run x --atol -1
expect 2 "^hkt-inspect analysis: --seq-len must be a whole number in 0\.\.16777216, got '4294967296'" \
  "$build/hkt-inspect" analysis --run x --seq-len 4294967296
expect 2 "^listops-gen: --count must be a whole number in 1\.\." "$build/listops-gen" --seed 1 --count -3 --min-len 5 \
  --max-len 9 --out "$work/x.tsv"
expect 2 "^hkt-demo: --steps must be a whole number in 1\.\.1000000, got 'many'" "$build/hkt-demo" many
expect 2 "^hkt-bench: --repeats must be a whole number in 1\.\.1000, got '0'" "$build/hkt-bench" --repeats 0

# Missing files: exit 1, one line, the program once, the user's path once.
expect 1 "^hkt-inspect dump: nonexistent/config.json: no such file" \
  "$build/hkt-inspect" dump --run nonexistent --out "$work/d.safetensors"
expect 1 "^hkt-train: nonexistent/train.tsv: no such file\$" "$build/hkt-train" --data nonexistent
expect 1 "^hkt-train: runs/nonexistent/config.json: no such file" "$build/hkt-train" --resume runs/nonexistent
expect 1 "^hkt-plot: nonexistent/metrics.jsonl: no such file\$" "$build/hkt-plot" --runs nonexistent

# --out creates missing folders.
expect 0 "20 examples" "$build/listops-gen" --seed 1 --count 20 --min-len 5 --max-len 20 --out "$work/new/dir/x.tsv"
[ -f "$work/new/dir/x.tsv" ] || fail "listops-gen did not create $work/new/dir/"

if [ "$failures" -gt 0 ]; then
  echo "$failures failed"
  exit 1
fi
echo "every tool: --help, --version, bad flags, ranges, missing files"
