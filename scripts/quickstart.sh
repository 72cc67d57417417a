#!/usr/bin/env bash
# The README's first command: install what is missing, build, and run perfsim on its embedded
# default. `perfsim predict` does not exist yet (issue 5), so this shows the described chips.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
echo "perfsim predict is not built yet (issue 5); showing 'perfsim hw list' instead:"
./build/perfsim hw list
