#!/usr/bin/env python3
"""TensorBoard import throughput: generates a large logdir (default 1 GiB; the mix is described in
bench/tfevents_bench.cc: 16 scalars per step, each its own event, PyTorch's simple_value in half the
runs and TF2's scalar tensors in the other half, and two 30-bucket histograms every 50 steps), then
prints

  1. the reader alone (bin/tfevents_bench read): framing, CRC-32C, Event/Summary decoding, one core;
  2. `trainwatch import` end to end into a real `trainwatch serve` on the same machine, waiting for
     every acknowledgement (durable on the server), with both processes' CPU seconds and what every
     other process on the machine used meanwhile.

Reference point: TensorBoard's own Python reader was measured at about 6 MB/s
(tensorflow/tensorboard#4354). The files are read from the page cache (they were just written):
these are CPU figures, not disk figures. The logdir and the server's data are deleted afterwards.

    /usr/bin/python3 bench/tfevents_import_bench.py --build-dir build [--gib 1] [--runs 4]
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time

import benchlib


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    benchlib.add_common_args(parser)
    parser.add_argument("--gib", type=float, default=1.0, help="logdir size in GiB (default 1; --preset 1m: 0.1)")
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--keep", action="store_true", help="keep the logdir and the server's data")
    args = parser.parse_args()
    gib = args.gib if args.preset == "10m" or args.gib != 1.0 else 0.1
    target = int(gib * (1 << 30))
    bench = benchlib.binary(args, "tfevents_bench")
    trainwatch = benchlib.binary(args, "trainwatch")

    os.makedirs(args.work_dir, exist_ok=True)
    free = shutil.disk_usage(args.work_dir).free
    need = target * 3  # the logdir, the server's log and store, the SDK's spool
    if free < need:
        sys.exit(f"only {free / 1e9:.1f} GB free under {args.work_dir}; {need / 1e9:.1f} GB needed")
    root = benchlib.scratch_dir(args, "tfevents")
    logdir = os.path.join(root, "logdir")
    try:
        t0 = time.monotonic()
        gen = json.loads(subprocess.run([bench, "generate", logdir, "--bytes", str(target), "--runs", str(args.runs)],
                                        check=True, stdout=subprocess.PIPE).stdout)
        print(f"logdir: {benchlib.mb(gen['bytes'])} in {gen['runs']} runs, {gen['points']:,} scalar points, "
              f"{gen['histograms']:,} histograms (generated in {time.monotonic() - t0:.1f} s; {free / 1e9:.0f} GB were free)")

        busy0, wall0 = benchlib.machine_busy_seconds(), time.monotonic()
        read = json.loads(subprocess.run([bench, "read", logdir], check=True, stdout=subprocess.PIPE).stdout)
        others = (benchlib.machine_busy_seconds() - busy0 - read["seconds"]) / max(time.monotonic() - wall0, 1e-9)
        print(f"reader alone (one core): {read['mb_per_s']:.0f} MB/s, {read['points_per_s'] / 1e6:.2f} M points/s "
              f"({read['seconds']:.2f} s for {read['records']:,} records; others on the machine: {max(others, 0):.2f} cores)")

        data_dir = os.path.join(root, "data")
        env = dict(os.environ, TRAINWATCH_SPOOL_DIR=os.path.join(root, "spool"))
        with benchlib.Server(args, data_dir) as server:
            cpu0 = server.cpu()
            busy0, wall0 = benchlib.machine_busy_seconds(), time.monotonic()
            usage0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            proc = subprocess.run([trainwatch, "import", logdir, "--project", "bench", "--server", f"http://{server.http}",
                                   "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
            wall = time.monotonic() - wall0
            usage1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            server_cpu = server.cpu() - cpu0
            client_cpu = (usage1.ru_utime + usage1.ru_stime) - (usage0.ru_utime + usage0.ru_stime)
            busy = benchlib.machine_busy_seconds() - busy0
            if proc.returncode != 0:
                sys.exit(f"trainwatch import failed ({proc.returncode}): {proc.stderr.decode()[-2000:]}")
            report = json.loads(proc.stdout)
            others = max(busy - server_cpu - client_cpu, 0) / wall
            total = report["total"]
            print(f"trainwatch import -> server (acknowledged, durable): {report['mb_per_s']:.1f} MB/s, "
                  f"{report['points_per_s'] / 1e6:.2f} M points/s ({report['seconds']:.1f} s; reading done after "
                  f"{report['read_seconds']:.1f} s)")
            print(f"  {total['points']:,} points, {total['histograms']:,} histograms, {total['corrupt']} corrupt; "
                  f"CPU: import {client_cpu:.1f} s, server {server_cpu:.1f} s; others on the machine: {others:.2f} cores")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
