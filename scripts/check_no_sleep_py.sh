#!/usr/bin/env bash
# Fails when a Python test (tests/**/*.py, sdk/python/tests/**/*.py) sleeps or bounds wall time:
#   - a sleep: time.sleep(, asyncio.sleep( or a bare sleep( (from time import sleep);
#   - an assert on elapsed wall time: an `assert` line naming `elapsed`, or taking a difference
#     with time.time(), time.monotonic() or time.perf_counter[_ns]() (`now - t0 < 30`).
# Tests wait on the condition itself instead (harness.wait_until: poll with a deadline that only
# guards against a hang) or on an event from the process (a log line, a counter that moved).
# Deadlines (`assert time.monotonic() < deadline`) and timestamps checked against a window
# (`before <= ts <= time.time()`) are not caught; neither is a duration computed on one line and
# asserted on another: the pattern is simple, review the rest.
#
# A line that truly needs one (real time the server measures, an outage the client must ride out)
# carries the marker
#   # sleep-ok: <why>
# on the same line or the line before. The C++ tests have their own guard: scripts/check_no_sleep.sh.
set -uo pipefail
cd "$(dirname "$0")/.."

sleep_pattern='(^|[^_[:alnum:]])((time|asyncio)[.])?sleep[[:space:]]*[(]'
clock='time[.](time|monotonic|perf_counter|perf_counter_ns)[(][)]'
elapsed_pattern="^[[:space:]]*assert[[:space:](].*(elapsed|${clock}[[:space:]]*-|-[[:space:]]*${clock})"
status=0
while IFS= read -r file; do
  awk -v file="$file" -v sleep_pattern="$sleep_pattern" -v elapsed_pattern="$elapsed_pattern" '
    { line = $0; sub(/#.*/, "", line) }  # a sleep named in a comment is fine
    $0 !~ /sleep-ok:/ && previous !~ /sleep-ok:/ {
      if (line ~ sleep_pattern) { printf "%s:%d: a test sleeps: %s\n", file, NR, $0; bad = 1 }
      else if (line ~ elapsed_pattern) { printf "%s:%d: a test bounds wall time: %s\n", file, NR, $0; bad = 1 }
    }
    { previous = $0 }
    END { exit bad }
  ' "$file" || status=1
done < <(find tests sdk/python/tests -name '*.py' -type f -not -path '*/__pycache__/*' | sort)

if [ "$status" -ne 0 ]; then
  echo "check_no_sleep_py: wait on the condition (harness.wait_until) or an event instead (or mark a justified line: # sleep-ok: why)"
fi
exit $status
