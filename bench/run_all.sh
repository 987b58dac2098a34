#!/usr/bin/env bash
# Runs every benchmark of bench/ against the binaries of BUILD_DIR and prints their figures; nothing
# here passes or fails on a figure (a benchmark that crashes makes the exit status non-zero).
# `make bench` runs it. See bench/README.md.
#
#   bench/run_all.sh BUILD_DIR [--preset 10m|1m] [--skip NAME,...]
#
# NAME: encoding, ingest, query, live, alert, detector, memory, influx, sdk, tls, tfevents, dashboard. Workloads are generated on first use into
# $TRAINWATCH_BENCH_DIR (default /tmp/trainwatch-bench), with scratch data directories beside them.
set -uo pipefail

usage() { echo "usage: bench/run_all.sh BUILD_DIR [--preset 10m|1m] [--skip NAME,...]" >&2; exit 2; }
[ $# -ge 1 ] || usage
BUILD_DIR=$(cd "$1" && pwd) || usage
shift
PRESET=10m
SKIP=""
while [ $# -gt 0 ]; do
  case "$1" in
    --preset) PRESET=${2:-}; shift 2 ;;
    --skip) SKIP=${2:-}; shift 2 ;;
    *) usage ;;
  esac
done
case "$PRESET" in 10m|1m) ;; *) usage ;; esac

cd "$(dirname "$0")"
PY=${PYTHON:-/usr/bin/python3}
COMMON=(--build-dir "$BUILD_DIR" --preset "$PRESET")
FAILED=()

run() {  # run NAME COMMAND...
  local name=$1
  shift
  if [[ ",$SKIP," == *",$name,"* ]]; then
    echo "=== $name: skipped"
    return
  fi
  echo
  echo "=== $name: $*"
  local start=$SECONDS
  if ! "$@"; then
    FAILED+=("$name")
    echo "=== $name: FAILED"
  fi
  echo "=== $name: $((SECONDS - start)) s"
}

echo "trainwatch benchmarks, preset $PRESET, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs, git $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
# The workload first, so that no benchmark's figures include generating it.
WORKLOAD_DIR=$("$PY" benchlib.py "${COMMON[@]}") || exit 1
WORKLOAD=$WORKLOAD_DIR/workload.jsonl
if [ -x "$BUILD_DIR/bin/encoding_bench" ]; then
  run encoding "$BUILD_DIR/bin/encoding_bench" "$WORKLOAD"
else
  echo "=== encoding: $BUILD_DIR/bin/encoding_bench not built"
fi
run ingest "$PY" ingest_disk_bench.py "${COMMON[@]}" --no-encoding
run query "$PY" query_latency_bench.py "${COMMON[@]}"
run live "$PY" live_latency_bench.py "${COMMON[@]}"
run alert "$PY" alert_latency_bench.py "${COMMON[@]}"
run detector "$BUILD_DIR/bin/detector_bench"
run memory "$PY" memory_bench.py "${COMMON[@]}"
run influx "$PY" influx_compare_bench.py "${COMMON[@]}"
run sdk ./sdk_bench.sh "$BUILD_DIR"
run tls "$PY" tls_bench.py "${COMMON[@]}"
# TensorBoard import: a generated logdir (1 GiB; 0.1 GiB with --preset 1m), reader alone and end to end.
if [ -x "$BUILD_DIR/bin/tfevents_bench" ]; then
  run tfevents "$PY" tfevents_import_bench.py "${COMMON[@]}"
else
  echo "=== tfevents: $BUILD_DIR/bin/tfevents_bench not built"
fi
# The web dashboard in headless Chromium (Node + playwright-core from web/node_modules); its own
# data; --preset 1m runs it with --quick (fewer repetitions, same data).
NODE=${NODE:-node}
if ! command -v "$NODE" >/dev/null || [ ! -d ../web/node_modules/playwright-core ] || [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
  echo "=== dashboard: skipped (needs node, web/node_modules (npm ci in web/) and ${CHROMIUM:-/usr/bin/chromium})"
elif [ "$PRESET" = 1m ]; then
  run dashboard "$NODE" dashboard_bench.mjs --build-dir "$BUILD_DIR" --quick
else
  run dashboard "$NODE" dashboard_bench.mjs --build-dir "$BUILD_DIR"
fi

if [ ${#FAILED[@]} -gt 0 ]; then
  echo "benchmarks that failed to run: ${FAILED[*]}"
  exit 1
fi
