#!/usr/bin/python3
"""Alert latency: from the write of the offending point to a webhook receiving its notification.

The server runs with an --alerting file that routes `nan` alerts to a webhook served by this driver
(a ThreadingHTTPServer that answers 200 at once and keeps the monotonic receipt time and JSON body
of every POST). Each trial writes 60 healthy records of a fresh run "probe-<i>" with
POST /api/v1/write, then the offending record (loss = NaN); latency = receipt of the webhook body
{"run": "probe-<i>", "status": "firing"} - the moment just before that write was sent, on one
monotonic clock. A trial starts every --interval seconds from a pool of keep-alive connections, so
a slow write does not delay the next trial. Also prints the offending write's own ack latency.

Phases as in live_latency_bench.py: idle, paced background loads (--rates points/s) and a
saturating one, the loads by bin/ingest_bench over gRPC (8 synthetic runs x 50 metrics, durable
acks) in another process; with each phase the server's CPU, how long its threads waited for a CPU
and how busy the whole machine was. Target: p99 <= 200 ms. Prints figures only.

    /usr/bin/python3 bench/alert_latency_bench.py --preset 1m
"""

import argparse
import concurrent.futures
import http.client
import http.server
import json
import os
import threading
import time

import benchlib

PROJECT = "alerts"
HEALTHY_RECORDS = 60
TARGET_P99_MS = 200


class WebhookReceiver:
    """A local webhook endpoint: answers 200 at once; keeps (monotonic receipt time, JSON body) of
    every POST."""

    def __init__(self):
        receiver = self
        self.lock = threading.Lock()
        self.firing = {}  # run -> monotonic receipt time of its first firing notification
        self.received = 0
        self.others = 0  # bodies that are not a probe's firing notification (resends, resolved, ...)

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as a real receiver would allow

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                received = time.monotonic()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()
                receiver.record(received, body)

            def log_message(self, *_):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def record(self, received, body):
        try:
            msg = json.loads(body)
        except ValueError:
            msg = {}
        with self.lock:
            self.received += 1
            run = msg.get("run", "")
            if msg.get("status") == "firing" and run.startswith("probe-") and run not in self.firing:
                self.firing[run] = received
            else:
                self.others += 1

    def receipt(self, run):
        with self.lock:
            return self.firing.get(run)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def alerting_yaml(url):
    return (f"receivers:\n"
            f"  - name: hook\n"
            f"    webhook: {{url: \"{url}\"}}\n"
            f"routes:\n"
            f"  - {{receiver: hook, kinds: [nan]}}\n")


class Probe:
    """Runs trials: healthy records of a fresh run, then the offending one; keeps each offending
    write's send time and ack latency."""

    def __init__(self, http_addr, interval, first_trial, workers=32):
        self.host, port = http_addr.rsplit(":", 1)
        self.port = int(port)
        self.interval = interval
        self.next_trial = first_trial
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers)
        self.local = threading.local()
        self.sent = {}  # run -> monotonic time just before the offending write was sent
        self.acked = {}  # run -> monotonic time its ack was read
        self.ack_ms, self.errors = [], []
        self.lock = threading.Lock()

    def _post(self, body):
        if not hasattr(self.local, "conn"):
            self.local.conn = http.client.HTTPConnection(self.host, self.port)
        self.local.conn.request("POST", "/api/v1/write", body=body, headers={"Content-Type": "application/x-ndjson"})
        response = self.local.conn.getresponse()
        response.read()
        if response.status != 200:
            with self.lock:
                self.errors.append(response.status)
        return response.status

    def _trial(self, i):
        run = f"probe-{i}"
        healthy = "".join(json.dumps({"project": PROJECT, "run": run, "step": s,
                                      "metrics": {"loss": 1.0 + 0.01 * (s % 3)}}) + "\n"
                          for s in range(HEALTHY_RECORDS))
        if self._post(healthy) != 200:
            return
        # json.dumps would write NaN too; spelled out: the server accepts the bare NaN token.
        offending = f'{{"project":"{PROJECT}","run":"{run}","step":{HEALTHY_RECORDS},"metrics":{{"loss":NaN}}}}\n'
        t0 = time.monotonic()
        with self.lock:
            self.sent[run] = t0
        self._post(offending)
        acked = time.monotonic()
        with self.lock:
            self.acked[run] = acked
            self.ack_ms.append((acked - t0) * 1e3)

    def run_trials(self, trials):
        next_at = time.monotonic()
        futures = []
        for _ in range(trials):
            futures.append(self.pool.submit(self._trial, self.next_trial))
            self.next_trial += 1
            next_at += self.interval
            time.sleep(max(0.0, next_at - time.monotonic()))
        for f in futures:
            f.result()  # re-raises a failed write
        self.pool.shutdown()


def run_phase(args, server, receiver, name, rate, first_trial):
    """One phase: an optional background load and --trials trials; then waits up to --drain s for
    the webhooks still due."""
    probe = Probe(server.http, args.interval, first_trial)
    # The load lasts the trials plus a margin (their healthy writes, a slow last ack).
    load_args = argparse.Namespace(**vars(args))
    load_args.seconds = args.trials * args.interval + 2
    load = benchlib.BackgroundLoad(load_args, server, name, rate) if rate is not None else None
    t0, cpu0 = time.monotonic(), server.cpu()
    wait0, busy0 = benchlib.run_queue_wait_seconds(server.pid), benchlib.machine_busy_seconds()
    probe.run_trials(args.trials)
    elapsed = time.monotonic() - t0
    server_cores = (server.cpu() - cpu0) / elapsed
    waiting = (benchlib.run_queue_wait_seconds(server.pid) - wait0) / elapsed
    busy = (benchlib.machine_busy_seconds() - busy0) / elapsed
    deadline = time.monotonic() + args.drain
    while time.monotonic() < deadline and any(receiver.receipt(run) is None for run in probe.sent):
        time.sleep(0.05)
    latency_ms, after_ack_ms, missing = [], [], 0
    for run, sent in probe.sent.items():
        got = receiver.receipt(run)
        if got is None:
            missing += 1
        else:
            latency_ms.append((got - sent) * 1e3)
            after_ack_ms.append((got - probe.acked[run]) * 1e3)
    heading = name
    if load is not None:
        r = load.finish()
        heading += f"; background load {r['points_per_s'] / 1e6:.2f} M points/s achieved, ack p99 {r['ack_p99_ms']:.0f} ms"
    print(heading)
    print(f"  webhook latency  {benchlib.percentiles(latency_ms)}"
          + (f"; {missing} of {len(probe.sent)} not received within {args.drain:g} s" if missing else "")
          + (f"; {len(probe.errors)} probe writes failed" if probe.errors else ""))
    print(f"  offending ack    {benchlib.percentiles(probe.ack_ms)}")
    print(f"  webhook - ack    {benchlib.percentiles(after_ack_ms)} (negative: the webhook came first)")
    print(f"  CPU              server {server_cores:.2f} cores; its threads waited {waiting:.2f} s per s for a CPU; "
          f"machine busy {busy:.2f} of {os.cpu_count()} cores (everything, this driver and the load included)",
          flush=True)
    return (name, latency_ms, missing), probe.next_trial


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    benchlib.add_common_args(parser)
    parser.add_argument("--trials", type=int, default=None, help="trials per phase (default 100, 1m: 40)")
    parser.add_argument("--interval", type=float, default=0.05, help="seconds between trials")
    parser.add_argument("--rates", default="500000,2000000", help="paced loads, points/s, comma-separated")
    parser.add_argument("--drain", type=float, default=10, help="seconds to wait for late webhooks after a phase")
    args = parser.parse_args()
    if args.trials is None:
        args.trials = 100 if args.preset == "10m" else 40

    print(f"## alert latency, preset {args.preset} ({args.trials} trials per phase, one every "
          f"{args.interval * 1e3:g} ms): offending write sent -> webhook received; target p99 <= {TARGET_P99_MS} ms",
          flush=True)
    root = benchlib.scratch_dir(args, "alert")
    receiver = WebhookReceiver()
    alerting = os.path.join(root, "alerting.yml")
    with open(alerting, "w") as f:
        f.write(alerting_yaml(receiver.url))
    summary = []  # (phase, latencies in ms, not received)
    trial = 0
    try:
        with benchlib.Server(args, os.path.join(root, "data"), extra=["--alerting", alerting]) as server:
            phases = [("idle", None)] + [(f"paced-{float(r) / 1e6:g}M", float(r)) for r in args.rates.split(",") if r]
            phases.append(("saturating", 0))
            for name, rate in phases:
                result, trial = run_phase(args, server, receiver, name, rate, trial)
                summary.append(result)
    finally:
        receiver.close()
    if receiver.others:
        print(f"# {receiver.others} other webhook bodies received (not a probe's first firing notification)")
    print(f"\n## summary: webhook latency p50 / p99 / max ms (target p99 <= {TARGET_P99_MS} ms)")
    for name, values, missing in summary:
        v = sorted(values) or [float("nan")]
        print(f"{name:14} {benchlib.nearest_rank(v, 0.5):8.1f} {benchlib.nearest_rank(v, 0.99):8.1f} {v[-1]:8.1f}"
              + (f"   ({missing} not received)" if missing else ""))
    p99s = [(name, benchlib.nearest_rank(sorted(values), 0.99)) for name, values, _ in summary if values]
    print(f"p99 against the {TARGET_P99_MS} ms target: "
          + ", ".join(f"{name} {p:.0f} ms ({p / TARGET_P99_MS:.2f}x)" for name, p in p99s))


if __name__ == "__main__":
    main()
