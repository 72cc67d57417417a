#!/usr/bin/env bash
# Installs what perfsim needs from Debian 12 packages, only if something is missing.
# Safe to run repeatedly; needs root (or sudo) only when it has to install.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libabsl-dev libprotobuf-dev protobuf-compiler libfmt-dev
  libboost-graph-dev libgtest-dev libgmock-dev libbenchmark-dev
)
# clang and its runtime are needed only for the libFuzzer targets (scripts/fuzz.sh).
if [[ "${PERFSIM_WITH_FUZZ:-0}" == 1 ]]; then
  packages+=(clang libclang-rt-14-dev)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "install_deps: installing ${missing[*]}" >&2
sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
