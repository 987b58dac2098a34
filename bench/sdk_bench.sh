#!/usr/bin/env bash
# The SDK's figures (docs/sdk.md): Run::Log in C++ and run.log in Python per call beside a JSON line
# appended to a file, points/s one SDK process delivers, and the slowdown tw.watch adds to a small
# PyTorch training loop. Starts its own servers on free loopback ports. Prints figures only.
#
#   bench/sdk_bench.sh BUILD_DIR
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: bench/sdk_bench.sh BUILD_DIR" >&2; exit 2; }
BUILD_DIR=$(cd "$1" && pwd)
cd "$(dirname "$0")"
PY=${PYTHON:-/usr/bin/python3}
WORK=$(mktemp -d /tmp/trainwatch-sdk-bench.XXXXXX)
PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
GRPC_PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$BUILD_DIR/bin/trainwatch" serve --data-dir "$WORK/data" --listen "127.0.0.1:$PORT" \
  --grpc-listen "127.0.0.1:$GRPC_PORT" --log-level warn > "$WORK/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; wait $SERVER 2>/dev/null || true; rm -rf "$WORK"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done

echo "--- C++ (bench/sdk_log_bench.cc)"
"$BUILD_DIR/bin/sdk_log_bench" --server "http://127.0.0.1:$PORT"
kill $SERVER; wait $SERVER 2>/dev/null || true

echo "--- Python (bench/sdk_python_bench.py)"
PYTHONPATH="$BUILD_DIR/python" "$PY" sdk_python_bench.py --build-dir "$BUILD_DIR"
