#!/usr/bin/python3
"""Distributed runs (issue 16, docs/distributed.md). Prints figures only.

(a) `--part logging`: R simulated ranks x M metrics of one run, each rank logging one step per
    second (its own batch, with a heartbeat every 10 s, as the SDK sends them; a request carries
    `--ranks-per-request` ranks' batches) through one server for `--seconds`. Reports the server's
    CPU (seconds and share of one core), its RSS, and the bytes per point on disk after a
    checkpoint beside the same number of points written by one rank (a run that is not distributed).
(b) `--part aggregate`: one metric, S steps x R ranks, written in bulk; then GET /api/v1/series/ranks
    with `--buckets` buckets, `--queries` times: p50/p99 latency (and the same for rank_matrix).

    /usr/bin/python3 bench/ranks_bench.py --build-dir build [--part logging,aggregate]
        [--ranks 1024 --metrics 50 --seconds 600] [--steps 10000 --buckets 1000 --queries 30]
"""

import argparse
import http.client
import importlib.util
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import benchlib

PROTO_DIR = os.path.join(benchlib.REPO, "proto")
T0 = 1767225600.0


def load_pb():
    out = tempfile.mkdtemp(prefix="trainwatch_pb_")
    subprocess.run(["protoc", "-I", PROTO_DIR, "--python_out", out, "trainwatch/v1/ingest.proto"], check=True)
    spec = importlib.util.spec_from_file_location(
        "ranks_bench_ingest_pb2", os.path.join(out, "trainwatch", "v1", "ingest_pb2.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    shutil.rmtree(out, ignore_errors=True)
    return module


class Client:
    """One keep-alive HTTP connection to the server."""

    def __init__(self, server):
        host, port = server.http.split(":")
        self.conn = http.client.HTTPConnection(host, int(port), timeout=600)

    def post(self, body):
        self.conn.request("POST", "/api/v1/write", body, {"Content-Type": "application/x-protobuf"})
        r = self.conn.getresponse()
        data = r.read()
        if r.status != 200:
            raise RuntimeError(f"write failed: {r.status} {data[:300]!r}")

    def get(self, path):
        self.conn.request("GET", path)
        r = self.conn.getresponse()
        data = r.read()
        if r.status != 200:
            raise RuntimeError(f"GET {path}: {r.status} {data[:300]!r}")
        return data


def metric_names(m):
    return [f"train/metric_{i:02d}" for i in range(m)]


def value(rank, metric, step):
    return 1.0 / (1 + step) + 0.001 * rank + 0.01 * metric + ((step * 31 + rank * 7 + metric) % 13) * 1e-4


def rank_batch(pb, request, run, rank, world, names, steps, heartbeat):
    batch = request.runs.add()
    batch.project = "ranks"
    batch.run = run
    if rank is not None:
        batch.rank.rank = rank
        batch.rank.world_size = world
        batch.rank.local_rank = rank % 8
        batch.rank.host = f"node-{rank // 8:04d}"
    batch.steps.extend(steps)
    batch.times.extend(T0 + s + (rank or 0) * 1e-4 for s in steps)
    for m, name in enumerate(names):
        col = batch.metrics.add()
        col.name = name
        col.values.extend(value(rank or 0, m, s) for s in steps)
    if heartbeat:
        batch.heartbeat.interval_seconds = 10
    return batch


def disk_after_stop(data_dir):
    """Apparent bytes of the store (RocksDB) and of the write-ahead log."""
    s = benchlib.store_sizes(data_dir)
    return s["store"][0], s["wal"][0]


def part_logging(args, pb):
    names = metric_names(args.metrics)
    print(f"## (a) {args.ranks} ranks x {args.metrics} metrics, 1 step/s each, for {args.seconds} s "
          f"({args.ranks * args.metrics:,} points/s; {args.ranks_per_request} ranks per request)", flush=True)
    data = benchlib.scratch_dir(args, "ranks-logging")
    server = benchlib.Server(args, data).start()
    rss_empty = server.rss()
    clients = [Client(server) for _ in range(args.senders)]
    cpu0, t_start = server.cpu(), time.monotonic()
    busy0 = benchlib.machine_busy_seconds()
    client_cpu0 = time.process_time()  # this driver's own CPU (every thread): does the client keep up?
    late = 0
    slowest_tick = 0.0  # seconds from a tick's start to its last request answered
    groups = [list(range(i, min(args.ranks, i + args.ranks_per_request)))
              for i in range(0, args.ranks, args.ranks_per_request)]
    # One request per group of ranks, built once; each tick rewrites its step, times and values in
    # place (the client's cost stays well under a second per tick).
    bases = [[0.001 * rank + 0.01 * m + ((rank * 7 + m) % 13) * 1e-4 for m in range(args.metrics)]
             for rank in range(args.ranks)]
    requests = []
    for g in groups:
        request = pb.WriteRequest()
        for rank in g:
            rank_batch(pb, request, "job", rank, args.ranks, names, [0], heartbeat=False)
        requests.append((g, request))
    for step in range(args.seconds):
        tick = t_start + step
        now = time.monotonic()
        if now < tick:
            time.sleep(tick - now)  # pacing the simulated training loop (a benchmark, not a test)
        elif now - tick > 1:
            late += 1
        bodies = []
        trend = 1.0 / (1 + step) + (step % 13) * 1e-4
        for g, request in requests:
            for rank, batch in zip(g, request.runs):
                batch.steps[0] = step
                batch.times[0] = T0 + step + rank * 1e-4
                for col, base in zip(batch.metrics, bases[rank]):
                    col.values[0] = base + trend
                if step % 10 == 0:
                    batch.heartbeat.interval_seconds = 10
                else:
                    batch.ClearField("heartbeat")
            bodies.append(request.SerializeToString())
        # The groups go out over `senders` connections at once, as separate processes would.
        threads = []
        for i, client in enumerate(clients):
            mine = bodies[i::len(clients)]
            t = threading.Thread(target=lambda c=client, b=mine: [c.post(x) for x in b])
            t.start()
            threads.append(t)
        for t in threads:
            t.join()
        slowest_tick = max(slowest_tick, time.monotonic() - max(tick, now))
        if (step + 1) % 60 == 0 or step + 1 == args.seconds:
            cpu = server.cpu() - cpu0
            wall = time.monotonic() - t_start
            print(f"  t={wall:6.0f} s  steps {step + 1:5d}  server CPU {cpu:7.1f} s ({100 * cpu / wall:5.1f}% of a core)"
                  f"  RSS {benchlib.mb(server.rss())}", flush=True)
    wall = time.monotonic() - t_start
    cpu = server.cpu() - cpu0
    others = (benchlib.machine_busy_seconds() - busy0 - cpu) / wall
    rss = server.rss()
    points = args.ranks * args.metrics * args.seconds
    ranks_json = Client(server).get("/api/v1/ranks?project=ranks&run=job")
    print(f"  server CPU {cpu:.1f} s over {wall:.0f} s = {100 * cpu / wall:.1f}% of one core "
          f"({points / cpu if cpu else 0:,.0f} points per CPU-second); others on the machine {others:.2f} cores; "
          f"ticks late by > 1 s: {late}", flush=True)
    print(f"  driver: {args.seconds} ticks in {wall:.0f} s = {args.seconds / wall:.2f} steps/s; its own CPU "
          f"{1000 * (time.process_time() - client_cpu0) / args.seconds:.0f} ms per tick; slowest tick "
          f"{1000 * slowest_tick:.0f} ms from its start to its last answer", flush=True)
    print(f"  RSS {benchlib.mb(rss)} ({benchlib.mb(rss - rss_empty)} over the empty server; "
          f"{(rss - rss_empty) / (args.ranks * args.metrics):,.0f} bytes per (rank, metric) series with its head)", flush=True)
    print(f"  /api/v1/ranks answer: {len(ranks_json):,} bytes", flush=True)
    server.stop()  # checkpoint: every head sealed
    store, wal = disk_after_stop(data)
    print(f"  disk after shutdown: store {benchlib.mb(store)} = {store / points:.2f} bytes per point "
          f"(+ WAL {benchlib.mb(wal)})", flush=True)

    # The same points from one rank: a run that is not distributed, ranks x seconds steps; step
    # r * seconds + s holds the values rank r logged at step s (the same bits: a rank's early steps
    # change faster than a long run's late ones and compress worse, so other values would compare
    # the data, not the per-series costs).
    data1 = benchlib.scratch_dir(args, "ranks-one-rank")
    server = benchlib.Server(args, data1).start()
    client = Client(server)
    steps_total = args.ranks * args.seconds
    chunk = 1000
    trends = [1.0 / (1 + s) + (s % 13) * 1e-4 for s in range(args.seconds)]
    for start in range(0, steps_total, chunk):
        steps = range(start, min(steps_total, start + chunk))
        request = pb.WriteRequest()
        batch = rank_batch(pb, request, "single", None, 0, [], steps, False)
        for m, name in enumerate(names):
            col = batch.metrics.add()
            col.name = name
            col.values.extend(bases[t // args.seconds][m] + trends[t % args.seconds] for t in steps)
        client.post(request.SerializeToString())
    server.stop()
    store1, wal1 = disk_after_stop(data1)
    print(f"  the same {points:,} points (the same values) from one rank ({steps_total:,} steps x {args.metrics} metrics): "
          f"store {benchlib.mb(store1)} = {store1 / points:.2f} bytes per point; distributed/one rank = "
          f"{store / store1:.2f}x", flush=True)


def part_aggregate(args, pb):
    print(f"## (b) across-rank aggregate: 1 metric x {args.steps:,} steps x {args.ranks} ranks "
          f"({args.steps * args.ranks:,} points) into {args.buckets} buckets", flush=True)
    data = benchlib.scratch_dir(args, "ranks-aggregate")
    server = benchlib.Server(args, data).start()
    client = Client(server)
    t0 = time.monotonic()
    for group in range(0, args.ranks, 16):
        request = pb.WriteRequest()
        for rank in range(group, min(args.ranks, group + 16)):
            rank_batch(pb, request, "agg", rank, args.ranks, ["loss"], range(args.steps), False)
        client.post(request.SerializeToString())
    print(f"  written in {time.monotonic() - t0:.1f} s", flush=True)
    benchlib.wait_idle(server)
    for label, path in (
            ("series/ranks", f"/api/v1/series/ranks?project=ranks&run=agg&metric=loss&buckets={args.buckets}"),
            ("series/rank_matrix", f"/api/v1/series/rank_matrix?project=ranks&run=agg&metric=loss&buckets={args.buckets}")):
        times, cpu0 = [], server.cpu()
        size = 0
        for _ in range(args.queries):
            q0 = time.monotonic()
            size = len(client.get(path))
            times.append((time.monotonic() - q0) * 1000)
        cpu = (server.cpu() - cpu0) / args.queries * 1000
        print(f"  {label:18} {benchlib.percentiles(times)}; server CPU {cpu:.0f} ms per query; "
              f"answer {size:,} bytes", flush=True)
    server.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    benchlib.add_common_args(parser)
    parser.add_argument("--part", default="logging,aggregate")
    parser.add_argument("--ranks", type=int, default=1024)
    parser.add_argument("--metrics", type=int, default=50)
    parser.add_argument("--seconds", type=int, default=600, help="(a) how long the ranks log (1 step/s)")
    parser.add_argument("--ranks-per-request", type=int, default=64)
    parser.add_argument("--senders", type=int, default=4, help="(a) concurrent connections")
    parser.add_argument("--steps", type=int, default=10_000, help="(b) steps per rank")
    parser.add_argument("--buckets", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=30)
    args = parser.parse_args()
    pb = load_pb()
    parts = args.part.split(",")
    if "logging" in parts:
        part_logging(args, pb)
    if "aggregate" in parts:
        part_aggregate(args, pb)


if __name__ == "__main__":
    sys.exit(main())
