#!/usr/bin/env bash
# tools/metrics_to_tensorboard.py turns a real run's metrics.jsonl into event
# files whose scalars are the metrics' values at their steps (read back
# record by record). Skipped (exit 77) without tensorboardX.
#   tests/metrics-to-tensorboard.sh BUILD_DIR
set -euo pipefail
build="$1"
source_dir="$(cd "$(dirname "$0")/.." && pwd)"
source "$source_dir/tests/python_test_util.sh"
require_python tensorboardX
make_work
tiny_listops "$build/listops-gen" "$work/data" 32 train val test
"$build/hkt-train" --data "$work/data" --seq-len 24 --d-model 16 --layers 1 --heads 2 --d-ff 16 --batch 8 \
  --steps 6 --log-every 2 --eval-every 3 --threads 1 --out "$work/run" >/dev/null
"$python" "$source_dir/tools/metrics_to_tensorboard.py" "$work/run" --logdir "$work/tb"
set +e
"$python" "$source_dir/tools/metrics_to_tensorboard.py" "$work/absent" --logdir "$work/tb" 2>"$work/err.txt"
[ $? -eq 1 ] && grep -q "absent/metrics.jsonl: no such file" "$work/err.txt" || { echo "missing run not reported"; exit 1; }
set -e
"$python" - "$work" <<'PY'
import glob, json, struct, sys
from tensorboardX.proto.event_pb2 import Event
work = sys.argv[1]
found = {}
for path in glob.glob(f"{work}/tb/run/events.out.tfevents.*"):
    data = open(path, "rb").read()
    offset = 0
    while offset < len(data):  # TFRecord: length, its CRC, the record, its CRC
        (length,) = struct.unpack_from("<Q", data, offset)
        event = Event.FromString(data[offset + 12:offset + 12 + length])
        offset += 12 + length + 4
        for value in event.summary.value:
            found[(value.tag, event.step)] = value.simple_value
expected = {}
for line in open(f"{work}/run/metrics.jsonl"):
    r = json.loads(line)
    names = {"train": {"loss": "train/loss", "epoch": "train/epoch"}, "eval": {"val_accuracy": "val/accuracy"},
             "test": {"test_loss": "test/loss"}}[r["type"]]
    for field, tag in names.items():
        expected[(tag, r["step"])] = r[field]
assert expected, "no metrics"
for key, value in expected.items():
    assert key in found, f"{key} missing from the event files"
    assert abs(found[key] - value) <= 1e-6 * max(1, abs(value)), (key, found[key], value)
print(f"{len(expected)} metrics found in the event files at their steps ({len(found)} scalars in all)")
PY
