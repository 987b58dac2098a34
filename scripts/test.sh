#!/usr/bin/env bash
# Runs every test suite: C++ unit tests (ctest), then the integration tests against real server
# processes (pytest). Exits non-zero if any suite fails.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
PYTHON=${PYTHON:-/usr/bin/python3}

status=0
failed=()
# Records a failed suite; the summary at the end names them all (CI shows only the log's tail).
fail() { status=1; failed+=("$1"); }
# The tests a pytest run failed, from its cache (pytest_failed CACHE_DIR).
pytest_failed() {
  "$PYTHON" -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))))' \
    "$1/v/cache/lastfailed" 2>/dev/null
}
# Every skipped test with its reason, listed again in the summary (scripts/skipped_tests.py).
skipped="$BUILD_DIR/skipped-tests.txt"
: > "$skipped"
# The detection score lines (OK / FAIL / NOTE of tests/detect/score_sets.py), repeated in the summary.
scores="$BUILD_DIR/detect-scores.txt"
: > "$scores"
mkdir -p "$BUILD_DIR/pytest-cache"  # each pytest run's output is kept beside its cache, for the list

echo "== C++ tests do not sleep: they wait on events or a ManualClock (scripts/check_no_sleep.sh)"
scripts/check_no_sleep.sh || fail "check_no_sleep"
echo "== Python tests do not sleep or bound wall time: they wait on a condition or an event (scripts/check_no_sleep_py.sh)"
scripts/check_no_sleep_py.sh || fail "check_no_sleep_py"
echo "== C++ files changed since the format baseline are clang-formatted (scripts/check_format.sh)"
scripts/check_format.sh || fail "check_format"
echo "== locking annotations hold: clang's thread-safety analysis (scripts/check_thread_safety.sh, docs/thread_safety.md)"
scripts/check_thread_safety.sh || fail "check_thread_safety"

echo "== C++ unit tests, and every fuzz target replayed on its seeds (fuzz_replay_*, docs/fuzzing.md)"
(cd "$BUILD_DIR" && ctest --output-on-failure -j "$(nproc)" -LE '^detect_score$') ||
  fail "C++ unit tests: $(tr '\n' ' ' < "$BUILD_DIR/Testing/Temporary/LastTestsFailed.log" 2>/dev/null)"
"$PYTHON" scripts/skipped_tests.py ctest "$BUILD_DIR/Testing/Temporary/LastTest.log" >> "$skipped"

echo "== anomaly detection on the labelled sets: dense dev set, real logs, cadence sweep (tables and score lines)"
for t in detect_devset detect_realkit detect_cadence_sweep; do
  # The listing is read whole before grep looks at it: `ctest ... | grep -q` under pipefail fails
  # when grep exits at its first match and ctest, still writing, dies of SIGPIPE.
  listing=$(cd "$BUILD_DIR" && ctest -N -R "^$t\$")
  if grep -q "$t" <<<"$listing"; then
    echo "-- $t"
    (cd "$BUILD_DIR" && ctest -V -R "^$t\$" | sed -n 's/^[0-9]*: //p'; exit "${PIPESTATUS[0]}") | tee "$BUILD_DIR/$t.log" ||
      fail "$t"
    grep -E '^(OK|FAIL|NOTE|  every)' "$BUILD_DIR/$t.log" | sed "s/^/$t: /" >> "$scores"
  else
    echo "$t is not registered (its labelled set was not found at configure time)"; fail "$t"
  fi
done

echo "== integration tests (real server processes)"
cache="$(pwd)/$BUILD_DIR/pytest-cache/integration"
TRAINWATCH_BIN="$(pwd)/$BUILD_DIR/bin/trainwatch" "$PYTHON" -m pytest -q -rfEs --cache-clear \
  -o cache_dir="$cache" tests/integration 2>&1 | tee "$cache.log" || fail "integration tests: $(pytest_failed "$cache")"
"$PYTHON" scripts/skipped_tests.py pytest "integration tests" "$cache.log" >> "$skipped"

echo "== browser tests (the dashboard in headless Chromium, real server)"
scripts/test_browser.sh "$BUILD_DIR" || fail "browser tests"

echo "== Python SDK tests (real server, real PyTorch training)"
cache="$(pwd)/$BUILD_DIR/pytest-cache/sdk"
PYTHONPATH="$(pwd)/$BUILD_DIR/python" TRAINWATCH_BIN="$(pwd)/$BUILD_DIR/bin/trainwatch" \
  TRAINWATCH_BUILD_DIR="$(pwd)/$BUILD_DIR" "$PYTHON" -m pytest -q -rfEs --cache-clear -o cache_dir="$cache" \
  sdk/python/tests 2>&1 | tee "$cache.log" || fail "Python SDK tests: $(pytest_failed "$cache")"
"$PYTHON" scripts/skipped_tests.py pytest "Python SDK tests" "$cache.log" >> "$skipped"

if [ -s "$scores" ]; then
  echo "== detection scores:"
  cat "$scores"
fi
if [ -s "$skipped" ]; then
  echo "== skipped ($(wc -l < "$skipped")), each with its reason:"
  cat "$skipped"
fi
if [ "$status" -ne 0 ]; then
  echo "== FAILED: ${failed[*]} (their output is above)"
else
  echo "== all suites passed"
fi
exit $status
