#!/usr/bin/env bash
# The README's first command: install what is missing, build the perfsim binary alone (not the
# tests and benchmarks: scripts/test.sh builds those into the same build/ later), and run
# `perfsim predict` on its embedded default scenario (DeepSeek-V3 MoE layer, fwd_bwd, TPU v7x
# 4x8x8, ep_ragged_a2a).
set -euo pipefail
cd "$(dirname "$0")/.."
PERFSIM_BUILD_TARGETS=perfsim bash scripts/build.sh
./build/perfsim predict
