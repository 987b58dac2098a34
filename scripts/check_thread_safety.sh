#!/usr/bin/env bash
# Checks the locking annotations with Clang's thread-safety analysis: TW_GUARDED_BY, TW_REQUIRES
# and the rest (common/thread_annotations.h, docs/thread_safety.md). Every project .cc file that
# includes common/thread_annotations.h (directly or through a header) is parsed by clang with
# -Wthread-safety -Werror=thread-safety; nothing is compiled or linked, and ninja re-checks only the
# files whose sources or headers changed since the last run. Prints how long it took.
#
#   scripts/check_thread_safety.sh          exits non-zero on any warning of the analysis
#
# Environment: TSA_BUILD_DIR=build-tsa (a clang build configured with TRAINWATCH_THREAD_SAFETY=ON).
set -uo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${TSA_BUILD_DIR:-build-tsa}
PYTHON=${PYTHON:-/usr/bin/python3}
start=$(date +%s)

if ! grep -qs '^TRAINWATCH_THREAD_SAFETY:BOOL=ON' "$BUILD_DIR/CMakeCache.txt"; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG= -DCMAKE_C_FLAGS_DEBUG= \
    -DTRAINWATCH_THREAD_SAFETY=ON -DTRAINWATCH_WEB=OFF -DPython3_EXECUTABLE="$PYTHON" >/dev/null ||
    { echo "check_thread_safety: cmake failed"; exit 1; }
fi
# Regenerates build.ninja first if a CMakeLists.txt changed (a file added to a target).
if ! ninja -C "$BUILD_DIR" build.ninja >"$BUILD_DIR/cmake-regenerate.log" 2>&1; then
  cat "$BUILD_DIR/cmake-regenerate.log"; echo "check_thread_safety: cmake failed"; exit 1
fi

# First, that the analysis is on at all: a file that reads guarded state without its lock, parsed as
# the project's files are (common/clock.cc's command), must be refused. Were the flags lost or the
# macros empty, every check below would pass without checking anything.
canary="$BUILD_DIR/thread_safety_canary.cc"
cat >"$canary" <<'CC'
#include "common/mutex.h"
struct Canary {
  trainwatch::Mutex mu;
  int n TW_GUARDED_BY(mu) = 0;
  int ReadWithoutTheLock() { return n; }
};
CC
canary_command=$("$PYTHON" - "$BUILD_DIR" "$(pwd)/src/common/clock.cc" "$(pwd)/$canary" <<'PY'
import json, sys
build, source, canary = sys.argv[1:]
for c in json.load(open(build + "/compile_commands.json")):
    if c["file"] == source:
        print(c["command"].split(" && ")[0].replace(source, canary))
PY
)
if [ -z "$canary_command" ] || (cd "$BUILD_DIR" && eval "$canary_command") >/dev/null 2>&1; then
  echo "check_thread_safety: the analysis is off: $canary, which reads guarded state without its" \
    "lock, was not refused (${canary_command:-no compile command for src/common/clock.cc})"
  exit 1
fi

mapfile -t objects < <("$PYTHON" scripts/thread_safety_sources.py "$BUILD_DIR")
if [ "${#objects[@]}" -eq 0 ]; then
  echo "check_thread_safety: no file includes common/thread_annotations.h"; exit 1
fi
log="$BUILD_DIR/thread-safety.log"
# -k 0: every failing file is reported, not just the first.
ninja -C "$BUILD_DIR" -k 0 "${objects[@]}" >"$log" 2>&1
status=$?
elapsed=$(( $(date +%s) - start ))
if [ "$status" -ne 0 ]; then
  grep -E ': (error|warning|note): ' "$log" | awk '!seen[$0]++' | head -60
  echo "check_thread_safety: FAILED in ${elapsed} s (${#objects[@]} files; full output: $log)"
  exit 1
fi
checked=$(grep -c 'Building CXX object' "$log")
echo "check_thread_safety: ${#objects[@]} files, ${checked} parsed now (the rest unchanged), ${elapsed} s"
