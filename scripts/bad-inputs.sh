#!/usr/bin/env bash
# Feeds hkt-train one bad input at a time and prints a Markdown table row per
# case: the input, the exit status and the first error line (the table of
# docs/RELIABILITY.md). Needs a release build in build/ (or BUILD=folder).
set -uo pipefail
cd "$(dirname "$0")/.."
build="${BUILD:-build}"
train="$build/hkt-train" gen="$build/listops-gen"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export OMP_WAIT_POLICY=passive

row() {  # row DESCRIPTION COMMAND...
  local description="$1"
  shift
  local output status
  output="$("$@" 2>&1 >/dev/null)"
  status=$?
  output="$(printf '%s\n' "$output" | grep -v '^$' | head -n 1 | sed "s|$work|W|g; s/|/\\\\|/g")"
  printf '| %s | %s | `%s` |\n' "$description" "$status" "$output"
}

listops() {  # listops FOLDER: a valid tiny ListOps folder
  mkdir -p "$1"
  "$gen" --seed 1 --count 32 --min-len 5 --max-len 20 --out "$1/train.tsv" >/dev/null
  "$gen" --seed 2 --count 8 --min-len 5 --max-len 20 --out "$1/val.tsv" >/dev/null
}
base=(--seq-len 24 --d-model 16 --layers 1 --heads 2 --d-ff 16 --batch 8 --threads 1 --log-every 1)
tiny=("${base[@]}" --steps 2)

echo "| bad input | exit | message |"
echo "|---|---|---|"
# Command line
row "unknown flag \`--bogus 3\`" "$train" --bogus 3
row "\`--batch many\`" "$train" --batch many
row "\`--batch\` without a value" "$train" --batch
row "\`--lr nan\`" "$train" --lr nan
row "\`--steps 99999999999999999999\`" "$train" --steps 99999999999999999999
row "\`--causal=maybe\`" "$train" --causal=maybe
row "\`--seed -1\`" "$train" --seed -1
row "a stray argument \`foo\`" "$train" foo

# ListOps TSV
listops "$work/ok"
for case in header label token long empty crlf-tab parens extra; do
  mkdir -p "$work/$case" && cp "$work/ok/val.tsv" "$work/$case/"
done
printf '( [MAX 2 9 ] )\t9\n' >"$work/header/train.tsv"
printf 'Source\tTarget\n( [MAX 2 9 ] )\tx\n' >"$work/label/train.tsv"
printf 'Source\tTarget\n( [MAX 2 banana ] )\t9\n' >"$work/token/train.tsv"
{ printf 'Source\tTarget\n( [SM'; for i in $(seq 40); do printf ' 1'; done; printf ' ] )\t0\n'; } >"$work/long/train.tsv"
: >"$work/empty/train.tsv"
printf 'Source\tTarget\n( [MAX 2 9 ] )\t9\t9\n' >"$work/crlf-tab/train.tsv"
printf 'Source\tTarget\n( [MAX 2 ( ) 9 ] )\t9\n' >"$work/parens/train.tsv"
printf 'Source\tTarget\n1 2\t1\n' >"$work/extra/train.tsv"
row "ListOps: no header line" "$train" --data "$work/header" "${tiny[@]}" --out "$work/r"
row "ListOps: label \`x\`" "$train" --data "$work/label" "${tiny[@]}" --out "$work/r"
row "ListOps: unknown token" "$train" --data "$work/token" "${tiny[@]}" --out "$work/r"
row "ListOps: expression longer than --seq-len" "$train" --data "$work/long" "${tiny[@]}" --out "$work/r"
row "ListOps: empty file" "$train" --data "$work/empty" "${tiny[@]}" --out "$work/r"
row "ListOps: two tabs in a line" "$train" --data "$work/crlf-tab" "${tiny[@]}" --out "$work/r"
row "ListOps: empty parentheses" "$train" --data "$work/parens" "${tiny[@]}" --out "$work/r"
row "ListOps: two expressions in a line" "$train" --data "$work/extra" "${tiny[@]}" --out "$work/r"

# Checkpoints and --resume
"$train" --data "$work/ok" "${tiny[@]}" --out "$work/run" >/dev/null
ck="$work/run/checkpoint.safetensors"
cp "$ck" "$work/good.safetensors"
size=$(stat -c %s "$ck")
flip() {  # flip OFFSET: xor one byte of a fresh copy of the checkpoint
  cp "$work/good.safetensors" "$ck"
  python3 -c "import sys; p=sys.argv[1]; o=int(sys.argv[2]); b=bytearray(open(p,'rb').read()); b[o]^=1; open(p,'wb').write(b)" "$ck" "$1"
}
flip 0;  row "checkpoint: a bit flipped in the length prefix" "$train" --resume "$work/run"
flip 40; row "checkpoint: a bit flipped in the checksum's own key" "$train" --resume "$work/run"
flip 300; row "checkpoint: a bit flipped in the JSON header (a tensor entry)" "$train" --resume "$work/run"
flip $((size - 3)); row "checkpoint: a bit flipped in the tensor data" "$train" --resume "$work/run"
cp "$work/good.safetensors" "$ck"; truncate -s $((size - 5)) "$ck"
row "checkpoint: last 5 bytes cut off" "$train" --resume "$work/run"
: >"$ck"; row "checkpoint: empty file" "$train" --resume "$work/run"
printf '\377\377\377\377\377\377\377\177{}' >"$ck"; row "checkpoint: header length 2^63" "$train" --resume "$work/run"
rm "$ck"; row "checkpoint: missing" "$train" --resume "$work/run"
cp "$work/good.safetensors" "$ck"
cp "$work/run/config.json" "$work/config.good"
printf '{"task": ' >"$work/run/config.json"; row "config.json: cut short" "$train" --resume "$work/run"
sed 's/"seed":[0-9]*/"seed":"abc"/' "$work/config.good" >"$work/run/config.json"
row "config.json: seed \`\"abc\"\`" "$train" --resume "$work/run"
sed 's/"d_model":16/"d_model":32/' "$work/config.good" >"$work/run/config.json"
row "config.json: model differs from the checkpoint" "$train" --resume "$work/run"
sed 's/"log_every":1/"log_every":0/' "$work/config.good" >"$work/run/config.json"
row "config.json: \`log_every\` 0" "$train" --resume "$work/run"
sed 's/"n_layers":1/"n_layers":1000000000/' "$work/config.good" >"$work/run/config.json"
row "config.json: \`n_layers\` 10^9" "$train" --resume "$work/run"
cp "$work/config.good" "$work/run/config.json"
rm "$ck"; mkfifo "$ck"; row "checkpoint: a FIFO" "$train" --resume "$work/run"
rm "$ck"; cp "$work/good.safetensors" "$ck"
row "a fresh run into a folder holding a run" "$train" --data "$work/ok" "${tiny[@]}" --out "$work/run"
mkdir -p "$work/full"; ln -s /dev/full "$work/full/metrics.jsonl"
row "metrics.jsonl on a full disk (a link to /dev/full)" "$train" --data "$work/ok" "${tiny[@]}" --overwrite --out "$work/full"
row "\`--levels 1000000000\`" "$train" --data "$work/ok" "${tiny[@]}" --levels 1000000000 --out "$work/r"

# Fashion-MNIST IDX (--task fmnist --data folder)
idx() {  # idx FOLDER: valid 2-image files, then the caller damages one
  mkdir -p "$1"
  python3 - "$1" <<'PY'
import struct, sys
d = sys.argv[1]
for prefix in ("train", "t10k"):
    open(f"{d}/{prefix}-images-idx3-ubyte", "wb").write(struct.pack(">IIII", 0x803, 2, 28, 28) + bytes(2 * 784))
    open(f"{d}/{prefix}-labels-idx1-ubyte", "wb").write(struct.pack(">II", 0x801, 2) + bytes([3, 4]))
PY
}
idx "$work/m1"; printf '\0\0\x0d\x03' | dd of="$work/m1/train-images-idx3-ubyte" conv=notrunc 2>/dev/null
row "IDX: magic of another element type (0x0d, float)" "$train" --task fmnist --data "$work/m1" "${tiny[@]}" --out "$work/r"
idx "$work/m2"; python3 -c "import struct,sys; open(sys.argv[1],'wb').write(struct.pack('>IIII',0x803,1000000,1000,1000)+bytes(16))" "$work/m2/train-images-idx3-ubyte"
row "IDX: header claiming 10^12 pixels in a 32-byte file" "$train" --task fmnist --data "$work/m2" "${tiny[@]}" --out "$work/r"
idx "$work/m3"; gzip -9 "$work/m3/train-images-idx3-ubyte"; truncate -s 30 "$work/m3/train-images-idx3-ubyte.gz"
row "IDX: gzip file cut short" "$train" --task fmnist --data "$work/m3" "${tiny[@]}" --out "$work/r"
idx "$work/m4"; printf '\x0b' | dd of="$work/m4/train-labels-idx1-ubyte" bs=1 seek=9 conv=notrunc 2>/dev/null
row "IDX: label 11" "$train" --task fmnist --data "$work/m4" "${tiny[@]}" --out "$work/r"
idx "$work/m5"; { printf '\0\0\10\1\0\0\0\2\1\2'; head -c 100000000 /dev/zero; } | gzip -9 >"$work/m5/train-labels-idx1-ubyte.gz"
rm "$work/m5/train-labels-idx1-ubyte"
row "IDX: 100 KB gzip: a header promising 2 labels, then 10^8 zero bytes (a small bomb)" "$train" --task fmnist --data "$work/m5" "${tiny[@]}" --out "$work/r"
idx "$work/m6"; python3 -c "import struct,sys,gzip; open(sys.argv[1],'wb').write(gzip.compress(struct.pack('>IIII',0x803,1403000,28,28)+bytes(4096)))" "$work/m6/train-images-idx3-ubyte.gz"
rm "$work/m6/train-images-idx3-ubyte"
row "IDX: 4 KB gzip whose header promises 1.1e9 pixels" "$train" --task fmnist --data "$work/m6" "${tiny[@]}" --out "$work/r"

# CIFAR-10 binary
cifar() {
  mkdir -p "$1"
  for name in data_batch_1 data_batch_2 data_batch_3 data_batch_4 data_batch_5 test_batch; do
    head -c $((3073 * 2)) /dev/zero >"$1/$name.bin"
  done
}
cifar "$work/c1"; head -c 100 /dev/zero >>"$work/c1/data_batch_3.bin"
row "CIFAR: a partial record" "$train" --task cifar10 --data "$work/c1" "${tiny[@]}" --out "$work/r"
cifar "$work/c2"; printf '\x0a' | dd of="$work/c2/data_batch_1.bin" bs=1 seek=3073 conv=notrunc 2>/dev/null
row "CIFAR: label 10" "$train" --task cifar10 --data "$work/c2" "${tiny[@]}" --out "$work/r"
cifar "$work/c3"; rm "$work/c3/data_batch_5.bin"
row "CIFAR: a batch file missing" "$train" --task cifar10 --data "$work/c3" "${tiny[@]}" --out "$work/r"

# IMDB (aclImdb folders)
imdb() {
  for split in train test; do for label in pos neg; do
    mkdir -p "$1/$split/$label"; for i in 1 2 3; do echo "review $i of $label" >"$1/$split/$label/${i}_7.txt"; done
  done; done
}
imdb "$work/i1"; : >"$work/i1/train/pos/2_7.txt"
row "IMDB: an empty review" "$train" --task imdb --data "$work/i1" "${tiny[@]}" --out "$work/r"
imdb "$work/i2"; rm -r "$work/i2/train/neg"
row "IMDB: no train/neg folder" "$train" --task imdb --data "$work/i2" "${tiny[@]}" --out "$work/r"
imdb "$work/i3"; rm "$work/i3"/test/pos/*.txt
row "IMDB: a class folder without .txt files" "$train" --task imdb --data "$work/i3" "${tiny[@]}" --out "$work/r"

# Numerics
row "training that diverges (\`--lr 1e30 --clip 0\`)" "$train" --data "$work/ok" "${base[@]}" --steps 20 --lr 1e30 --warmup 0 --clip 0 --out "$work/r"
row "the same with \`--eval-every 1\`" "$train" --data "$work/ok" "${base[@]}" --steps 20 --lr 1e30 --warmup 0 --clip 0 --eval-every 1 --out "$work/r2"
row "the same with \`--detect-anomaly\`" "$train" --data "$work/ok" "${base[@]}" --steps 20 --lr 1e30 --warmup 0 --clip 0 --detect-anomaly --out "$work/r3"
