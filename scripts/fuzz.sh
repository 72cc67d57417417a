#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) into build-fuzz/ and runs each for
# RUNS executions (default 1,000,000), seeded from the HLO corpus, the committed test HLO and
# the built-in textprotos. Findings (crash-*, timeout-*, oom-*) land in fuzz-findings/.
#   scripts/fuzz.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-1000000}"
PERFSIM_WITH_FUZZ=1 bash scripts/install_deps.sh
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPERFSIM_FUZZ=ON -DPERFSIM_TESTS=OFF -DPERFSIM_BENCHMARKS=OFF >/dev/null
ninja -C build-fuzz hlo_parser_fuzzer textproto_fuzzer

mkdir -p fuzz-corpus/hlo fuzz-corpus/textproto fuzz-findings
cp ../shared/reference/xla_hlo_corpus/*.hlo fuzz-corpus/hlo/ 2>/dev/null || true
find tests/testdata -name '*.hlo' -exec cp {} fuzz-corpus/hlo/ \;
cp hardware/*.textproto models/*.textproto fuzz-corpus/textproto/

status=0
for target in hlo_parser textproto; do
  echo "== ${target}_fuzzer: ${runs} runs"
  log="fuzz-findings/${target}.log"
  if ! ./build-fuzz/fuzz/${target}_fuzzer -runs="$runs" -max_len=65536 -timeout=10 \
      -rss_limit_mb=2048 -artifact_prefix=fuzz-findings/ -print_final_stats=1 \
      fuzz-corpus/$target >"$log" 2>&1; then
    echo "${target}_fuzzer found a problem; see $log and fuzz-findings/" >&2
    status=1
  fi
  grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units|SUMMARY)' "$log" || true
done
exit $status
