# Sourced by the tests that run Python beside the tools (python-checkpoint.sh,
# metrics-to-tensorboard.sh): $python, a skip (exit 77, which CTest reports as
# skipped) when a module is missing, a scratch folder $work removed on exit,
# and tiny ListOps splits.
python="${PYTHON:-python3}"

# require_python MODULE...: exit 77, naming them, unless every module imports.
require_python() {
  local module
  for module in "$@"; do
    if ! "$python" -c "import $module" 2>/dev/null; then
      echo "skipped: Python's $* not installed ($python; scripts/install-deps.sh test installs them)"
      exit 77
    fi
  done
}

# make_work: the scratch folder $work, removed on exit.
make_work() {
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  export OMP_WAIT_POLICY=passive
}

# tiny_listops LISTOPS_GEN FOLDER COUNT SPLIT...: one small TSV per split.
tiny_listops() {
  local gen="$1" folder="$2" count="$3" split
  shift 3
  for split in "$@"; do
    "$gen" --seed "${#split}" --count "$count" --min-len 5 --max-len 24 --max-depth 3 --out "$folder/$split.tsv" >/dev/null
  done
}
