#!/usr/bin/env bash
# Installs the Debian packages the build needs. Idempotent; uses sudo when not root.
set -euo pipefail
packages=(cmake g++ make libopenblas-openmp-dev catch2 zlib1g-dev dataset-fashion-mnist libstb-dev)
# hkt-plot and hkt-inspect heatmap draw with cairo, text in DejaVu Sans.
packages+=(pkg-config libcairo2-dev fonts-dejavu-core)
# scripts/fuzz.sh: clang with libFuzzer's runtime and clang's OpenMP (Debian 12 ships clang 14).
packages+=(clang libclang-rt-14-dev libomp-14-dev)
packages+=(libopenmpi-dev openmpi-bin)  # MPI: data-parallel hkt-train and its tests
packages+=(python3)  # scripts/reproduce_summary.py (the experiment tables) and its smoke test
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
