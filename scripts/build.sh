#!/usr/bin/env bash
# Configures and builds perfsim into build/ (or $PERFSIM_BUILD_DIR), after installing
# missing dependencies. Extra arguments are passed to cmake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
build_dir="${PERFSIM_BUILD_DIR:-build}"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${PERFSIM_BUILD_TYPE:-RelWithDebInfo}" "$@" >/dev/null
ninja -C "$build_dir" -j"$(nproc)"
