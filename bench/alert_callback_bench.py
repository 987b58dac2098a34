#!/usr/bin/python3
"""Alert → training job: from an alert raised on the server to the training process's on_alert
callback running, as figures (no pass/fail; see bench/README.md).

A training process (this one, the Python SDK) starts --trials runs one after another against a real
`trainwatch serve`. Each run registers run.on_alert, waits until its alert feed is subscribed (the
live WebSocket, sdk/python/trainwatch/_alerts.py), logs a few healthy steps and then loss = NaN;
the server's `nan` detector fires at once. Printed, in ms:

- raised → callback: the callback's time.time() minus the alert's `fired_at` (the server's clock
  when its alert thread recorded the firing; same machine, same clock): the delivery the SDK adds;
- log → callback: from the run.log() of the bad step to the callback (time.monotonic()), which adds
  the SDK's batching (--batch-delay, batch_max_delay_seconds) and the server's write and detection.

    PYTHONPATH=build/python /usr/bin/python3 bench/alert_callback_bench.py --build-dir build
"""
import argparse
import os
import sys
import threading
import time

import benchlib

import trainwatch as tw

HEALTHY_STEPS = 5


def one_trial(server_url, index, batch_delay):
    arrived = threading.Event()
    got = {}

    def callback(alert):
        got["wall"], got["mono"], got["alert"] = time.time(), time.monotonic(), alert
        arrived.set()
    run = tw.init(project="alert-bench", id="probe-%d" % index, server=server_url,
                  system_metrics=False, batch_max_delay_seconds=batch_delay)
    run.on_alert(callback)
    if not run._feed.connected.wait(30):
        sys.exit("the alert feed did not connect: %s" % run._feed.last_error)
    for step in range(HEALTHY_STEPS):
        run.log({"loss": 1.0}, step=step)
    logged = time.monotonic()
    run.log({"loss": float("nan")}, step=HEALTHY_STEPS)
    if not arrived.wait(30):
        sys.exit("no alert reached the callback of probe-%d" % index)
    run.finish()
    return (got["wall"] - got["alert"]["fired_at"]) * 1e3, (got["mono"] - logged) * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    benchlib.add_common_args(parser)
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--batch-delay", type=float, default=0.01,
                        help="batch_max_delay_seconds of the SDK (default 0.01; the SDK's own is 0.2)")
    args = parser.parse_args()
    data_dir = benchlib.scratch_dir(args, "alert-callback")
    with benchlib.Server(args, os.path.join(data_dir, "data")) as server:
        url = "http://" + server.http
        raised, logged = [], []
        for i in range(args.trials):
            r, l = one_trial(url, i, args.batch_delay)
            raised.append(r)
            logged.append(l)
    print("alert raised on the server -> on_alert callback in the training process (%d alerts)"
          % args.trials)
    print("  raised -> callback:  " + benchlib.percentiles(raised))
    print("  log()  -> callback:  " + benchlib.percentiles(logged) +
          "  (batch_max_delay_seconds %g)" % args.batch_delay)


if __name__ == "__main__":
    main()
