#!/usr/bin/python3
"""Ingest throughput (gRPC and HTTP NDJSON, durable acks) and bytes per point on disk after sealing.

For each transport and round: a fresh server, the whole workload pushed by bin/ingest_bench, then
SIGTERM (drain + checkpoint: every head sealed into a chunk) and the sizes of store/ (RocksDB) and
wal/. Then the server is started and stopped once more on the same directory: RocksDB recovery
flushes the memtable it left in its own log into an SST, which is the settled size short of a full
compaction (the server has no compaction endpoint). Per-metric bits per value come from
bin/encoding_bench on the same workload (the codec alone, no RocksDB). Prints figures only.

    /usr/bin/python3 bench/ingest_disk_bench.py --preset 1m
"""

import argparse
import os
import subprocess

import benchlib


def ingest_cmd(args, server, transport, workload):
    if transport == "lp":
        # The workload's InfluxDB line protocol to trainwatch's InfluxDB /write (docs/influx.md),
        # as the InfluxDB round posts it: the same files, batches and connections.
        points = benchlib.workload_meta(workload)["points"]
        return [benchlib.binary(args, "ingest_bench"), "--transport", "files", "--target", server.http,
                "--files", os.path.join(workload, "influx_lp"), "--path", "/write?db=bench&precision=ns",
                "--points", str(points), "--connections", str(args.connections), "--server-pid", str(server.pid),
                "--label", "trainwatch-lp"]
    cmd = [benchlib.binary(args, "ingest_bench"), "--transport", transport, "--workload",
           os.path.join(workload, "workload.jsonl"), "--server-pid", str(server.pid)]
    if transport == "grpc":
        cmd += ["--target", server.grpc, "--streams", str(args.streams), "--inflight", str(args.inflight),
                "--rows-per-batch", str(args.rows_per_batch)]
    else:
        cmd += ["--target", server.http, "--connections", str(args.connections),
                "--body-bytes", str(args.body_bytes)]
    return cmd


def report_sizes(label, sizes, points):
    store_app, store_alloc, store_files = sizes["store"]
    sst_app = sizes["store_sst"][0]
    rlog_app = sizes["store_rocks_log"][0]
    wal_app, wal_alloc, wal_files = sizes["wal"]
    print(f"  {label}:")
    print(f"    store/  {store_app / points:6.3f} B/pt  ({benchlib.mb(store_app)} in {store_files} files: "
          f"SST {benchlib.mb(sst_app)}, RocksDB log {benchlib.mb(rlog_app)}; allocated {benchlib.mb(store_alloc)})")
    print(f"    wal/    {wal_app / points:6.3f} B/pt  ({benchlib.mb(wal_app)} in {wal_files} segments; "
          f"allocated {benchlib.mb(wal_alloc)})")
    print(f"    total   {(store_app + wal_app) / points:6.3f} B/pt")


def one_round(args, workload, points, transport, round_no):
    data = benchlib.scratch_dir(args, f"ingest-{transport}-{round_no}")
    server = benchlib.Server(args, data).start()
    cpu0 = server.cpu()
    result = benchlib.run_client(ingest_cmd(args, server, transport, workload))
    waited = benchlib.wait_idle(server)
    settled_cpu = server.cpu() - cpu0
    result["settled_cpu_s"] = settled_cpu
    print(f"  with background sealing: {settled_cpu:.2f} s server CPU (idle {waited:.1f} s after the last ack) "
          f"->  {points / settled_cpu / 1e6:.3f} M points per server CPU-second")
    stop_s, stop_cpu = server.stop()
    print(f"  shutdown (checkpoint) {stop_s:.2f} s wall, {stop_cpu:.2f} s server CPU")
    after_stop = benchlib.store_sizes(data)
    report_sizes("after SIGTERM (checkpoint)", after_stop, points)
    again = benchlib.Server(args, data).start()
    restart_s = again.start_seconds
    again.stop()
    settled = benchlib.store_sizes(data)
    report_sizes(f"after a restart cycle (start {restart_s:.2f} s; RocksDB log flushed to SST)", settled, points)
    result["store_bytes_per_point"] = settled["store"][0] / points
    result["disk_bytes_per_point"] = settled["store"][1] / points  # allocated
    result["store_bytes_per_point_at_stop"] = after_stop["store"][0] / points
    result["wal_bytes_per_point"] = settled["wal"][0] / points
    return result


def encoding_figures(args, workload):
    """Echoes encoding_bench's per-metric table for the same workload (if it is built)."""
    path = os.path.join(os.path.abspath(args.build_dir), "bin", "encoding_bench")
    if not os.access(path, os.X_OK):
        print("# encoding_bench not built: no per-metric bits per value")
        return
    print(f"\n## per-metric bits per value (codec only): encoding_bench {workload}/workload.jsonl --repeat 1",
          flush=True)
    subprocess.run([path, os.path.join(workload, "workload.jsonl"), "--repeat", "1"], check=False)


def add_ingest_args(parser):
    """The client's shape; influx_compare_bench.py takes the same."""
    parser.add_argument("--streams", type=int, default=4)
    parser.add_argument("--inflight", type=int, default=8)
    parser.add_argument("--rows-per-batch", type=int, default=1000)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--body-bytes", type=int, default=4 << 20)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    benchlib.add_common_args(parser)
    add_ingest_args(parser)
    parser.add_argument("--transports", default="grpc,http")
    parser.add_argument("--rounds", type=int, default=1, help="interleaved rounds of every transport")
    parser.add_argument("--no-encoding", action="store_true", help="skip encoding_bench's table")
    args = parser.parse_args()

    workload = benchlib.ensure_workload(args)
    points = benchlib.workload_meta(workload)["points"]
    print(f"## ingest and disk, preset {args.preset} ({points:,} points), targets: gRPC >= 3M points/s, "
          f"HTTP >= 1M points/s, <= 3.0 bytes/point", flush=True)
    results = []
    for round_no in range(args.rounds):
        for transport in args.transports.split(","):
            print(f"\n# round {round_no + 1}, {transport}", flush=True)
            results.append(one_round(args, workload, points, transport, round_no))

    print("\n## summary")
    print("(Mpts/CPU-s: during the acks; +seal: counting the background sealing that finished after)")
    print(f"{'transport':9} {'wall s':>7} {'Mpts/s':>7} {'srv CPU s':>9} {'Mpts/CPU-s':>10} {'+seal':>6} "
          f"{'others':>6} {'ack p99 ms':>10} {'store B/pt':>10} {'WAL B/pt':>8}")
    for r in results:
        print(f"{r['transport']:9} {r['wall_s']:7.2f} {r['points_per_s'] / 1e6:7.3f} {r['server_cpu_s']:9.2f} "
              f"{r['points_per_server_cpu_s'] / 1e6:10.3f} {r['points_sent'] / r['settled_cpu_s'] / 1e6:6.3f} "
              f"{r['other_cpu_s'] / r['wall_s']:6.2f} {r['ack_p99_ms']:10.1f} "
              f"{r['store_bytes_per_point']:10.3f} {r['wal_bytes_per_point']:8.3f}")
    print("(others: cores used on average by other processes on the machine during the run)")
    if not args.no_encoding:
        encoding_figures(args, workload)


if __name__ == "__main__":
    main()
