#!/usr/bin/env bash
# Runs every test suite: C++ unit tests (ctest), then the integration tests against real server
# processes (pytest). Exits non-zero if any suite fails.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
PYTHON=${PYTHON:-/usr/bin/python3}

status=0
echo "== C++ unit tests"
(cd "$BUILD_DIR" && ctest --output-on-failure -j "$(nproc)" -E '^detect_devset$') || status=1

echo "== anomaly detection on the dev set (per-kind table and score line)"
if (cd "$BUILD_DIR" && ctest -N -R '^detect_devset$' | grep -q 'detect_devset'); then
  (cd "$BUILD_DIR" && ctest -V -R '^detect_devset$' | sed -n 's/^[0-9]*: //p') || status=1
else
  echo "detect_devset is not registered (no dev set found at configure time)"
fi

echo "== integration tests (real server processes)"
TRAINWATCH_BIN="$(pwd)/$BUILD_DIR/bin/trainwatch" "$PYTHON" -m pytest -q tests/integration || status=1

echo "== browser tests (the dashboard in headless Chromium, real server)"
scripts/test_browser.sh "$BUILD_DIR" || status=1

echo "== Python SDK tests (real server, real PyTorch training)"
PYTHONPATH="$(pwd)/$BUILD_DIR/python" TRAINWATCH_BIN="$(pwd)/$BUILD_DIR/bin/trainwatch" \
  TRAINWATCH_BUILD_DIR="$(pwd)/$BUILD_DIR" "$PYTHON" -m pytest -q sdk/python/tests || status=1

exit $status
