#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan; fuzz/, docs/fuzzing.md) in build-fuzz and runs
# each for FUZZ_SECONDS, then prints one line per target: executions, executions per second,
# coverage (libFuzzer's cov and ft at the end) and crashes. Exits non-zero if any target crashed.
#
#   scripts/fuzz.sh [TARGET...]        every target (fuzz/corpus/*) unless some are named
#
# Environment:
#   FUZZ_SECONDS=120     time per target
#   FUZZ_JOBS=1          targets run at the same time
#   FUZZ_RSS_MB=2048     memory limit per target (an input going over it is a crash)
#   FUZZ_KEEP_CORPUS=1   grow build-fuzz/corpus/<target> across runs (0: a fresh scratch corpus)
#   FUZZ_BUILD_DIR=build-fuzz
#
# Each target reads its seeds from fuzz/corpus/<target> (never written) and adds what it finds to
# the scratch corpus. A crashing input is saved as FUZZ_BUILD_DIR/crashes/<target>/crash-<sha1>
# (or leak-, timeout-, oom-); reproduce it with FUZZ_BUILD_DIR/bin/<target>_fuzz FILE. Each
# target's libFuzzer output is in FUZZ_BUILD_DIR/fuzz-logs/<target>.log.
set -uo pipefail
cd "$(dirname "$0")/.."

SECONDS_PER_TARGET=${FUZZ_SECONDS:-120}
JOBS=${FUZZ_JOBS:-1}
RSS_MB=${FUZZ_RSS_MB:-2048}
KEEP_CORPUS=${FUZZ_KEEP_CORPUS:-1}
BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}

if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRAINWATCH_FUZZ=ON -DTRAINWATCH_WEB=OFF \
    -DPython3_EXECUTABLE=/usr/bin/python3 >/dev/null || exit 1
fi
build_start=$(date +%s)
mkdir -p "$BUILD_DIR/fuzz-logs"
if ! cmake --build "$BUILD_DIR" --target fuzzers -j "$(nproc)" >"$BUILD_DIR/fuzz-logs/build.log" 2>&1; then
  grep -v '^\[' "$BUILD_DIR/fuzz-logs/build.log" | tail -40
  echo "fuzz: build failed ($BUILD_DIR/fuzz-logs/build.log)"
  exit 1
fi
echo "fuzz: build took $(( $(date +%s) - build_start )) s; ${SECONDS_PER_TARGET} s per target"

if [ $# -gt 0 ]; then
  targets=("$@")
else
  targets=()
  for dir in fuzz/corpus/*/; do targets+=("$(basename "$dir")"); done
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/tw-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

run_target() {
  local t=$1 corpus="$work/corpus/$1" crashes="$BUILD_DIR/crashes/$1"
  [ "$KEEP_CORPUS" = "1" ] && corpus="$BUILD_DIR/corpus/$t"
  mkdir -p "$corpus" "$crashes"
  ls -A "$crashes" > "$work/$t.before"
  "$BUILD_DIR/bin/${t}_fuzz" -max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb="$RSS_MB" -timeout=25 \
    -print_final_stats=1 -artifact_prefix="$crashes/" "$corpus" "fuzz/corpus/$t" \
    >"$BUILD_DIR/fuzz-logs/$t.log" 2>&1
  echo $? > "$work/$t.rc"
}

for t in "${targets[@]}"; do
  if [ ! -x "$BUILD_DIR/bin/${t}_fuzz" ]; then echo "fuzz: no target '$t'"; exit 2; fi
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
  run_target "$t" &
done
wait

status=0
printf '%-16s %12s %9s %7s %7s %8s\n' target execs exec/s cov ft crashes
for t in "${targets[@]}"; do
  log="$BUILD_DIR/fuzz-logs/$t.log"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  new=$(comm -13 <(sort "$work/$t.before") <(ls -A "$BUILD_DIR/crashes/$t" | sort))
  crashes=$(grep -c . <<<"$new")
  rc=$(cat "$work/$t.rc")
  if [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ]; then crashes="rc=$rc"; fi
  printf '%-16s %12s %9s %7s %7s %8s\n' "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "$crashes"
  if [ "$rc" -ne 0 ]; then
    status=1
    for f in $new; do echo "  crash: $BUILD_DIR/crashes/$t/$f"; done
    grep -m1 -E 'ERROR: |contract broken|runtime error|deadly signal' "$log" | sed 's/^/  /'
    echo "  log: $log"
  fi
done
exit $status
