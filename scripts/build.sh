#!/usr/bin/env bash
# Configures and builds perfsim into build/ (or $PERFSIM_BUILD_DIR), after installing
# missing dependencies. Extra arguments are passed to cmake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
build_dir="${PERFSIM_BUILD_DIR:-build}"
launcher=()
# ccache, when installed, lets several build directories share compiled objects.
if command -v ccache >/dev/null 2>&1; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B "$build_dir" -G Ninja "${launcher[@]}" -DCMAKE_BUILD_TYPE="${PERFSIM_BUILD_TYPE:-RelWithDebInfo}" "$@" >/dev/null
ninja -C "$build_dir" -j"$(nproc)"
