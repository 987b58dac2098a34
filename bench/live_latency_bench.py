#!/usr/bin/python3
"""Live push latency: from a write being sent to the WebSocket subscriber receiving its points.

A subscriber on /api/v1/live follows project "live", run "probe". A probe thread writes one point
every --interval seconds with POST /api/v1/write (keep-alive), the value being its wall-clock send
time, and keeps its monotonic send time by step; latency = receipt - send, on the same clock. Phases:
idle, paced background loads (--rates points/s) and a saturating one, the loads by bin/ingest_bench
over gRPC (8 synthetic runs x 50 metrics, durable acks) in another process. With each phase: the
server's CPU, how long its threads waited for a CPU, and how busy the whole machine was. Target:
p99 <= 100 ms while ingesting. Prints figures only.

    /usr/bin/python3 bench/live_latency_bench.py --preset 1m
"""

import argparse
import concurrent.futures
import http.client
import json
import os
import threading
import time

import websocket  # python3-websocket (Debian), the websocket-client package

import benchlib



class Probe:
    """Writes probe points and collects push and ack latencies in milliseconds. Writes go out on
    schedule from a pool of keep-alive connections, so a slow ack does not delay the next probe."""

    def __init__(self, http_addr, interval, workers=32):
        self.host, port = http_addr.rsplit(":", 1)
        self.port = int(port)
        self.interval = interval
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers)
        self.local = threading.local()
        self.sent = {}  # step -> monotonic send time
        self.push_ms, self.ack_ms, self.errors = [], [], []
        self.step = 0
        self.lock = threading.Lock()

    def _write(self, step):
        if not hasattr(self.local, "conn"):
            self.local.conn = http.client.HTTPConnection(self.host, self.port)
        line = json.dumps({"project": "live", "run": "probe", "step": step, "metrics": {"sent_at": time.time()}})
        t0 = time.monotonic()
        with self.lock:
            self.sent[step] = t0
        self.local.conn.request("POST", "/api/v1/write", body=line, headers={"Content-Type": "application/x-ndjson"})
        response = self.local.conn.getresponse()
        response.read()
        with self.lock:
            if response.status != 200:
                self.errors.append(response.status)
            self.ack_ms.append((time.monotonic() - t0) * 1e3)

    def write_until(self, deadline):
        next_at = time.monotonic()
        futures = []
        while time.monotonic() < deadline:
            self.step += 1
            futures.append(self.pool.submit(self._write, self.step))
            next_at += self.interval
            time.sleep(max(0.0, next_at - time.monotonic()))
        for f in futures:
            f.result()  # re-raises a failed write
        self.pool.shutdown()

    def on_message(self, text, received):
        msg = json.loads(text)
        if msg.get("type") != "points":
            return
        for step, _, _ in msg["metrics"].get("sent_at", []):
            with self.lock:
                sent = self.sent.pop(step, None)
            if sent is not None:
                self.push_ms.append((received - sent) * 1e3)


class Subscriber:
    """A WebSocket subscriber to the probe run; hands each message to the probe as it arrives."""

    def __init__(self, http_addr, probe):
        self.ws = websocket.create_connection(f"ws://{http_addr}/api/v1/live", timeout=10)
        self.ws.send(json.dumps({"subscribe": {"project": "live", "runs": ["probe"]}}))
        reply = json.loads(self.ws.recv())
        if reply.get("type") != "subscribed":
            raise RuntimeError(f"subscribe failed: {reply}")
        self.ws.settimeout(0.5)
        self.probe = probe
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._receive)
        self.thread.start()

    def _receive(self):
        while not self.stopping.is_set():
            try:
                text = self.ws.recv()
            except websocket.WebSocketTimeoutException:
                continue
            self.probe.on_message(text, time.monotonic())

    def close(self):
        self.stopping.set()
        self.thread.join()
        self.ws.close()


def run_phase(args, server, name, rate):
    """One phase: an optional background load, the probe and the subscriber for --seconds."""
    probe = Probe(server.http, args.interval)
    subscriber = Subscriber(server.http, probe)
    load = benchlib.BackgroundLoad(args, server, name, rate) if rate is not None else None
    t0, cpu0 = time.monotonic(), server.cpu()
    wait0, busy0 = benchlib.run_queue_wait_seconds(server.pid), benchlib.machine_busy_seconds()
    probe.write_until(time.monotonic() + args.seconds)
    elapsed = time.monotonic() - t0
    server_cores = (server.cpu() - cpu0) / elapsed
    waiting = (benchlib.run_queue_wait_seconds(server.pid) - wait0) / elapsed
    busy = (benchlib.machine_busy_seconds() - busy0) / elapsed
    time.sleep(0.5)  # let the last pushes arrive
    subscriber.close()
    heading = name
    if load is not None:
        r = load.finish()
        heading += f"; background load {r['points_per_s'] / 1e6:.2f} M points/s achieved, ack p99 {r['ack_p99_ms']:.0f} ms"
    print(heading)
    print(f"  push latency  {benchlib.percentiles(probe.push_ms)}; not pushed {len(probe.sent)} of {probe.step}"
          + (f"; {len(probe.errors)} probe writes failed" if probe.errors else ""))
    print(f"  probe ack     {benchlib.percentiles(probe.ack_ms)}")
    print(f"  CPU           server {server_cores:.2f} cores; its threads waited {waiting:.2f} s per s for a CPU; "
          f"machine busy {busy:.2f} of {os.cpu_count()} cores (everything, this driver and the load included)",
          flush=True)
    return name, probe.push_ms


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    benchlib.add_common_args(parser)
    parser.add_argument("--seconds", type=float, default=None, help="per phase (default 20, 1m: 8)")
    parser.add_argument("--interval", type=float, default=0.02, help="seconds between probe writes")
    parser.add_argument("--rates", default="500000,2000000", help="paced loads, points/s, comma-separated")
    args = parser.parse_args()
    if args.seconds is None:
        args.seconds = 20 if args.preset == "10m" else 8

    print(f"## live push latency, preset {args.preset} ({args.seconds:g} s per phase, a probe write every "
          f"{args.interval * 1e3:g} ms): target p99 <= 100 ms while ingesting", flush=True)
    summary = []  # (phase, push latencies in ms)
    with benchlib.Server(args, benchlib.scratch_dir(args, "live")) as server:
        summary.append(run_phase(args, server, "idle", None))
        for rate in (float(r) for r in args.rates.split(",") if r):
            summary.append(run_phase(args, server, f"paced-{rate / 1e6:g}M", rate))
        summary.append(run_phase(args, server, "saturating", 0))
    print("\n## summary: push latency p50 / p99 ms")
    for name, values in summary:
        v = sorted(values) or [float("nan")]
        print(f"{name:14} {benchlib.nearest_rank(v, 0.5):8.2f} {benchlib.nearest_rank(v, 0.99):8.2f}")


if __name__ == "__main__":
    main()
