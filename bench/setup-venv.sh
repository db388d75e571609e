#!/usr/bin/env bash
# Creates the Python virtual environment that bench/pytorch_step.py,
# bench/jax_step.py and bench/compare.sh run in: current PyTorch (CPU wheels)
# and JAX (CPU) with optax, all from PyPI through pip's ordinary index. Not
# run by CI; run it by hand once (it takes network time, little CPU).
#
#   bench/setup-venv.sh [VENV]      (default: $BENCH_VENV, else bench/.venv)
#
# PYTHON picks the interpreter that creates the environment (default
# python3; 3.10 or newer for current JAX). Idempotent: an existing
# environment is reused, and pip only installs what is missing or older
# than the newest release (--upgrade --upgrade-strategy only-if-needed).
# bench/.venv is git-ignored.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${1:-${BENCH_VENV:-bench/.venv}}"
python="${PYTHON:-python3}"
if [ ! -x "$venv/bin/python" ]; then
  echo "creating $venv with $($python --version 2>&1)"
  "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
# torch on PyPI: the Linux x86-64 wheel there is the CUDA build (it runs on CPU
# and never touches a GPU unless asked). jax[cpu] pulls jaxlib.
"$venv/bin/python" -m pip install --upgrade --upgrade-strategy only-if-needed torch "jax[cpu]" optax
"$venv/bin/python" - <<'PY'
import sys, torch, jax, jaxlib, optax
print(f"python {sys.version.split()[0]}, torch {torch.__version__}, jax {jax.__version__}, "
      f"jaxlib {jaxlib.__version__}, optax {optax.__version__}")
PY
