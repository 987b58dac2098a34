"""The Python SDK's `run.log` while the server is frozen, as figures (no pass/fail; see bench/README.md).

A training process (the Python SDK, in a child process) logs four metrics per step at a fixed rate
(default 5,000 steps/s, 20,000 points/s) to a real `trainwatch serve`; after a baseline the server
is frozen with SIGSTOP for a number of steps, then resumed with SIGCONT. Printed:

- the latency of one `run.log` call (µs: p50, p99, max) before the freeze and while frozen, and the
  ratio of the two p99s: the promise is that log() never waits for the network, so the ratio stays
  near 1 (a blocking call would take seconds);
- the child's RSS growth while frozen, the SDK's in-memory batch bytes (capped by
  memory_max_bytes) and spool bytes;
- points dropped and acknowledged at the end.

This is the measurement that tests/integration/test_sdk_delivery.py used to assert (p99 while
frozen < 4x the p99 before); the test keeps what is deterministic (every point arrives once, the
batch memory cap holds, the spool takes the rest, training goes on while the server is frozen).

    PYTHONPATH=build/python /usr/bin/python3 bench/sdk_frozen_server_bench.py --build-dir build
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import benchlib

# The training process: logs `steps` steps at `rate` steps/s, timing each log() call, sampling its
# RSS and the client's counters every half second; every 50 steps it appends "<steps done>
# <seconds since start>" to the progress file (how the driver knows when to freeze and resume).
CHILD = r'''
import json, sys, time
import trainwatch as tw

args = json.loads(sys.argv[1])

def rss_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0

run = tw.init(project="bench", id=args["run"], server=args["server"], system_metrics=False, **args["options"])
latencies, samples = [], []
progress = open(args["progress"], "a", buffering=1)
start = time.monotonic()
next_sample = start
for step in range(args["steps"]):
    due = start + step / args["rate"]
    while time.monotonic() < due:
        pass
    t0 = time.perf_counter_ns()
    run.log({"loss": 1.0 / (step + 1), "acc": step * 1e-6, "lr": 0.5 ** (step % 7), "tick": float(step)}, step=step)
    latencies.append((time.monotonic() - start, time.perf_counter_ns() - t0))
    if time.monotonic() >= next_sample:
        next_sample += 0.5
        s = run.stats()
        samples.append({"t": time.monotonic() - start, "rss": rss_bytes(), "spool": s["spool_bytes"],
                        "memory": s["memory_bytes"]})
    if (step + 1) % 50 == 0:
        progress.write("%d %.6f\n" % (step + 1, time.monotonic() - start))
progress.close()
run.finish()
print(json.dumps({"latencies": latencies, "samples": samples, "stats": run.stats()}))
'''


def progress_of(path):
    """(steps done, child's seconds since its first step) as last reported; (0, 0.0) before any."""
    try:
        with open(path) as f:
            lines = [line for line in f.read().split("\n")[:-1] if line]
    except FileNotFoundError:
        return 0, 0.0
    if not lines:
        return 0, 0.0
    step, t = lines[-1].split()
    return int(step), float(t)


def wait_for_steps(child, path, steps):
    while True:
        done, t = progress_of(path)
        if done >= steps:
            return done, t
        if child.poll() is not None:
            sys.exit(f"the child exited ({child.returncode}) before step {steps}: {child.stderr.read().decode()}")
        time.sleep(0.01)


def microseconds(ns_values):
    v = sorted(ns_values)
    if not v:
        return "no samples", 0
    p99 = benchlib.nearest_rank(v, 0.99)
    return (f"p50 {benchlib.nearest_rank(v, 0.5) / 1e3:.1f}  p99 {p99 / 1e3:.1f}  max {v[-1] / 1e3:.1f} µs "
            f"(n={len(v)})"), p99


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    benchlib.add_common_args(parser)
    parser.add_argument("--rate", type=int, default=5000, help="steps per second (4 points each)")
    parser.add_argument("--baseline-steps", type=int, default=15000, help="steps before the freeze")
    parser.add_argument("--frozen-steps", type=int, default=30000, help="steps while the server is frozen")
    parser.add_argument("--after-steps", type=int, default=15000, help="steps after it resumes")
    parser.add_argument("--memory-max-bytes", type=int, default=2 << 20, help="the SDK's in-memory batch cap")
    args = parser.parse_args()

    python_dir = os.path.join(os.path.abspath(args.build_dir), "python")
    env = dict(os.environ, PYTHONPATH=python_dir)
    steps = args.baseline_steps + args.frozen_steps + args.after_steps
    options = {"memory_max_bytes": args.memory_max_bytes, "ack_timeout_seconds": 2.0}
    with tempfile.TemporaryDirectory(prefix="tw-frozen-bench-") as tmp:
        env["TRAINWATCH_SPOOL_DIR"] = os.path.join(tmp, "spool")
        with benchlib.Server(args, os.path.join(tmp, "data")) as server:
            progress = os.path.join(tmp, "progress")
            child_args = {"server": "http://" + server.http, "run": "frozen", "steps": steps, "rate": args.rate,
                          "options": options, "progress": progress}
            child = subprocess.Popen(["/usr/bin/python3", "-c", CHILD, json.dumps(child_args)], env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            _, baseline_end = wait_for_steps(child, progress, args.baseline_steps)
            server.proc.send_signal(signal.SIGSTOP)
            stopped_step, frozen_from = wait_for_steps(child, progress, progress_of(progress)[0] + 1)
            _, frozen_until = wait_for_steps(child, progress, stopped_step + args.frozen_steps)
            server.proc.send_signal(signal.SIGCONT)
            out, err = child.communicate(timeout=600)
            if child.returncode != 0:
                sys.exit(f"the child failed ({child.returncode}): {err.decode()}")
            report = json.loads(out.decode().strip().splitlines()[-1])

    def window(lo, hi):
        return [ns for t, ns in report["latencies"] if lo <= t < hi]

    # Half a second trimmed at each edge: start-up, and the moments the freeze begins and ends.
    before, p99_before = microseconds(window(0.5, baseline_end - 0.5))
    during, p99_during = microseconds(window(frozen_from + 0.5, frozen_until - 0.5))
    frozen = [s for s in report["samples"] if frozen_from + 0.5 <= s["t"] < frozen_until]
    baseline = [s["rss"] for s in report["samples"] if s["t"] < baseline_end]
    stats = report["stats"]
    print(f"# {steps} steps of 4 metrics at {args.rate} steps/s; server frozen (SIGSTOP) for "
          f"{args.frozen_steps} steps ({frozen_until - frozen_from:.1f} s)")
    print(f"run.log, server up:     {before}")
    print(f"run.log, server frozen: {during}")
    print(f"p99 frozen / p99 up:    {p99_during / p99_before:.2f}x" if p99_before else "p99 ratio: no baseline")
    if frozen and baseline:
        print(f"child RSS growth while frozen: {benchlib.mb(max(s['rss'] for s in frozen) - max(baseline))}; "
              f"SDK batch memory max {benchlib.mb(max(s['memory'] for s in frozen))} "
              f"(cap {benchlib.mb(args.memory_max_bytes)}); spool max {benchlib.mb(max(s['spool'] for s in frozen))}")
    print(f"points acknowledged {stats['points_acked']} of {steps * 4}, dropped {stats['points_dropped']}")


if __name__ == "__main__":
    main()
