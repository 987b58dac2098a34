#!/usr/bin/python3
"""trainwatch beside InfluxDB 1.6 (Debian's influxd) on the same workload, interleaved in one session.

InfluxDB: a private influxd (temporary config and directories, loopback ports, WAL fsync on every
write as shipped), the workload's influx_lp/ batches of 5,000 lines POSTed to
/write?db=bench&precision=ns by bin/ingest_bench over 2 keep-alive connections. Its cache snapshot
and full compaction are made to run within seconds (cache-snapshot-write-cold-duration 2s,
compact-full-write-cold-duration 10s) and the data directory is measured once they are done;
the WAL apart. trainwatch: as in ingest_disk_bench.py (gRPC and HTTP NDJSON, store measured after a
checkpoint and a restart). Points are the workload's R x M x S (the line protocol's extra `step`
field is not counted). trainwatch's `lp` round posts the same line protocol files to its own
InfluxDB /write (docs/influx.md). Prints figures only.

    TRAINWATCH_BENCH_DEPS=1 scripts/install-deps.sh     # installs influxdb
    /usr/bin/python3 bench/influx_compare_bench.py --preset 1m
"""

import argparse
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.parse
import urllib.request

import benchlib
import ingest_disk_bench

CONFIG = """reporting-disabled = true
bind-address = "127.0.0.1:{rpc_port}"
[meta]
  dir = "{root}/meta"
  logging-enabled = false
[data]
  dir = "{root}/data"
  wal-dir = "{root}/wal"
  index-version = "inmem"
  query-log-enabled = false
  cache-snapshot-write-cold-duration = "2s"
  compact-full-write-cold-duration = "10s"
[monitor]
  store-enabled = false
[subscriber]
  enabled = false
[continuous_queries]
  enabled = false
[retention]
  enabled = false
[http]
  bind-address = "127.0.0.1:{http_port}"
  log-enabled = false
  pprof-enabled = false
  max-body-size = 0
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Influxd:
    def __init__(self, root):
        self.root = root
        self.http_port, rpc_port = free_port(), free_port()
        self.conf = os.path.join(root, "influxdb.conf")
        with open(self.conf, "w") as f:
            f.write(CONFIG.format(root=root, http_port=self.http_port, rpc_port=rpc_port))

    def start(self):
        self.log = open(os.path.join(self.root, "influxd.log"), "wb")
        self.proc = subprocess.Popen([shutil.which("influxd"), "-config", self.conf], stdout=self.log,
                                     stderr=subprocess.STDOUT)
        for _ in range(300):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/ping", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        query = urllib.parse.urlencode({"q": "CREATE DATABASE bench"})
        urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/query", data=query.encode()).read()
        return self

    def settle(self, quiet_seconds=15, limit=600):
        """Waits until the WAL is snapshotted and the TSM files have not changed for quiet_seconds
        (longer than compact-full-write-cold-duration); returns the seconds waited."""
        t0 = time.monotonic()
        last, since = None, time.monotonic()
        while time.monotonic() - t0 < limit:
            time.sleep(1)
            state = (benchlib.dir_bytes(os.path.join(self.root, "data")),
                     benchlib.dir_bytes(os.path.join(self.root, "wal")))
            if state != last:
                last, since = state, time.monotonic()
            elif time.monotonic() - since >= quiet_seconds:
                break
        return time.monotonic() - t0

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait()
        self.log.close()


def influx_round(args, workload, points, round_no):
    root = benchlib.scratch_dir(args, f"influx-{round_no}")
    server = Influxd(root).start()
    cpu0 = benchlib.cpu_seconds(server.proc.pid)
    result = benchlib.run_client([
        benchlib.binary(args, "ingest_bench"), "--transport", "files", "--target", f"127.0.0.1:{server.http_port}",
        "--files", os.path.join(workload, "influx_lp"), "--path", "/write?db=bench&precision=ns",
        "--points", str(points), "--connections", str(args.influx_connections),
        "--server-pid", str(server.proc.pid), "--label", "influxdb-1.6"])
    waited = server.settle()
    result["settled_cpu_s"] = benchlib.cpu_seconds(server.proc.pid) - cpu0
    data_bytes, data_alloc, data_files = benchlib.dir_bytes(os.path.join(root, "data"))
    tsm_bytes = benchlib.dir_bytes(os.path.join(root, "data"), lambda n: n.endswith(".tsm"))[0]
    wal_bytes = benchlib.dir_bytes(os.path.join(root, "wal"))[0]
    server.stop()
    # _series/ segments are sparse 4 MiB preallocations: what they take is the allocated size.
    result["disk_bytes_per_point"] = data_alloc / points
    result["wal_bytes_per_point"] = wal_bytes / points
    print(f"  settled after {waited:.0f} s (snapshot + full compaction), {result['settled_cpu_s']:.2f} s CPU in all "
          f"->  {points / result['settled_cpu_s'] / 1e6:.3f} M points per server CPU-second")
    print(f"    data/  {data_alloc / points:6.3f} B/pt allocated ({benchlib.mb(data_alloc)} in {data_files} files; "
          f"TSM {tsm_bytes / points:.3f} B/pt; apparent size {benchlib.mb(data_bytes)} with sparse _series/)")
    print(f"    wal/   {wal_bytes / points:6.3f} B/pt  ({benchlib.mb(wal_bytes)})", flush=True)
    result["system"] = "influxdb-1.6"
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    benchlib.add_common_args(parser)
    ingest_disk_bench.add_ingest_args(parser)
    parser.add_argument("--rounds", type=int, default=1, help="interleaved rounds (influx, then trainwatch)")
    parser.add_argument("--influx-connections", type=int, default=2)
    parser.add_argument("--transports", default="grpc,http,lp",
                        help="trainwatch transports to run (lp: the same line protocol files to its /write)")
    args = parser.parse_args()
    if shutil.which("influxd") is None:
        print("## influx comparison skipped: influxd not installed (TRAINWATCH_BENCH_DEPS=1 scripts/install-deps.sh)")
        return
    workload = benchlib.ensure_workload(args, lp=True)
    points = benchlib.workload_meta(workload)["points"]
    version = subprocess.run(["influxd", "version"], capture_output=True, text=True).stdout.strip()
    print(f"## trainwatch vs {version}, preset {args.preset} ({points:,} points), {args.rounds} interleaved round(s)",
          flush=True)
    results = []
    for round_no in range(args.rounds):
        print(f"\n# round {round_no + 1}: influxdb", flush=True)
        results.append(influx_round(args, workload, points, round_no))
        for transport in args.transports.split(","):
            print(f"\n# round {round_no + 1}: trainwatch {transport}", flush=True)
            r = ingest_disk_bench.one_round(args, workload, points, transport, round_no)
            r["system"] = "trainwatch"
            r["transport"] = transport  # "lp" posts files, which the client reports as "files"
            results.append(r)

    print("\n## summary (per server CPU-second figures include work that finished after the last ack; "
          "disk: allocated bytes of the data directory, WAL apart)")
    print(f"{'system':13} {'transport':9} {'Mpts/s':>7} {'Mpts/CPU-s':>10} {'others':>6} {'disk B/pt':>9} {'WAL B/pt':>8}")
    for r in results:
        print(f"{r['system']:13} {r['transport']:9} {r['points_per_s'] / 1e6:7.3f} "
              f"{points / r['settled_cpu_s'] / 1e6:10.3f} {r['other_cpu_s'] / r['wall_s']:6.2f} "
              f"{r['disk_bytes_per_point']:9.3f} {r['wal_bytes_per_point']:8.3f}")
    influx = [r for r in results if r["system"] == "influxdb-1.6"]
    mean = lambda rows, key: sum(key(r) for r in rows) / len(rows)
    per_cpu = lambda r: points / r["settled_cpu_s"]
    for transport in args.transports.split(","):
        ours = [r for r in results if r["system"] == "trainwatch" and r["transport"] == transport]
        print(f"ratio trainwatch {transport} / influxdb (mean of rounds): ingest wall "
              f"{mean(ours, lambda r: r['points_per_s']) / mean(influx, lambda r: r['points_per_s']):.2f}x, "
              f"per server CPU-second {mean(ours, per_cpu) / mean(influx, per_cpu):.2f}x, bytes per point "
              f"{mean(ours, lambda r: r['disk_bytes_per_point']) / mean(influx, lambda r: r['disk_bytes_per_point']):.2f}x")


if __name__ == "__main__":
    main()
