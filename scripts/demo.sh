#!/usr/bin/env bash
# Builds (if needed) and runs the demo: fits a tiny model and prints its loss falling.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x build/hkt-demo ]; then
  ./scripts/install-deps.sh run
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DHKT_TESTS=OFF >/dev/null
  cmake --build build -j "$(nproc)" --target hkt-demo
fi
exec ./build/hkt-demo "$@"
