#!/usr/bin/env bash
# Runs every test suite: C++ unit tests (ctest), then the integration tests against real server
# processes (pytest). Exits non-zero if any suite fails.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
PYTHON=${PYTHON:-/usr/bin/python3}

status=0
echo "== C++ unit tests"
(cd "$BUILD_DIR" && ctest --output-on-failure -j "$(nproc)") || status=1

echo "== integration tests (real server processes)"
TRAINWATCH_BIN="$(pwd)/$BUILD_DIR/bin/trainwatch" "$PYTHON" -m pytest -q tests/integration || status=1

echo "== Python SDK tests (real server, real PyTorch training)"
PYTHONPATH="$(pwd)/$BUILD_DIR/python" TRAINWATCH_BIN="$(pwd)/$BUILD_DIR/bin/trainwatch" \
  TRAINWATCH_BUILD_DIR="$(pwd)/$BUILD_DIR" "$PYTHON" -m pytest -q sdk/python/tests || status=1

exit $status
