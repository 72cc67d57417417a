#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) into build-fuzz/ and runs each, one at
# a time, for RUNS executions (default 1,000,000), or with --seconds S for S seconds each (what
# CI runs: scripts/fuzz.sh --seconds 20). Corpora (fuzz-corpus/<target>/, kept between
# runs) are seeded from committed files:
#   hlo_parser  shared/reference/xla_hlo_corpus/*.hlo, tests/testdata/**/*.hlo
#   textproto   hardware/*.textproto, models/*.textproto
#   csv         tests/testdata/accuracy/*.csv, shared/reference/calibration.csv, fuzz/seeds/csv/
#   routing     fuzz/seeds/routing/ (routing files and --routing specs)
#   npy         tests/testdata/hlo/jax/*.npy, fuzz/seeds/npy/
#   sweep       fuzz/seeds/sweep/ (sweep space textprotos and shard files)
#   cli         fuzz/seeds/cli/ (command lines of predict, lower, validate, fit and sweep), with
#               the dictionary fuzz/cli.dict (flag names and values)
# fuzz/seeds/ also keeps the inputs of past findings, so that every run re-checks them.
# Findings (crash-*, timeout-*, oom-*) land in fuzz-findings/, with one log per target.
#   scripts/fuzz.sh [RUNS]
#   scripts/fuzz.sh --seconds S
set -euo pipefail
cd "$(dirname "$0")/.."
limit=(-runs="${1:-1000000}")
what="${1:-1000000} runs"
if [[ "${1:-}" == "--seconds" ]]; then
  # A fixed seed, so that a CI failure is a regression of the code, not the luck of the run.
  limit=(-max_total_time="${2:?--seconds needs a number}" -seed=1)
  what="${2} s"
fi
targets=(hlo_parser textproto csv routing npy sweep cli)
PERFSIM_WITH_FUZZ=1 bash scripts/install_deps.sh
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPERFSIM_FUZZ=ON -DPERFSIM_TESTS=OFF -DPERFSIM_BENCHMARKS=OFF >/dev/null
ninja -C build-fuzz "${targets[@]/%/_fuzzer}"

mkdir -p fuzz-findings
for target in "${targets[@]}"; do mkdir -p "fuzz-corpus/$target"; done
cp ../shared/reference/xla_hlo_corpus/*.hlo fuzz-corpus/hlo_parser/ 2>/dev/null || true
find tests/testdata -name '*.hlo' -exec cp {} fuzz-corpus/hlo_parser/ \;
cp hardware/*.textproto models/*.textproto fuzz-corpus/textproto/
cp tests/testdata/accuracy/*.csv fuzz-corpus/csv/
cp ../shared/reference/calibration.csv fuzz-corpus/csv/ 2>/dev/null || true
cp fuzz/seeds/csv/* fuzz-corpus/csv/
cp fuzz/seeds/routing/* fuzz-corpus/routing/
cp tests/testdata/hlo/jax/*.npy fuzz/seeds/npy/* fuzz-corpus/npy/
cp fuzz/seeds/sweep/* fuzz-corpus/sweep/
cp fuzz/seeds/cli/* fuzz-corpus/cli/

# Longest input per target, above its seeds (calibration.csv is 14 kB; most .npy seeds
# are under 4 kB, larger ones are still read whole).
max_len() {
  case "$1" in
    hlo_parser | csv) echo 65536 ;;
    textproto | routing | sweep) echo 8192 ;;
    cli) echo 512 ;;
    npy) echo 16384 ;;
  esac
}

# Seconds one input may take before it counts as a hang. The CLI target runs whole commands
# (a pinned sweep is ~2 s under ASan on an idle core, several times that on a loaded one).
unit_timeout() {
  case "$1" in
    cli) echo 30 ;;
    *) echo 10 ;;
  esac
}

# UBSan reports are recoverable by default: make them fatal so that libFuzzer keeps the input.
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
status=0
for target in "${targets[@]}"; do
  echo "== ${target}_fuzzer: ${what}"
  log="fuzz-findings/${target}.log"
  dict=()
  if [[ -f "fuzz/${target}.dict" ]]; then dict=(-dict="fuzz/${target}.dict"); fi
  if ! ./build-fuzz/fuzz/${target}_fuzzer "${limit[@]}" "${dict[@]}" -max_len="$(max_len "$target")" \
      -timeout="$(unit_timeout "$target")" -rss_limit_mb=2048 -artifact_prefix=fuzz-findings/ -print_final_stats=1 \
      "fuzz-corpus/$target" >"$log" 2>&1; then
    echo "${target}_fuzzer found a problem; see $log and fuzz-findings/" >&2
    status=1
  fi
  grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units|SUMMARY)' "$log" || true
done
exit $status
