#!/usr/bin/python3
"""The Grafana "Training overview" example panel's InfluxQL query, trainwatch beside InfluxDB 1.6
(Debian's influxd) on the same points, side by side in one session; prints p50/p99 latencies.

    SELECT mean("value") FROM "training_metrics" WHERE ("metric_name" = 'loss') AND $timeFilter
    GROUP BY time($__interval) fill(null)

with $timeFilter the data's whole time range and $__interval what Grafana picks for a 1,000-pixel
panel over it (range / 1000, rounded up to a whole second). Sizes (--sizes):

    25k   1 run  x 25,000 steps of `loss`: the query averages 25,000 points
    10m   400 runs x 25,000 steps of `loss`: the query averages all 10,000,000 points
    1m    40 runs x 25,000 steps (a smaller stand-in when 10m takes too long to load here)

Both servers are loaded with the same line protocol (measurement training_metrics, tags
metric_name and run, fields value and step, one step per second), batches of 5,000 lines POSTed to
/write?db=bench&precision=s; trainwatch maps it to runs and metrics (docs/influx.md) and answers
/query from its store. The answers are compared (same buckets, same means to 1e-9 relative) before
timing. Queries alternate between the two servers; --repeat (25k) or --repeat-large (1m, 10m)
times per server, after 2 warm-ups each.

    TRAINWATCH_BENCH_DEPS=1 scripts/install-deps.sh     # installs influxdb
    /usr/bin/python3 bench/influxql_panel_bench.py --build-dir build --sizes 25k,10m
"""

import argparse
import http.client
import json
import math
import os
import shutil
import sys
import time
import urllib.parse

import benchlib
from influx_compare_bench import Influxd

SIZES = {"25k": 1, "1m": 40, "10m": 400}  # runs of 25,000 steps
STEPS = 25_000
T0 = 1_767_225_600  # unix seconds of step 0
QUERY = ('SELECT mean("value") FROM "training_metrics" WHERE ("metric_name" = \'loss\') AND $timeFilter '
         'GROUP BY time($__interval) fill(null)')


def lines(runs, batch=5000):
    """Line protocol batches (bytes) for `runs` runs of STEPS steps of loss."""
    out = []
    for r in range(runs):
        scale = 1.0 + r / runs
        for s in range(STEPS):
            out.append("training_metrics,metric_name=loss,run=run_%03d step=%di,value=%r %d\n"
                       % (r, s, scale / (1 + s) + (s % 7) * 1e-3, T0 + s))
            if len(out) == batch:
                yield "".join(out).encode()
                out = []
    if out:
        yield "".join(out).encode()


def post_all(host, port, runs):
    conn = http.client.HTTPConnection(host, port, timeout=600)
    t0 = time.monotonic()
    for body in lines(runs):
        conn.request("POST", "/write?db=bench&precision=s", body, {"Content-Type": "text/plain"})
        r = conn.getresponse()
        text = r.read()
        if r.status != 204:
            sys.exit(f"write to {host}:{port} failed: {r.status} {text[:200]!r}")
    conn.close()
    return time.monotonic() - t0


def panel_query():
    interval = math.ceil(STEPS / 1000)
    return (QUERY.replace("$timeFilter", "time >= %ds AND time <= %ds" % (T0, T0 + STEPS - 1))
            .replace("$__interval", "%ds" % interval))


class Client:
    def __init__(self, name, host, port):
        self.name = name
        self.host, self.port = host, port
        self.ms = []

    def query(self, q):
        """One query on a fresh connection (a kept-alive one may be closed by the server while the
        other server answers a long query); the time includes the loopback connect."""
        path = "/query?" + urllib.parse.urlencode({"db": "bench", "epoch": "ms", "q": q})
        conn = http.client.HTTPConnection(self.host, self.port, timeout=600)
        t0 = time.perf_counter()
        conn.request("GET", path)
        r = conn.getresponse()
        body = r.read()
        elapsed = (time.perf_counter() - t0) * 1000
        conn.close()
        if r.status != 200:
            sys.exit(f"{self.name}: HTTP {r.status} {body[:300]!r}")
        result = json.loads(body)["results"][0]
        if "error" in result:
            sys.exit(f"{self.name}: {result['error']}")
        return result.get("series", []), elapsed


def same_answer(a, b):
    (sa,), (sb,) = a, b
    if len(sa["values"]) != len(sb["values"]):
        return f"{len(sa['values'])} vs {len(sb['values'])} buckets"
    for (ta, va), (tb, vb) in zip(sa["values"], sb["values"]):
        if ta != tb or (va is None) != (vb is None) or (va is not None and abs(va - vb) > 1e-9 * abs(vb)):
            return f"bucket {ta}: {va} vs {tb}: {vb}"
    return None


def one_size(args, size):
    runs = SIZES[size]
    points = runs * STEPS
    root = benchlib.scratch_dir(args, f"panel-{size}")
    os.makedirs(os.path.join(root, "influx"))
    influx = Influxd(os.path.join(root, "influx")).start()
    tw = benchlib.Server(args, os.path.join(root, "trainwatch")).start()
    try:
        host, port = tw.http.split(":")
        tw_load = post_all(host, int(port), runs)
        in_load = post_all("127.0.0.1", influx.http_port, runs)
        benchlib.wait_idle(tw)
        influx.settle(quiet_seconds=12)
        print(f"  {size}: {points:,} points ({runs} runs x {STEPS:,} steps of loss); loaded in "
              f"trainwatch {tw_load:.1f} s, InfluxDB {in_load:.1f} s", flush=True)
        q = panel_query()
        clients = [Client("trainwatch", host, int(port)), Client("InfluxDB 1.6", "127.0.0.1", influx.http_port)]
        answers = [c.query(q)[0] for c in clients]
        diff = same_answer(*answers)
        if diff:
            sys.exit(f"the answers differ: {diff}")
        buckets = len(answers[0][0]["values"])
        for c in clients:
            c.query(q)
        for _ in range(args.repeat if points <= 100_000 else args.repeat_large):
            for c in clients:
                c.ms.append(c.query(q)[1])
        print(f"    query: {q}")
        print(f"    {buckets} buckets, answers identical")
        for c in clients:
            v = sorted(c.ms)
            print(f"    {c.name:13s} p50 {benchlib.nearest_rank(v, 0.5):9.2f} ms   p99 "
                  f"{benchlib.nearest_rank(v, 0.99):9.2f} ms   (n={len(v)})", flush=True)
        p50 = [benchlib.nearest_rank(sorted(c.ms), 0.5) for c in clients]
        print(f"    trainwatch / InfluxDB p50: {p50[0] / p50[1]:.2f}x", flush=True)
    finally:
        tw.stop()
        influx.stop()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    benchlib.add_common_args(parser)
    parser.add_argument("--sizes", default="25k,10m", help="comma-separated: 25k, 1m, 10m")
    parser.add_argument("--repeat", type=int, default=50, help="timed queries per server at 25k")
    parser.add_argument("--repeat-large", type=int, default=10, help="timed queries per server at 1m and 10m")
    parser.add_argument("--keep", action="store_true", help="keep the scratch data directories")
    args = parser.parse_args()
    if not shutil.which("influxd"):
        print("influxd not installed (TRAINWATCH_BENCH_DEPS=1 scripts/install-deps.sh): skipped")
        return
    print("InfluxQL panel query, trainwatch vs InfluxDB 1.6 (same points, alternating queries)")
    others0, t0 = benchlib.machine_busy_seconds(), time.monotonic()
    for size in args.sizes.split(","):
        one_size(args, size.strip())
    print(f"  others: {(benchlib.machine_busy_seconds() - others0) / (time.monotonic() - t0):.2f} cores busy on average "
          "(all processes, these servers included)")


if __name__ == "__main__":
    main()
