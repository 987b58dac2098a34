#!/usr/bin/python3
"""Resident memory (VmRSS) of the server holding many series: 100 runs x 1,000 metrics = 100k
series with a few points each, written over gRPC by bin/ingest_bench. Reports RSS empty, after the
writes (once idle), and after a restart (series loaded back from the store). Prints figures only.

    /usr/bin/python3 bench/memory_bench.py [--runs 100 --metrics 1000 --steps 3]
"""

import argparse
import urllib.request

import benchlib


def series_gauge(server):
    with urllib.request.urlopen(f"http://{server.http}/metrics") as r:
        for line in r.read().decode().splitlines():
            if line.startswith("trainwatch_series "):
                return int(float(line.split()[1]))
    return -1


def report(label, server, baseline, series):
    rss = server.rss()
    per = (rss - baseline) / series if series else 0
    print(f"  {label:34} RSS {benchlib.mb(rss):>10}  (+{benchlib.mb(rss - baseline)} over empty = "
          f"{per:,.0f} bytes per series; server reports {series_gauge(server):,} series)", flush=True)
    return rss


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    benchlib.add_common_args(parser)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--metrics", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=3, help="points per series")
    args = parser.parse_args()
    series = args.runs * args.metrics

    print(f"## resident memory with {series:,} series ({args.runs} runs x {args.metrics} metrics x "
          f"{args.steps} points)", flush=True)
    data = benchlib.scratch_dir(args, "memory")
    server = benchlib.Server(args, data).start()
    empty = report("empty server", server, server.rss(), 0)
    benchlib.run_client([benchlib.binary(args, "ingest_bench"), "--transport", "grpc", "--target", server.grpc,
                         "--server-pid", str(server.pid), "--shape", f"{args.runs}x{args.metrics}x{args.steps}",
                         "--project", "mem", "--run-prefix", "run", "--rows-per-batch", str(args.steps)],
                        echo=False)
    benchlib.wait_idle(server)
    report("after the writes (idle)", server, empty, series)
    server.stop()
    server = benchlib.Server(args, data).start()
    benchlib.wait_idle(server)
    report(f"after a restart ({server.start_seconds:.1f} s to start)", server, empty, series)
    server.stop()


if __name__ == "__main__":
    main()
