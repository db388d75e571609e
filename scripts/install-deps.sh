#!/usr/bin/env bash
# Installs what one purpose needs, and nothing else (README "What each script installs"):
#   scripts/install-deps.sh [run|test|fuzz|mpi|all]...     (default: all)
#     run   build the library and the tools, and run them (scripts/listops.sh, scripts/demo.sh)
#     test  run + Catch2, the Fashion-MNIST files, and Python's safetensors, numpy and tensorboardX
#           for the Python-checkpoint and TensorBoard tests (they skip without them)
#     fuzz  run + clang with libFuzzer's runtime and OpenMP (scripts/fuzz.sh)
#     mpi   OpenMPI: data-parallel hkt-train and its tests
#     all   every one of them (scripts/test.sh, CI)
# Idempotent; uses sudo when not root.
set -euo pipefail
# Building and running: compiler, CMake, BLAS, zlib (gzip, CRC-32), stb (PNG).
run=(cmake g++ make libopenblas-openmp-dev zlib1g-dev libstb-dev)
# hkt-plot and hkt-inspect heatmap draw with cairo, text in DejaVu Sans;
# scripts/reproduce.sh summary builds the experiment tables in Python.
run+=(pkg-config libcairo2-dev fonts-dejavu-core python3)
test=(catch2 dataset-fashion-mnist)
fuzz=(clang libclang-rt-14-dev libomp-14-dev)  # Debian 12 ships clang 14
mpi=(libopenmpi-dev openmpi-bin)
python_test=(safetensors numpy tensorboardX)  # not packaged by Debian 12: from PyPI with pip

purposes=("$@")
[ ${#purposes[@]} -gt 0 ] || purposes=(all)
packages=() python=()
for purpose in "${purposes[@]}"; do
  case "$purpose" in
    run) packages+=("${run[@]}") ;;
    test) packages+=("${run[@]}" "${test[@]}") python+=("${python_test[@]}") ;;
    fuzz) packages+=("${run[@]}" "${fuzz[@]}") ;;
    mpi) packages+=("${mpi[@]}") ;;
    all) packages+=("${run[@]}" "${test[@]}" "${fuzz[@]}" "${mpi[@]}") python+=("${python_test[@]}") ;;
    -h | --help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install-deps.sh: unknown purpose '$purpose' (run, test, fuzz, mpi or all)" >&2; exit 2 ;;
  esac
done

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
if [ ${#python[@]} -gt 0 ]; then
  # Into the python3 on PATH, which the tests run; a Python without pip, or one
  # that refuses pip installs (PEP 668), leaves those tests skipped, with a message.
  python3 -m pip install --quiet --disable-pip-version-check "${python[@]}" ||
    echo "install-deps.sh: could not pip-install ${python[*]}; the Python-checkpoint and TensorBoard tests will skip" >&2
fi
