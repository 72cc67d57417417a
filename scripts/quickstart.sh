#!/usr/bin/env bash
# The README's first command: install what is missing, build, and run `perfsim predict` on its
# embedded default scenario (DeepSeek-V3 MoE layer, fwd_bwd, TPU v7x 4x8x8, ep_ragged_a2a).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
./build/perfsim predict
