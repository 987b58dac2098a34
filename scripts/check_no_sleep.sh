#!/usr/bin/env bash
# Fails when a C++ test sleeps: sleep_for, sleep_until, usleep, nanosleep or sleep( in a *_test.cc
# (or a test helper under a testing/ folder) below src/ or sdk/cpp/src. Tests wait on an event
# or drive a ManualClock (Advance, then AwaitWaiters) instead: a sleep is either too short on a
# loaded machine or wasted time everywhere else.
#
# A line that truly needs one (a real peer that offers nothing to wait on) carries the marker
#   // sleep-ok: <why>
# on the same line or the line before. Covers C++ only: the Python tests have
# scripts/check_no_sleep_py.sh; the browser tests are not checked.
set -uo pipefail
cd "$(dirname "$0")/.."

pattern='(^|[^_[:alnum:]])(sleep_for|sleep_until|usleep|nanosleep|sleep)[[:space:]]*[(]'
status=0
while IFS= read -r file; do
  awk -v file="$file" -v pattern="$pattern" '
    { line = $0; sub(/\/\/.*/, "", line) }  # a sleep named in a comment is fine
    line ~ pattern && $0 !~ /sleep-ok:/ && previous !~ /sleep-ok:/ {
      printf "%s:%d: a test sleeps: %s\n", file, NR, $0; bad = 1
    }
    { previous = $0 }
    END { exit bad }
  ' "$file" || status=1
done < <(find src sdk/cpp/src \( -name '*_test.cc' -o -path '*/testing/*.cc' -o -path '*/testing/*.h' \) \
           -type f | sort)

if [ "$status" -ne 0 ]; then
  echo "check_no_sleep: wait on an event or a ManualClock instead (or mark a justified line: // sleep-ok: why)"
fi
exit $status
