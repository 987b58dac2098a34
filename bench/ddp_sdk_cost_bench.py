"""What trainwatch costs a rank of a DistributedDataParallel job, per step, as figures (no pass/fail;
see bench/README.md).

The job is sdk/python/tests/ddp_job.py: WORLD ranks (torch.multiprocessing.spawn, gloo on the CPU,
one thread each), a small MLP under DDP, the same batches in every variant:

    none          no SDK
    log           tw.init in every rank, run.log({"loss"}) each step
    watch-dist    + tw.watch(ddp, log_every=0, hist_every=0): only dist/step_time and
                  dist/time_to_collective (the communication hook and the forward pre-hook)
    watch         + tw.watch(ddp, hist_every=0): gradient norms every step as well

A step is one loop iteration of a rank (data, forward, backward with the all-reduce, optimizer,
run.log), timed by the rank itself. Per variant: the median over every rank's steps (the first
--warmup of each rank left out), as the median over interleaved repetitions; the SDK's cost is the
difference against `none`, in µs and %. With several ranks per core the figures carry the
scheduler's noise: compare the variants of one run of this script, not runs on different machines.

    PYTHONPATH=build/python /usr/bin/python3 bench/ddp_sdk_cost_bench.py --build-dir build
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

import benchlib

JOB = os.path.join(benchlib.REPO, "sdk", "python", "tests", "ddp_job.py")
VARIANTS = {
    "none": ["--server", ""],
    "log": ["--watch", "0"],
    "watch-dist": ["--watch", "1", "--grad-every", "0"],
    "watch": ["--watch", "1", "--grad-every", "1"],
}


def run_job(url, variant, args, work_dir, repeat):
    out = os.path.join(work_dir, "%s-%d" % (variant, repeat))
    flags = ["--server", url] + VARIANTS[variant] if variant != "none" else VARIANTS[variant]
    cmd = [sys.executable, JOB, "--world", str(args.world), "--steps", str(args.steps), "--out", out,
           "--project", "bench", "--heartbeat", "10"] + flags
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        sys.exit("the job failed (%s):\n%s" % (" ".join(cmd), proc.stdout[-4000:]))
    steps = []
    for path in glob.glob(os.path.join(out, "rank*.json")):
        with open(path) as f:
            steps.extend(json.load(f)["step_times"][args.warmup:])
    shutil.rmtree(out, ignore_errors=True)
    return statistics.median(steps)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    benchlib.add_common_args(p)
    p.add_argument("--world", type=int, default=4)
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()

    work_dir = tempfile.mkdtemp(prefix="tw-ddp-bench-")
    os.environ.setdefault("TRAINWATCH_SPOOL_DIR", os.path.join(work_dir, "spool"))
    print("# trainwatch SDK cost in a DDP rank: %d ranks (gloo, CPU, 1 thread each) on %d CPUs, "
          "%d steps per job, %d repetitions, python %s" % (
              args.world, os.cpu_count(), args.steps, args.repeats, sys.version.split()[0]))
    server = benchlib.Server(args, os.path.join(work_dir, "data")).start()
    url = "http://" + server.http
    medians = {v: [] for v in VARIANTS}
    try:
        for repeat in range(args.repeats):  # interleaved: drift in the machine's load hits all alike
            for variant in VARIANTS:
                medians[variant].append(run_job(url, variant, args, work_dir, repeat))
    finally:
        server.stop()
        shutil.rmtree(work_dir, ignore_errors=True)

    base = statistics.median(medians["none"])
    print("\n%-11s %14s %16s %9s   %s" % ("variant", "step (µs)", "SDK cost (µs)", "cost %",
                                         "per-repeat medians (µs)"))
    for variant, values in medians.items():
        m = statistics.median(values)
        cost = "" if variant == "none" else "%+16.1f %+8.1f%%" % ((m - base) * 1e6, (m - base) / base * 100)
        print("%-11s %14.1f %26s   %s" % (variant, m * 1e6, cost,
                                          " ".join("%.0f" % (v * 1e6) for v in values)))


if __name__ == "__main__":
    main()
