#!/usr/bin/env bash
# A cluster on this machine (docs/cluster.md): three Debian nats-server nodes forming a JetStream
# cluster (R3) and three `trainwatch serve --nats` nodes, all on 127.0.0.1, with their data under
# one directory. `make cluster` / `make cluster-down` call it.
#
#   scripts/cluster.sh up      starts them in the background, prints the URLs, starts the demo run
#   scripts/cluster.sh down    stops them all (trainwatch nodes first, so they leave cleanly)
#   scripts/cluster.sh status  which of them run
#
# Settings (environment):
#   CLUSTER_DIR        data, logs and pid files (default ./cluster-data); `up` keeps the data of
#                      an earlier cluster there, so a cluster stopped with `down` starts again as
#                      it was
#   CLUSTER_PORT       HTTP port of the first trainwatch node; the others take the next two
#                      (default 8081: 8081-8083). 0: each node picks a free port.
#   CLUSTER_NATS_PORT  client port of the first nats-server (default 4222: 4222-4224, routes
#                      6222-6224, monitoring 8222-8224). 0: each server picks free ports.
#   TRAINWATCH_BIN     the server binary (default build/bin/trainwatch)
#   BUILD_DIR          where the demo finds the Python SDK (default build: BUILD_DIR/python)
#   DEMO               1 (default): run sdk/python/examples/demo.py against the first node; 0: not
#   PARTITIONS, LEASE  the cluster's --partitions (default 16) and --cluster-lease (default 10s)
#
# `up` writes CLUSTER_DIR/cluster.env (shell syntax: TW_URLS, TW_GRPC, NATS_URLS, NATS_MONITOR) with
# the ports in use, which is how a caller finds them when it asked for port 0.
set -euo pipefail
cd "$(dirname "$0")/.."

DIR=${CLUSTER_DIR:-./cluster-data}
PORT=${CLUSTER_PORT:-8081}
NATS_PORT=${CLUSTER_NATS_PORT:-4222}
BIN=${TRAINWATCH_BIN:-build/bin/trainwatch}
BUILD_DIR=${BUILD_DIR:-build}
DEMO=${DEMO:-1}
PARTITIONS=${PARTITIONS:-16}
LEASE=${LEASE:-10s}
NATS_SERVER=${NATS_SERVER:-/usr/sbin/nats-server}
PYTHON=${PYTHON:-/usr/bin/python3}
START_TIMEOUT=${CLUSTER_START_TIMEOUT:-120}  # seconds a process may take to say it is ready

[ "${1:-}" = up ] && mkdir -p "$DIR"
[ -d "$DIR" ] || { echo "cluster: no cluster in $DIR"; exit 0; }
DIR=$(cd "$DIR" && pwd)
PIDS="$DIR/pids"
LOGS="$DIR/logs"

die() { echo "cluster: $*" >&2; exit 1; }

# started_at PID: the process's start time (clock ticks since boot, /proc/PID/stat field 22).
started_at() { sed -E 's/^.*\) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20; }

# pid_alive FILE: the process of the pid file ("PID START") runs, and is the one we started (a
# pid reused by another process after a crash or a reboot has another start time).
pid_alive() {
  local pid start
  read -r pid start < "$1" 2>/dev/null || return 1
  [ -n "$pid" ] && [ -n "$start" ] && [ "$(started_at "$pid")" = "$start" ]
}

# wait_line FILE REGEX WHAT PIDFILE: waits until FILE has a line matching REGEX; fails when the
# process exits first or START_TIMEOUT passes. Prints the first matching line.
wait_line() {
  local file=$1 regex=$2 what=$3 pidfile=$4 deadline=$((SECONDS + START_TIMEOUT))
  while :; do
    if grep -m1 -E "$regex" "$file" 2>/dev/null; then return 0; fi
    if ! pid_alive "$pidfile"; then
      echo "cluster: $what exited; the end of its log ($file):" >&2
      tail -n 20 "$file" >&2 || true
      return 1
    fi
    [ "$SECONDS" -lt "$deadline" ] || { echo "cluster: $what is not ready after ${START_TIMEOUT}s ($file)" >&2; return 1; }
    sleep 0.1
  done
}

# start NAME LOG CMD...: starts CMD in its own session (a Ctrl-C in the caller's terminal does not
# reach it), stdout and stderr to LOG, its pid in pids/NAME.pid.
start() {
  local name=$1 log=$2
  shift 2
  : > "$log"
  setsid "$@" > "$log" 2>&1 < /dev/null &
  local pid=$!
  echo "$pid $(started_at "$pid")" > "$PIDS/$name.pid"
}

port_of() {  # port_of BASE OFFSET: BASE+OFFSET, or -1 (any) when BASE is 0
  if [ "$1" = 0 ]; then echo -1; else echo $(($1 + $2)); fi
}

up() {
  [ -x "$BIN" ] || die "no trainwatch binary at $BIN (make build, or set TRAINWATCH_BIN)"
  [ -x "$NATS_SERVER" ] || die "no nats-server at $NATS_SERVER (scripts/install-deps.sh installs it)"
  mkdir -p "$PIDS" "$LOGS"
  for f in "$PIDS"/*.pid; do
    [ -e "$f" ] || continue
    if pid_alive "$f"; then die "already running ($(basename "$f" .pid)); scripts/cluster.sh down first"; fi
    rm -f "$f"
  done
  trap 'echo "cluster: start failed; stopping what started" >&2; down > /dev/null 2>&1 || true' ERR

  # NATS: R3 JetStream needs three servers. With fixed ports every server routes to all three;
  # with free ports the first routes to a placeholder (JetStream clustering does not start
  # without a route) until the others, started once its route port is known, route to it.
  local i nats_urls="" monitors="" route0="" routes
  for i in 0 1 2; do
    local name="n$i" data="$DIR/nats/n$i"
    mkdir -p "$data"
    printf 'jetstream {\n  store_dir: "%s"\n  max_memory_store: 64MB\n  max_file_store: 4GB\n}\n' "$data" \
      > "$DIR/nats/n$i.conf"
    local client route monitor
    client=$(port_of "$NATS_PORT" "$i")
    route=$(port_of "$NATS_PORT" $((2000 + i)))
    monitor=$(port_of "$NATS_PORT" $((4000 + i)))
    if [ "$NATS_PORT" != 0 ]; then
      routes="nats://127.0.0.1:$((NATS_PORT + 2000)),nats://127.0.0.1:$((NATS_PORT + 2001)),nats://127.0.0.1:$((NATS_PORT + 2002))"
    elif [ "$i" = 0 ]; then
      routes="nats://127.0.0.1:1"
    else
      routes="nats://127.0.0.1:$route0"
    fi
    start "nats-$name" "$LOGS/nats-$name.log" "$NATS_SERVER" -c "$DIR/nats/n$i.conf" -a 127.0.0.1 \
      -p "$client" -m "$monitor" --server_name "$name" --cluster_name trainwatch \
      --cluster "nats://127.0.0.1:$route" --routes "$routes" -js
    local line
    line=$(wait_line "$LOGS/nats-$name.log" "Listening for route connections on" "nats-server $name" \
      "$PIDS/nats-$name.pid")
    [ "$i" = 0 ] && route0=${line##*:}
    line=$(grep -m1 -E "Listening for client connections on" "$LOGS/nats-$name.log")
    nats_urls+="${nats_urls:+,}nats://127.0.0.1:${line##*:}"
    line=$(grep -m1 -E "Starting http monitor on" "$LOGS/nats-$name.log")
    monitors+="${monitors:+,}http://127.0.0.1:${line##*:}"
  done

  # trainwatch nodes; each waits for NATS's metadata leader when it joins.
  local tw_urls="" tw_grpc=""
  for i in 0 1 2; do
    local name="tw$i" http=0
    [ "$PORT" != 0 ] && http=$((PORT + i))
    start "$name" "$LOGS/$name.log" "$BIN" serve --data-dir "$DIR/$name" --listen "127.0.0.1:$http" \
      --grpc-listen 127.0.0.1:0 --nats "$nats_urls" --node-name "$name" --partitions "$PARTITIONS" \
      --cluster-lease "$LEASE"
    local line
    line=$(wait_line "$LOGS/$name.log" "^trainwatch is serving " "trainwatch node $name" "$PIDS/$name.pid")
    # "trainwatch is serving http://127.0.0.1:PORT (gRPC 127.0.0.1:PORT, ..."
    local url grpc
    url=$(sed -E 's/^trainwatch is serving (\S+) .*/\1/' <<< "$line")
    grpc=$(sed -E 's/^.*\(gRPC (over TLS )?([^ ,]+).*/\2/' <<< "$line")
    tw_urls+="${tw_urls:+,}$url"
    tw_grpc+="${tw_grpc:+,}$grpc"
  done
  trap - ERR

  cat > "$DIR/cluster.env" <<EOF
TW_URLS=$tw_urls
TW_GRPC=$tw_grpc
NATS_URLS=$nats_urls
NATS_MONITOR=$monitors
EOF
  echo "cluster: 3 nats-server (JetStream R3) and 3 trainwatch nodes on 127.0.0.1, data in $DIR"
  echo "  NATS:        ${nats_urls//,/ }"
  echo "  monitoring:  ${monitors//,/ }   (/jsz?streams=true shows the stream's leader)"
  local n=0 u
  for u in ${tw_urls//,/ }; do
    echo "  trainwatch:  tw$n  $u   (info: $u/api/v1/info)"
    n=$((n + 1))
  done
  echo "  logs in $LOGS; scripts/cluster.sh down (make cluster-down) stops them"

  if [ "$DEMO" != 0 ] && [ -f sdk/python/examples/demo.py ]; then
    local first=${tw_urls%%,*}
    start demo "$LOGS/demo.log" env PYTHONPATH="$BUILD_DIR/python" "$PYTHON" sdk/python/examples/demo.py \
      --server "$first"
    echo "  demo run:    writing to $first (project demo; its log: $LOGS/demo.log)"
  fi
}

# stop NAME: SIGTERM, then SIGKILL if it has not exited after 30 s.
stop() {
  local f="$PIDS/$1.pid" pid
  [ -e "$f" ] || return 0
  if pid_alive "$f"; then
    read -r pid _ < "$f"
    kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + 30))
    while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "cluster: $1 (pid $pid) did not stop in 30 s: killed" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
    echo "stopped $1 (pid $pid)"
  fi
  rm -f "$f"
}

down() {
  [ -d "$PIDS" ] || { echo "cluster: nothing runs from $DIR"; return 0; }
  # The demo and the trainwatch nodes first, while NATS is up: a node leaves the cluster cleanly.
  stop demo
  local i
  for i in 0 1 2; do stop "tw$i" & done
  wait
  for i in 0 1 2; do stop "nats-n$i"; done
}

status() {
  local f any=1
  for f in "$PIDS"/*.pid; do
    [ -e "$f" ] || continue
    if pid_alive "$f"; then echo "$(basename "$f" .pid): running (pid $(cut -d' ' -f1 "$f"))"; any=0
    else echo "$(basename "$f" .pid): not running"; fi
  done
  [ -f "$DIR/cluster.env" ] && [ "$any" = 0 ] && cat "$DIR/cluster.env"
  return "$any"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  *) echo "usage: scripts/cluster.sh up|down|status (settings: see the top of this file)" >&2; exit 2 ;;
esac
