#!/usr/bin/env bash
# Configures and builds perfsim into build/ (or $PERFSIM_BUILD_DIR), after installing
# missing dependencies. Extra arguments are passed to cmake's configure step.
# PERFSIM_BUILD_TARGETS (space-separated ninja targets) builds only those, e.g. the quickstart's
# PERFSIM_BUILD_TARGETS=perfsim; by default every target (tests and benchmarks included).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
build_dir="${PERFSIM_BUILD_DIR:-build}"
launcher=()
# ccache, when installed, lets several build directories share compiled objects.
# The test files' precompiled header (tests/CMakeLists.txt) is cacheable only with this
# sloppiness (ccache's manual, "Precompiled headers").
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}"
fi
cmake -S . -B "$build_dir" -G Ninja "${launcher[@]}" -DCMAKE_BUILD_TYPE="${PERFSIM_BUILD_TYPE:-RelWithDebInfo}" "$@" >/dev/null
# shellcheck disable=SC2086  # the targets are meant to split on spaces
ninja -C "$build_dir" -j"$(nproc)" ${PERFSIM_BUILD_TARGETS:-}
