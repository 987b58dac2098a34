#!/usr/bin/env bash
# Runs every test suite: C++ unit tests (ctest), then the integration tests against real server
# processes (pytest). Exits non-zero if any suite fails.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
PYTHON=${PYTHON:-/usr/bin/python3}

status=0
echo "== C++ unit tests"
(cd "$BUILD_DIR" && ctest --output-on-failure -j "$(nproc)" -LE '^detect_score$') || status=1

echo "== anomaly detection on the labelled sets: dense dev set, real logs, cadence sweep (tables and score lines)"
for t in detect_devset detect_realkit detect_cadence_sweep; do
  if (cd "$BUILD_DIR" && ctest -N -R "^$t\$" | grep -q "$t"); then
    echo "-- $t"
    (cd "$BUILD_DIR" && ctest -V -R "^$t\$" | sed -n 's/^[0-9]*: //p'; exit "${PIPESTATUS[0]}") || status=1
  else
    echo "$t is not registered (its labelled set was not found at configure time)"; status=1
  fi
done

echo "== integration tests (real server processes)"
TRAINWATCH_BIN="$(pwd)/$BUILD_DIR/bin/trainwatch" "$PYTHON" -m pytest -q tests/integration || status=1

echo "== browser tests (the dashboard in headless Chromium, real server)"
scripts/test_browser.sh "$BUILD_DIR" || status=1

echo "== Python SDK tests (real server, real PyTorch training)"
PYTHONPATH="$(pwd)/$BUILD_DIR/python" TRAINWATCH_BIN="$(pwd)/$BUILD_DIR/bin/trainwatch" \
  TRAINWATCH_BUILD_DIR="$(pwd)/$BUILD_DIR" "$PYTHON" -m pytest -q sdk/python/tests || status=1

exit $status
