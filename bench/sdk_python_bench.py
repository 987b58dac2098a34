"""The Python SDK's costs, as figures (no pass/fail; see bench/README.md):

1. `run.log` of 10 metrics: µs per call (p50/p99), beside appending the same record as a JSON line
   to a file (json.dumps + write), the cheapest thing a training script could do instead.
2. A small PyTorch training loop (MLP on sklearn's digits, CPU, one thread; the run is offline
   so that no server competes for the CPU): time per step with
   no SDK, with `run.log` only, with `run.log` + `trainwatch.watch` (defaults: every step) and
   with watch(log_every=10), as medians over interleaved repetitions, and the cost of each against
   no SDK in µs and % (target for watch: < 3%). The watch's cost is nearly fixed per step (a few
   torch ops per parameter, some Python), so the percentage shrinks as the model grows
   (--hidden).
3. Points per second one SDK process delivers to a server: log N points as fast as possible,
   then the time until the client's stats say every point is acknowledged (durable).

It starts its own `trainwatch serve` (from --build-dir, default build/) on a temp data directory
and needs the built package on the path:

    PYTHONPATH=build/python /usr/bin/python3 bench/sdk_python_bench.py --build-dir build
"""
import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import warnings

import trainwatch as tw

import benchlib



def percentile(sorted_values, q):
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def record(step):
    return {"loss": 1.0 / (step + 1), "acc": 0.5, "lr": 1e-3, "grad_norm": 1.25, "tokens": 4096,
            "loss_ema": 0.7, "val_loss": 0.9, "throughput": 123.4, "gpu_mem": 7.5e9, "epoch": 3}


# -- 1. log latency ----------------------------------------------------------------------------------

def bench_log_latency(url, calls, work_dir):
    print("\n## run.log of 10 metrics, %d calls (µs per call)" % calls)
    # default options: a full buffer drops the oldest points rather than blocking log()
    run = tw.init(project="bench", id="log-latency", server=url, system_metrics=False)
    records = [record(i) for i in range(1000)]
    samples = []
    clock = time.perf_counter_ns
    for i in range(calls):
        r = records[i % 1000]
        t0 = clock()
        run.log(r, step=i)
        samples.append(clock() - t0)
    run.flush()
    dropped = run.stats()["points_dropped"]
    run.finish()
    report_latency("run.log (trainwatch)", samples)
    print("    (%d of %d points dropped by the client's buffer)" % (dropped, calls * 10))

    path = os.path.join(work_dir, "log.jsonl")
    samples = []
    with open(path, "w") as f:
        for i in range(calls):
            r = records[i % 1000]
            t0 = clock()
            f.write(json.dumps({"step": i, "metrics": r}) + "\n")
            samples.append(clock() - t0)
    report_latency("json.dumps + file.write", samples)

    # the binding alone, without the package's step bookkeeping
    run = tw.init(project="bench", id="log-native", server=url, system_metrics=False)
    native_log = run._native.log
    samples = []
    for i in range(calls):
        r = records[i % 1000]
        t0 = clock()
        native_log(r, i)
        samples.append(clock() - t0)
    run.flush()
    dropped = run.stats()["points_dropped"]
    run.finish()
    report_latency("binding only (_trainwatch.Run.log)", samples)
    print("    (%d of %d points dropped by the client's buffer)" % (dropped, calls * 10))


def report_latency(name, samples_ns):
    s = sorted(samples_ns)
    print("  %-38s p50 %6.2f  p99 %6.2f  p99.9 %7.2f  max %8.1f  mean %6.2f" % (
        name, percentile(s, 0.50) / 1e3, percentile(s, 0.99) / 1e3, percentile(s, 0.999) / 1e3,
        s[-1] / 1e3, statistics.fmean(s) / 1e3))


# -- 2. training-loop slowdown -----------------------------------------------------------------------

def bench_training(steps, repeats, hidden, batch):
    import torch
    from sklearn.datasets import load_digits

    torch.set_num_threads(1)
    x, y = load_digits(return_X_y=True)
    x = torch.tensor(x / 16.0, dtype=torch.float32)
    y = torch.tensor(y)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, hidden), torch.nn.ReLU(),
                                torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
                                torch.nn.Linear(hidden, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    batches = [torch.randint(0, len(x), (batch,)) for _ in range(steps)]
    print("\n## training loop: MLP 64-%d-%d-10, batch %d, %d steps x %d repeats, 1 thread, "
          "offline run" % (hidden, hidden, batch, steps, repeats))

    def loop(run):
        t0 = time.perf_counter()
        for idx in batches:
            loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            if run is not None:
                run.log({"loss": loss, "lr": 0.01})
        return (time.perf_counter() - t0) / steps

    # Offline (the client batches and writes its spool): a server on the same two cores would
    # compete with the loop for CPU, and more so the more a configuration logs.
    run = tw.init(project="bench", id="training", mode="offline", system_metrics=False)
    loop(None)  # warm-up
    configs = {"no SDK": None, "run.log": {}, "run.log + watch": {"watch": {}},
               "run.log + watch(log_every=10)": {"watch": {"log_every": 10}}}
    times = {name: [] for name in configs}
    rng = random.Random(0)
    for _ in range(repeats):  # interleaved in a random order: drifts of a shared machine hit all
        order = list(configs.items())
        rng.shuffle(order)
        for name, config in order:
            handle = None
            if config is not None and "watch" in config:
                handle = tw.watch(model, run=run, graph=False, **config["watch"])
            times[name].append(loop(None if config is None else run))
            if handle is not None:
                handle.remove()
    run.finish()
    base = statistics.median(times["no SDK"])
    for name, values in times.items():
        median = statistics.median(values)
        print("  %-31s %8.1f µs/step (median; min %.1f, max %.1f)  %+6.1f µs  %+5.2f%%" % (
            name, median * 1e6, min(values) * 1e6, max(values) * 1e6, (median - base) * 1e6,
            (median / base - 1) * 100))


# -- 3. delivery rate --------------------------------------------------------------------------------

def bench_throughput(url, points):
    metrics_per_step = 10
    steps = points // metrics_per_step
    print("\n## delivery: %d points (%d steps x %d metrics) from one process" % (
        steps * metrics_per_step, steps, metrics_per_step))
    run = tw.init(project="bench", id="throughput", server=url, system_metrics=False,
                  overflow="block", flush_timeout_seconds=300)
    records = [record(i) for i in range(1000)]
    t0 = time.perf_counter()
    for i in range(steps):
        run.log(records[i % 1000], step=i)
    t_logged = time.perf_counter() - t0
    total = steps * metrics_per_step
    while True:
        stats = run.stats()
        if stats["points_acked"] >= total or time.perf_counter() - t0 > 300:
            break
        time.sleep(0.002)
    t_acked = time.perf_counter() - t0
    run.finish()
    print("  logged in %.2f s (%.2f M points/s into the client)" % (t_logged, total / t_logged / 1e6))
    print("  all acked after %.2f s: %.2f M points/s delivered (durable), transport %s, "
          "%d batches, %d dropped" % (t_acked, stats["points_acked"] / t_acked / 1e6,
                                      stats["transport"] or "?", stats["batches_acked"],
                                      stats["points_dropped"]))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build-dir", default=os.path.join(benchlib.REPO, "build"),
                   help="CMake build directory holding bin/trainwatch (default: repo build/)")
    p.add_argument("--log-calls", type=int, default=100_000)
    p.add_argument("--train-steps", type=int, default=300)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--points", type=int, default=5_000_000)
    p.add_argument("--skip", default="", help="comma-separated: log, train, throughput")
    args = p.parse_args()
    skip = set(filter(None, args.skip.split(",")))

    warnings.simplefilter("ignore", tw.TrainwatchWarning)  # drops are counted and printed
    work_dir = tempfile.mkdtemp(prefix="tw-sdk-bench-")
    os.environ.setdefault("TRAINWATCH_SPOOL_DIR", os.path.join(work_dir, "spool"))
    print("# trainwatch Python SDK benchmark, %d CPUs, python %s" % (
        os.cpu_count(), sys.version.split()[0]))
    server = benchlib.Server(args, os.path.join(work_dir, "data")).start()
    url = "http://" + server.http
    try:
        if "log" not in skip:
            bench_log_latency(url, args.log_calls, work_dir)
        if "train" not in skip:
            bench_training(args.train_steps, args.repeats, args.hidden, args.batch)
        if "throughput" not in skip:
            bench_throughput(url, args.points)
    finally:
        server.stop()
        shutil.rmtree(work_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
