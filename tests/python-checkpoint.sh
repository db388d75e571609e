#!/usr/bin/env bash
# A checkpoint written by Python's safetensors with docs/save_checkpoint.py
# (SPEC section 6: the parameters and the config, nothing else) loads in
# hkt-inspect and hkt-train --resume, and gives the same logits as the
# checkpoint hkt-train wrote (float16: within half precision).
#   tests/python-checkpoint.sh BUILD_DIR        (exit 77: skipped)
set -euo pipefail
build="$1"
source_dir="$(cd "$(dirname "$0")/.." && pwd)"
source "$source_dir/tests/python_test_util.sh"
require_python safetensors numpy
make_work
tiny_listops "$build/listops-gen" "$work/data" 48 train val
"$build/hkt-train" --data "$work/data" --seq-len 24 --d-model 16 --layers 1 --heads 2 --d-ff 16 --batch 8 \
  --steps 4 --threads 1 --out "$work/run" >/dev/null

# Python: the run's parameters (optimizer state left out) through the recipe, in float32 and float16.
"$python" - "$work" "$source_dir/docs" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[2])
from safetensors import safe_open
from safetensors.numpy import load_file
from save_checkpoint import save_hkt_checkpoint
work = sys.argv[1]
weights = {k: v for k, v in load_file(f"{work}/run/checkpoint.safetensors").items() if not k.startswith("optim.")}
with safe_open(f"{work}/run/checkpoint.safetensors", "np") as f:
    config = json.loads(f.metadata()["config"])
save_hkt_checkpoint(weights, config, f"{work}/python.safetensors")
save_hkt_checkpoint({k: v.astype("float16") for k, v in weights.items()}, config, f"{work}/python16.safetensors")
PY

predict() { "$build/hkt-inspect" predict --checkpoint "$1" --tsv "$work/data/val.tsv" --threads 1 --json; }
predict "$work/run/checkpoint.safetensors" >"$work/cpp.json"
predict "$work/python.safetensors" >"$work/python.json"
predict "$work/python16.safetensors" >"$work/python16.json"
"$python" - "$work" <<'PY'
import json, sys
work = sys.argv[1]
rows = lambda name: json.load(open(f"{work}/{name}.json"))["predictions"]
cpp, f32, f16 = rows("cpp"), rows("python"), rows("python16")
assert len(cpp) == 48 and len(f32) == 48, (len(cpp), len(f32))
assert [r["logits"] for r in f32] == [r["logits"] for r in cpp], "float32 logits differ"
worst = max(abs(a - b) for r, s in zip(cpp, f16) for a, b in zip(r["logits"], s["logits"]))
assert worst < 0.05, f"float16 logits differ by {worst}"
print(f"same logits for 48 examples (float32: identical, float16: within {worst:.2e})")
PY

# The read-only tool needs the weights alone; --resume starts a fresh optimizer and says so.
cp "$work/python.safetensors" "$work/run/checkpoint.safetensors"
"$build/hkt-inspect" grads --run "$work/run" --threads 1 >/dev/null
"$build/hkt-train" --resume "$work/run" --threads 1 >"$work/resume.txt"
grep -q "no checksum: not written by hkt-train" "$work/resume.txt"
grep -q "holds no optimizer state: AdamW starts fresh at step 0" "$work/resume.txt"
echo "python checkpoint: hkt-inspect predict, grads and hkt-train --resume load it"
