#!/usr/bin/env bash
# The README's second command: install what is missing, build, and run the whole test suite.
#   scripts/test.sh             optimised build in build/
#   scripts/test.sh --sanitize  ASan + UBSan build in build-asan/ (CI runs both)
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" == "--sanitize" ]]; then
  export PERFSIM_BUILD_DIR=build-asan PERFSIM_BUILD_TYPE=Debug
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  bash scripts/build.sh -DPERFSIM_SANITIZE=ON -DPERFSIM_BENCHMARKS=OFF
else
  bash scripts/build.sh
fi
cd "${PERFSIM_BUILD_DIR:-build}"
ctest --output-on-failure -j"$(nproc)" --timeout 600
