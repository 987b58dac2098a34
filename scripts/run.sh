#!/usr/bin/env bash
# Starts `trainwatch serve` in the foreground with its data in DATA_DIR (make run).
set -euo pipefail
BIN=$1
DATA_DIR=$2
LISTEN=$3
DEMO=${4:-1}
echo "trainwatch: open http://$LISTEN (data in $DATA_DIR; Ctrl-C stops)"
if [ "$DEMO" != "0" ] && [ -f sdk/python/examples/demo.py ]; then
  (sleep 2; PYTHONPATH=build/python /usr/bin/python3 sdk/python/examples/demo.py --server "http://$LISTEN" || true) &
fi
exec "$BIN" serve --data-dir "$DATA_DIR" --listen "$LISTEN"
