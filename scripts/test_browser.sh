#!/usr/bin/env bash
# Browser tests of the dashboard (web/tests/, node:test + playwright-core + Debian's Chromium)
# against a real server: scripts/test_browser.sh [build-dir]  (default: build).
# Needs the server binary with the app embedded ($BUILD_DIR/bin/trainwatch), `npm ci` done in web/
# (playwright-core) and /usr/bin/chromium (scripts/install-deps.sh). Screenshots of every page go to
# $TRAINWATCH_ARTIFACTS (default $BUILD_DIR/test-artifacts/browser). Exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$(pwd)/$BUILD_DIR" ;; esac
export TRAINWATCH_BIN="${TRAINWATCH_BIN:-$BUILD_DIR/bin/trainwatch}"
export TRAINWATCH_ARTIFACTS="${TRAINWATCH_ARTIFACTS:-$BUILD_DIR/test-artifacts/browser}"

missing=0
[ -x "$TRAINWATCH_BIN" ] || { echo "no server binary at $TRAINWATCH_BIN (build it first)" >&2; missing=1; }
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || { echo "no ${CHROMIUM:-/usr/bin/chromium} (scripts/install-deps.sh installs chromium)" >&2; missing=1; }
[ -d web/node_modules/playwright-core ] || { echo "no web/node_modules/playwright-core (run: npm ci --prefix web)" >&2; missing=1; }
[ "$missing" = 0 ] || exit 2

mkdir -p "$TRAINWATCH_ARTIFACTS"
rm -f "$TRAINWATCH_ARTIFACTS"/*.png
echo "== browser tests ($TRAINWATCH_BIN)"
node --test --test-reporter=spec web/tests/*.test.mjs
status=$?
echo "screenshots: $TRAINWATCH_ARTIFACTS"
exit $status
