#!/usr/bin/env bash
# ctest xla_test_suite: XLA's own test modules through `perfsim hlo check`, by the suite's own
# check.sh (../shared/reference/xla_test_suite). Passes when no module crashes or times out and
# every module XLA accepts is accepted, except those listed in
# tests/testdata/xla_suite_known_rejections.txt (one file name per line, then "# why"); a
# listed module that is now accepted fails the test too, so the list only shrinks.
# Usage: xla_test_suite.sh PERFSIM SUITE_DIR. Exit 77 (ctest: skipped) without SUITE_DIR.
set -u
perfsim=$1 suite=$2
known="$(dirname "$0")/testdata/xla_suite_known_rejections.txt"
if [ ! -f "$suite/check.sh" ]; then
  echo "skipped: $suite/check.sh not found"; exit 77
fi
log=$(mktemp); trap 'rm -f "$log"' EXIT
bash "$suite/check.sh" "$perfsim" -v > "$log" 2>&1
tail -1 "$log"
status=0
if grep -q '^crash/timeout' "$log"; then grep '^crash/timeout' "$log"; status=1; fi
rejected=$(sed -n 's/^rejected: \([^:]*\):.*/\1/p' "$log" | sort)
listed=$( [ -f "$known" ] && sed 's/#.*//; s/[[:space:]]//g; /^$/d' "$known" | sort)
unexpected=$(comm -23 <(echo "$rejected" | sed '/^$/d') <(echo "$listed" | sed '/^$/d'))
stale=$(comm -13 <(echo "$rejected" | sed '/^$/d') <(echo "$listed" | sed '/^$/d'))
if [ -n "$unexpected" ]; then
  echo "valid modules rejected (not in $known):"
  for f in $unexpected; do grep "^rejected: $f:" "$log"; done
  status=1
fi
if [ -n "$stale" ]; then
  echo "listed in $known but accepted now (remove them):"; echo "$stale"; status=1
fi
exit $status
