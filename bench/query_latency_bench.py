#!/usr/bin/python3
"""Query latency over HTTP keep-alive (p50/p99 of repeated requests, by bin/query_bench).

Loads one server, all through gRPC (bin/ingest_bench):
  * the preset's workload (project "default"): one series of it is 25,000 points at 10m (2,500 at 1m);
  * one series of 10M points (1M at 1m): project "big", run "big0000", metric "m0";
  * 1,000 runs x 50 metrics x 10 steps: project "many", runs "r0000".., metrics "m0".."m49".
Then, once the server is idle (background sealing done), times:
  raw25k   GET /api/v1/series?run=run_00&metric=train/loss                  (every point, raw)
  down10m  GET /api/v1/series?project=big&run=big0000&metric=m0&buckets=2000 [target <= 10 ms]
  latest   GET /api/v1/runs?project=many&latest=m0,...,m49&limit=1000      [target <= 20 ms]
and again after a restart (chunks read back from RocksDB; the first request is cold).
Prints figures only.

    /usr/bin/python3 bench/query_latency_bench.py --preset 1m
"""

import argparse
import os
import urllib.parse

import benchlib


def load(args, server, workload, big_steps):
    ingest = benchlib.binary(args, "ingest_bench")
    common = ["--transport", "grpc", "--target", server.grpc, "--server-pid", str(server.pid)]
    print("# loading: the workload", flush=True)
    benchlib.run_client([ingest, *common, "--workload", os.path.join(workload, "workload.jsonl")], echo=False)
    print(f"# loading: one series of {big_steps:,} points", flush=True)
    benchlib.run_client([ingest, *common, "--shape", f"1x1x{big_steps}", "--project", "big",
                         "--run-prefix", "big", "--streams", "1", "--inflight", "4",
                         "--rows-per-batch", "50000"], echo=False)
    print(f"# loading: {args.runs:,} runs x 50 metrics x {args.run_steps} steps", flush=True)
    benchlib.run_client([ingest, *common, "--shape", f"{args.runs}x50x{args.run_steps}", "--project", "many",
                         "--run-prefix", "r", "--rows-per-batch", str(args.run_steps)], echo=False)
    print(f"# server idle after {benchlib.wait_idle(server):.1f} s; RSS {benchlib.mb(server.rss())}", flush=True)


def queries(args, meta, big_steps):
    run0 = meta["run_names"][0]
    latest = ",".join(f"m{k}" for k in range(50))
    q = urllib.parse.quote
    return [
        (f"raw{meta['steps'] // 1000}k", f"/api/v1/series?run={q(run0)}&metric={q('train/loss', safe='')}"),
        (f"down{big_steps // 1_000_000}m", f"/api/v1/series?project=big&run=big0000&metric=m0&buckets={args.buckets}"),
        ("latest", f"/api/v1/runs?project=many&latest={q(latest, safe='')}&limit={args.runs}"),
    ]


def measure(args, server, named, warmup):
    cmd = [benchlib.binary(args, "query_bench"), "--target", server.http, "--repeat", str(args.repeat),
           "--warmup", str(warmup), "--server-pid", str(server.pid)] + [f"{name}={target}" for name, target in named]
    return benchlib.run_client(cmd)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    benchlib.add_common_args(parser)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--buckets", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=1000, help="runs for the latest-values query")
    parser.add_argument("--run-steps", type=int, default=10, help="steps of each of those runs")
    args = parser.parse_args()

    workload = benchlib.ensure_workload(args)
    meta = benchlib.workload_meta(workload)
    big_steps = 10_000_000 if args.preset == "10m" else 1_000_000
    named = queries(args, meta, big_steps)
    print(f"## query latency, preset {args.preset}: targets down <= 10 ms, latest <= 20 ms", flush=True)
    data = benchlib.scratch_dir(args, "query")
    server = benchlib.Server(args, data).start()
    load(args, server, workload, big_steps)
    print("\n# warm (right after ingest)", flush=True)
    warm = measure(args, server, named, warmup=5)
    server.stop()
    server = benchlib.Server(args, data).start()
    print(f"\n# after a restart (start {server.start_seconds:.2f} s; first request cold, no warm-up)", flush=True)
    cold = measure(args, server, named, warmup=0)
    server.stop()

    print("\n## summary (ms)")
    print(f"{'query':10} {'warm p50':>9} {'warm p99':>9} {'CPU/req':>8} {'restart first':>13} {'restart p50':>11} "
          f"{'restart p99':>11} {'bytes':>9}")
    for w, c in zip(warm, cold):
        print(f"{w['name']:10} {w['p50_ms']:9.2f} {w['p99_ms']:9.2f} {w['server_cpu_ms']:8.2f} {c['first_ms']:13.2f} "
              f"{c['p50_ms']:11.2f} {c['p99_ms']:11.2f} {w['response_bytes']:9}")
    print("(CPU/req: the server's CPU milliseconds per warm request; less disturbed by a busy machine)")


if __name__ == "__main__":
    main()
