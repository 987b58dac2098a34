#!/usr/bin/python3
"""Report generation time for a 1M-point run, as figures (no pass/fail; see bench/README.md).

Writes one run of 100,000 steps × 10 training metrics (loss, val_loss, accuracy, lr, grad_norm and
five phase timers time/*) = 1,000,000 points, plus 10,000 system samples × 4 series and a NaN stretch
(an alert), through POST /api/v1/write into a real `trainwatch serve`; waits until the server is idle
(chunks sealed), then times GET /api/v1/report: the first answer (chunks read from the store) and
the next ones (decoded chunks cached), with a compared run of the same size, and the PDF
(format=pdf, headless Chromium) when Chromium is installed. Printed: wall milliseconds (median
and each), the server's CPU seconds per report, the answer's size.

    /usr/bin/python3 bench/report_bench.py --build-dir build [--steps 100000] [--repeat 5]
"""
import argparse
import json
import math
import os
import shutil
import statistics
import time
import urllib.request

import benchlib

METRICS = ["loss", "val_loss", "accuracy", "lr", "grad_norm",
           "time/data", "time/forward", "time/backward", "time/optimizer", "time/step"]


def lines_of(run, steps, nan_from, t0=1767225600.0):
    for step in range(steps):
        loss = 2.0 * math.exp(-step / (steps / 5)) + 0.05 * math.sin(step) + 0.1
        metrics = {"loss": float("nan") if nan_from <= step < nan_from + 50 else loss,
                   "val_loss": loss + 0.05, "accuracy": min(0.99, 0.5 + step / (2.0 * steps)),
                   "lr": 0.05, "grad_norm": 1.0 + 0.1 * math.cos(step),
                   "time/data": 0.01, "time/forward": 0.03, "time/backward": 0.05, "time/optimizer": 0.01,
                   "time/step": 0.1}
        line = {"project": "bench", "run": run, "step": step, "time": t0 + 0.1 * step, "metrics": metrics}
        if step == 0:
            line["config"] = {"optim": {"lr": 0.05 if run == "big" else 0.1}, "model": {"hidden": 256}}
        if step == steps - 1:
            line["status"] = "finished"
        yield line
        if step % 10 == 0:
            yield {"project": "bench", "run": run, "step": step // 10, "time": t0 + 0.1 * step, "metrics": {
                "system/cpu_percent": 50.0 + step % 7, "system/memory_used_bytes": 2e9,
                "system/gpu/0/utilization_percent": 0.0 if step < steps // 20 else 90.0,
                "system/gpu/0/memory_used_bytes": 4e9}}


def post(url, body):
    req = urllib.request.Request(url + "/api/v1/write", data=body, method="POST",
                                 headers={"Content-Type": "application/x-ndjson"})
    with urllib.request.urlopen(req, timeout=600) as r:
        assert r.status == 200, r.status


def write_run(url, run, steps):
    batch = []
    for line in lines_of(run, steps, nan_from=steps // 2):
        batch.append(json.dumps(line))
        if len(batch) >= 5000:
            post(url, ("\n".join(batch) + "\n").encode())
            batch = []
    if batch:
        post(url, ("\n".join(batch) + "\n").encode())


def timed_get(server, path):
    cpu0 = server.cpu()
    t0 = time.monotonic()
    with urllib.request.urlopen("http://" + server.http + path, timeout=600) as r:
        body = r.read()
        status = r.status
    wall = time.monotonic() - t0
    return status, body, wall, server.cpu() - cpu0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    benchlib.add_common_args(p)
    p.add_argument("--steps", type=int, default=100_000, help="steps per run (10 training metrics each)")
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    data_dir = benchlib.scratch_dir(args, "report")
    with benchlib.Server(args, os.path.join(data_dir, "data")) as server:
        url = "http://" + server.http
        t0 = time.monotonic()
        write_run(url, "big", args.steps)
        write_run(url, "big-2", args.steps)
        print(f"wrote 2 runs × {args.steps * len(METRICS):,} training points "
              f"(+ {args.steps // 10 * 4:,} system points each) in {time.monotonic() - t0:.1f} s")
        waited = benchlib.wait_idle(server)
        print(f"server idle after {waited:.1f} s")

        for label, path in [("html", "/api/v1/report?project=bench&run=big"),
                            ("html, compared with a second 1M-point run",
                             "/api/v1/report?project=bench&run=big&compare=big-2")]:
            walls, cpus, size = [], [], 0
            for _ in range(args.repeat):
                status, body, wall, cpu = timed_get(server, path)
                assert status == 200, status
                walls.append(wall * 1000)
                cpus.append(cpu)
                size = len(body)
            print(f"report ({label}): first {walls[0]:.0f} ms, then median {statistics.median(walls[1:] or walls):.0f} ms "
                  f"(each: {', '.join(f'{w:.0f}' for w in walls)} ms); server CPU {statistics.median(cpus):.2f} s "
                  f"per report; {size / 1e3:.0f} kB")
        if shutil.which("chromium") or os.access("/usr/bin/chromium", os.X_OK):
            walls = []
            for _ in range(min(args.repeat, 3)):
                status, body, wall, _ = timed_get(server, "/api/v1/report?project=bench&run=big&format=pdf")
                assert status == 200 and body.startswith(b"%PDF"), status
                walls.append(wall * 1000)
            print(f"report (pdf, Chromium): median {statistics.median(walls):.0f} ms "
                  f"(each: {', '.join(f'{w:.0f}' for w in walls)} ms); {len(body) / 1e3:.0f} kB")
        else:
            print("report (pdf): no Chromium here, not measured")


if __name__ == "__main__":
    main()
