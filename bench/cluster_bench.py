#!/usr/bin/python3
"""Cluster mode (issue 15, docs/cluster.md) on this machine: three Debian nats-server processes
(JetStream R3) and three `trainwatch serve --nats` nodes on 127.0.0.1, started by the tests'
harness (tests/harness/nats_cluster.py). Prints figures only.

  ingest    the workload of influx_compare_bench.py / ingest_disk_bench.py (--preset), split by run
            into three parts, each pushed over gRPC by its own bin/ingest_bench (durable acks); the
            three writers go to the three nodes of the cluster, or all to one single-node server
            (the same flags otherwise). Points/s until the last ack, and for the cluster until
            every node has applied the whole stream; CPU seconds of the trainwatch processes and of
            the nats-server processes counted apart (benchlib.cpu_seconds on each pid), taken once
            the servers went quiet again (background sealing, applying).
  latency   one point at a time written with POST /api/v1/write to node A (tw0), at --latency-rate
            writes/s: after its ack, node B (tw1) is polled with /api/v1/series for that step, and
            a WebSocket on B (and one on A) subscribed to the run times its arrival.
  failover  the workload is loaded into a cluster (lease --lease); kill -9 of a trainwatch node
            that owns partitions -> seconds until the survivors own every partition (their
            /metrics trainwatch_cluster_partitions_owned, live) and until both survivors' /api/v1/info
            name a live owner for every partition; then a fresh node (new name, empty data
            directory) joins and applies the stream: points/s until its applied sequence reaches
            the stream's last one (/api/v1/info).

Every figure is printed with the 1-minute load average and the cores used by every other process.

    /usr/bin/python3 bench/cluster_bench.py --build-dir build --preset 1m --part ingest,latency,failover
"""

import argparse
import http.client
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import benchlib

PARTS = ("ingest", "latency", "failover")


# --- the harness's cluster, with the bench's flags


def load_harness(args):
    """Imports tests/harness with the build's trainwatch binary; returns (Server, BenchCluster)."""
    os.environ["TRAINWATCH_BIN"] = benchlib.binary(args, "trainwatch")
    sys.path.insert(0, os.path.join(benchlib.REPO, "tests"))
    from harness.nats_cluster import TrainwatchCluster, nats_available
    from harness.server import Server

    if not nats_available():
        sys.exit("nats-server is missing (scripts/install-deps.sh installs it)")

    class BenchCluster(TrainwatchCluster):
        """The tests' cluster with the server's default thread counts (the tests pin 1 HTTP and 1
        query thread) and warnings-only logs."""

        def node_flags(self, name):
            return ["--nats", self.nats_urls, "--node-name", name, "--partitions", str(self.partitions),
                    "--cluster-lease", self.lease, "--log-level", "warn", *self.node_args]

        def start_node(self, i):
            if self.nodes[i] is None:
                self.nodes[i] = Server(os.path.join(self.workdir, "tw%d" % i), extra_args=self.node_flags("tw%d" % i))
            return self.nodes[i].start(timeout=120)

    return Server, BenchCluster


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def cluster_info(node):
    return node.get_json("/api/v1/info")["cluster"]


def hostport(node):
    return "127.0.0.1", node.port


class Meter:
    """CPU seconds of named processes, the machine's busy seconds and the children's rusage, from
    a start; `others` is what the rest of the machine used meanwhile (cores)."""

    def __init__(self, pids):
        self.pids = dict(pids)  # label -> pid
        self.t0 = time.monotonic()
        self.cpu0 = {k: benchlib.cpu_seconds(p) for k, p in self.pids.items()}
        self.busy0 = benchlib.machine_busy_seconds()
        self.children0 = self._children()

    @staticmethod
    def _children():
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    def read(self):
        cpu = {k: benchlib.cpu_seconds(p) - self.cpu0[k] for k, p in self.pids.items()}
        elapsed = time.monotonic() - self.t0
        clients = self._children() - self.children0
        others = max(0.0, benchlib.machine_busy_seconds() - self.busy0 - sum(cpu.values()) - clients)
        return {"cpu": cpu, "elapsed": elapsed, "clients_cpu": clients, "others_cores": others / elapsed,
                "load": loadavg()}


def wait_quiet(pids, quiet_per_process=0.02, interval=0.5, limit=300):
    """Waits until the processes together use under `quiet_per_process` CPU-s each per `interval`
    (sealing and applying done; nats-server and the lease loops keep a trickle); returns seconds."""
    t0 = time.monotonic()
    last = sum(benchlib.cpu_seconds(p) for p in pids)
    while time.monotonic() - t0 < limit:
        time.sleep(interval)
        now = sum(benchlib.cpu_seconds(p) for p in pids)
        if now - last < quiet_per_process * len(pids):
            break
        last = now
    return time.monotonic() - t0


def poll(condition, limit, interval=0.02):
    """The first truthy value of condition() polled every `interval` s; None after `limit` s."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        got = condition()
        if got:
            return got
        time.sleep(interval)
    return None


# --- ingest


def split_workload(workload, parts=3):
    """workload.jsonl split by run (run i to part i % parts), cached beside it; returns the paths."""
    out = os.path.join(workload, f"split{parts}")
    paths = [os.path.join(out, f"part{i}.jsonl") for i in range(parts)]
    if all(os.path.exists(p) for p in paths):
        return paths
    os.makedirs(out, exist_ok=True)
    runs = benchlib.workload_meta(workload)["run_names"]
    index = {name: i % parts for i, name in enumerate(runs)}
    tmp = [p + ".tmp" for p in paths]
    files = [open(p, "w") for p in tmp]
    with open(os.path.join(workload, "workload.jsonl")) as f:
        for line in f:
            files[index[json.loads(line[:line.index(",")] + "}")["run"]]].write(line)
    for f, t, p in zip(files, tmp, paths):
        f.close()
        os.rename(t, p)
    return paths


def run_writers(args, targets, parts, project=None):
    """One bin/ingest_bench per part, part i to targets[i], all at once; returns their reports, each
    with `sending_from`/`acked_at` (monotonic: the client's own clock starts once its requests are
    built, so its sending began `wall_s` before it exited)."""
    reports = [None] * len(parts)

    def one(i):
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
            out = tmp.name
        cmd = [benchlib.binary(args, "ingest_bench"), "--transport", "grpc", "--target", targets[i],
               "--workload", parts[i], "--streams", str(args.streams), "--inflight", str(args.inflight),
               "--rows-per-batch", str(args.rows_per_batch), "--label", f"writer{i}", "--json-out", out]
        if project:
            cmd += ["--project", project]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        acked_at = time.monotonic()
        try:
            if proc.returncode != 0:
                raise RuntimeError(f"ingest_bench writer{i} failed ({proc.returncode}): {proc.stderr.strip()}")
            with open(out) as f:
                r = json.load(f)
        finally:
            os.unlink(out)
        r["acked_at"], r["sending_from"] = acked_at, acked_at - r["wall_s"]
        reports[i] = r

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(parts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if any(r is None for r in reports):
        raise RuntimeError("a writer failed (see above)")
    for i, r in enumerate(reports):
        failed = f", {r['failed_requests']} requests failed: {r['first_error']}" if r["failed_requests"] else ""
        print(f"    writer{i} -> {targets[i]}: {r['points_accepted']:,} points acknowledged in {r['wall_s']:.2f} s "
              f"({r['points_per_s'] / 1e6:.3f} M/s; ack p50 {r['ack_p50_ms']:.1f} ms, p99 {r['ack_p99_ms']:.1f} ms)"
              f"{failed}", flush=True)
    return reports


def published(nodes):
    return sum(int(n.metric_value("trainwatch_cluster_published_total")) for n in nodes)


def stream_position(nodes):
    """(the stream's last sequence, messages published so far) before a load, on an idle cluster
    whose nodes have applied everything: their applied sequences are the stream's last one."""
    return max(cluster_info(n)["applied_sequence"] for n in nodes), published(nodes)


def wait_applied(nodes, position, limit=600):
    """Waits until every node has applied every message published since `position` (from
    stream_position: the stream's last sequence then, plus every node's published counter since,
    live, where the info view's stream_last_sequence may be a quarter of the lease old); returns
    (last sequence, {node index: monotonic time it was seen applied})."""
    last, published0 = position
    target = last + published(nodes) - published0
    done = {}
    deadline = time.monotonic() + limit
    while len(done) < len(nodes) and time.monotonic() < deadline:
        for i, node in enumerate(nodes):
            if i not in done and cluster_info(node)["applied_sequence"] >= target:
                done[i] = time.monotonic()
        time.sleep(0.02)
    if len(done) < len(nodes):
        raise RuntimeError(f"not every node applied the stream up to {target} in {limit} s")
    return target, done


def ingest_round(args, Server, BenchCluster, workload, parts, points, mode, round_no):
    root = benchlib.scratch_dir(args, f"cluster-ingest-{mode}-{round_no}")
    print(f"\n# round {round_no + 1}: {mode}", flush=True)
    if mode == "single-node":
        server = Server(os.path.join(root, "single"), extra_args=["--log-level", "warn"]).start(timeout=120)
        servers, nats, targets = [server], [], [f"127.0.0.1:{server.grpc_port}"] * 3
        cluster = None
    else:
        cluster = BenchCluster(root, partitions=args.partitions, lease=args.lease).__enter__()
        servers, nats = cluster.nodes, cluster.nats
        targets = [f"127.0.0.1:{n.grpc_port}" for n in servers]
    try:
        pids = {f"tw{i}": s.proc.pid for i, s in enumerate(servers)}
        pids.update({f"nats{i}": n.proc.pid for i, n in enumerate(nats)})
        position = stream_position(servers) if cluster else None
        meter = Meter(pids)
        reports = run_writers(args, targets, parts)
        acked = meter.read()
        start = min(r["sending_from"] for r in reports)
        ack_end = max(r["acked_at"] for r in reports)
        accepted = sum(r["points_accepted"] for r in reports)
        result = {"mode": mode, "points": accepted, "ack_wall_s": ack_end - start, "acked": acked}
        if cluster:
            target, done = wait_applied(servers, position)
            result["applied_wall_s"] = max(done.values()) - start
            result["stream_messages"] = target
            per_node = ", ".join(f"tw{i} {t - start:.2f} s" for i, t in sorted(done.items()))
            print(f"  stream: {target} messages ({accepted / max(1, target):,.0f} points each); applied on every "
                  f"node {result['applied_wall_s']:.2f} s after the first write ({per_node})", flush=True)
        quiet = wait_quiet(list(pids.values()))
        settled = meter.read()
        result["settled"] = settled
        report_ingest(result, quiet)
        return result
    finally:
        if cluster:
            cluster.__exit__(None, None, None)
        else:
            servers[0].close()


def cpu_split(m):
    tw = sum(v for k, v in m["cpu"].items() if k.startswith("tw"))
    nats = sum(v for k, v in m["cpu"].items() if k.startswith("nats"))
    return tw, nats


def report_ingest(r, quiet):
    points = r["points"]
    a, s = r["acked"], r["settled"]
    tw_a, nats_a = cpu_split(a)
    tw_s, nats_s = cpu_split(s)
    print(f"  acknowledged: {points:,} points in {r['ack_wall_s']:.2f} s -> {points / r['ack_wall_s'] / 1e6:.3f} M "
          f"points/s (load {a['load']:.2f}, others {a['others_cores']:.2f} cores, "
          f"writers {a['clients_cpu']:.2f} CPU-s)")
    if "applied_wall_s" in r:
        print(f"  applied on every node: {points / r['applied_wall_s'] / 1e6:.3f} M points/s")
    detail = ", ".join(f"{k} {v:.2f}" for k, v in s["cpu"].items())
    print(f"  server CPU once quiet ({quiet:.1f} s after the last ack): trainwatch {tw_s:.2f} s, nats-server "
          f"{nats_s:.2f} s ({detail}); during the acks: trainwatch {tw_a:.2f} s, nats-server {nats_a:.2f} s")
    per = lambda cpu: f"{points / cpu / 1e6:.3f} M" if cpu > 0 else "-"
    print(f"  points per CPU-second: trainwatch {per(tw_s)}, nats-server {per(nats_s)}, all servers "
          f"{per(tw_s + nats_s)} (load {s['load']:.2f}, others {s['others_cores']:.2f} cores)", flush=True)


def ingest_part(args, Server, BenchCluster):
    workload = benchlib.ensure_workload(args)
    points = benchlib.workload_meta(workload)["points"]
    parts = split_workload(workload)
    print(f"## ingest: preset {args.preset} ({points:,} points) in 3 parts by run, gRPC, each writer "
          f"{args.streams} streams x {args.inflight} in flight x {args.rows_per_batch} rows; single-node vs "
          f"3 nats-server + 3 trainwatch (partitions {args.partitions}, lease {args.lease}); {args.rounds} round(s)",
          flush=True)
    results = []
    for round_no in range(args.rounds):
        for mode in ("single-node", "cluster"):
            results.append(ingest_round(args, Server, BenchCluster, workload, parts, points, mode, round_no))
    print("\n## ingest summary (CPU once quiet: every node's apply and sealing included)")
    print(f"{'mode':12} {'ack Mpts/s':>10} {'applied Mpts/s':>14} {'tw CPU-s':>8} {'nats CPU-s':>10} "
          f"{'Mpts/tw-CPU-s':>13} {'Mpts/all-CPU-s':>14} {'others':>6} {'load':>5}")
    for r in results:
        tw, nats = cpu_split(r["settled"])
        p = r["points"]
        applied = p / r["applied_wall_s"] / 1e6 if "applied_wall_s" in r else p / r["ack_wall_s"] / 1e6
        print(f"{r['mode']:12} {p / r['ack_wall_s'] / 1e6:10.3f} {applied:14.3f} {tw:8.2f} {nats:10.2f} "
              f"{p / tw / 1e6:13.3f} {p / (tw + nats) / 1e6:14.3f} {r['acked']['others_cores']:6.2f} "
              f"{r['acked']['load']:5.2f}")


# --- latency


class LiveWatch:
    """A WebSocket on /api/v1/live subscribed to one run; the monotonic receipt time of each step."""

    def __init__(self, node, project, run, metric):
        import websocket  # python3-websocket (Debian)

        self.websocket = websocket
        self.metric = metric
        self.ws = websocket.create_connection(node.ws_url + "/api/v1/live", timeout=10)
        self.ws.send(json.dumps({"subscribe": {"project": project, "runs": [run]}}))
        reply = json.loads(self.ws.recv())
        if reply.get("type") != "subscribed":
            raise RuntimeError(f"subscribe failed: {reply}")
        self.ws.settimeout(0.2)
        self.received = {}
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._receive, daemon=True)
        self.thread.start()

    def _receive(self):
        while not self.stopping.is_set():
            try:
                text = self.ws.recv()
            except self.websocket.WebSocketTimeoutException:
                continue
            except (self.websocket.WebSocketConnectionClosedException, OSError):
                return  # the server went away (the run is over)
            now = time.monotonic()
            msg = json.loads(text)
            if msg.get("type") != "points":
                continue
            with self.lock:
                for step, *_ in msg["metrics"].get(self.metric, []):
                    self.received.setdefault(step, now)

    def get(self, step):
        with self.lock:
            return self.received.get(step)

    def close(self):
        self.stopping.set()
        self.thread.join()
        self.ws.close()


class Http:
    """A keep-alive connection to a node."""

    def __init__(self, node):
        self.conn = http.client.HTTPConnection(*hostport(node))

    def request(self, method, path, body=None, headers=None):
        self.conn.request(method, path, body=body, headers=headers or {})
        r = self.conn.getresponse()
        return r.status, r.read()


class LoadTarget:
    """What benchlib.BackgroundLoad needs of a server: a gRPC address, a pid and its CPU."""

    def __init__(self, node):
        self.grpc, self.pid = f"127.0.0.1:{node.grpc_port}", node.proc.pid

    def cpu(self):
        return benchlib.cpu_seconds(self.pid)


def latency_phase(args, cluster, load_rate):
    """One phase of --latency-writes probes, with a paced background load into tw2 (C) when
    load_rate > 0; prints its figures and returns (name, query on B, WebSocket on B) in ms."""
    n, rate = args.latency_writes, args.latency_rate
    name = "idle" if not load_rate else f"load {load_rate / 1e3:g}k points/s into tw2"
    project, run, metric = "latency", f"probe-{int(load_rate)}", "v"
    a, b = cluster.nodes[0], cluster.nodes[1]
    watch_b, watch_a = LiveWatch(b, project, run, metric), LiveWatch(a, project, run, metric)
    writer, reader = Http(a), Http(b)
    sent, acked, queried, missing = {}, {}, {}, 0
    load = None
    if load_rate:
        args.seconds = (n + args.latency_warmup) / rate + 2  # BackgroundLoad's length
        load = benchlib.BackgroundLoad(args, LoadTarget(cluster.nodes[2]), f"load{int(load_rate)}", load_rate)
    pids = [s.proc.pid for s in cluster.nodes] + [x.proc.pid for x in cluster.nats]
    meter = Meter({str(p): p for p in pids})
    next_at = time.monotonic()
    first = args.latency_warmup + 1  # the steps before it warm up (not counted)
    last = first + n - 1
    for step in range(1, last + 1):
        time.sleep(max(0.0, next_at - time.monotonic()))
        next_at += 1.0 / rate
        line = json.dumps({"project": project, "run": run, "step": step, "metrics": {metric: float(step)}})
        sent[step] = time.monotonic()
        status, body = writer.request("POST", "/api/v1/write", line, {"Content-Type": "application/x-ndjson"})
        acked[step] = time.monotonic()
        if status != 200:
            raise RuntimeError(f"write refused: {status} {body[:200]}")
        query = "/api/v1/series?" + urllib.parse.urlencode(
            {"project": project, "run": run, "metric": metric, "from": step, "to": step})

        def visible():
            status, body = reader.request("GET", query)
            return status == 200 and any(s["points"] for s in json.loads(body)["series"])

        deadline = time.monotonic() + 10
        while not visible():
            if time.monotonic() > deadline:
                missing += 1
                break
        else:
            queried[step] = time.monotonic()
    poll(lambda: watch_b.get(last) and watch_a.get(last), 10)
    m = meter.read()
    watch_b.close()
    watch_a.close()
    heading = name
    if load:
        r = load.finish()
        heading += (f" (achieved {r['points_per_s'] / 1e3:.0f}k points/s, its ack p50 {r['ack_p50_ms']:.1f} ms, "
                    f"p99 {r['ack_p99_ms']:.1f} ms)")
    ms = lambda pairs: [(x - y) * 1e3 for x, y in pairs if x is not None]
    steps = range(first, last + 1)
    rows = [
        ("write ack on A (send -> ack)", ms((acked[s], sent[s]) for s in steps)),
        ("query on B (ack on A -> visible)", ms((queried.get(s), acked[s]) for s in steps)),
        ("WebSocket on B (ack on A -> pushed)", ms((watch_b.get(s), acked[s]) for s in steps)),
        ("WebSocket on B (send to A -> pushed)", ms((watch_b.get(s), sent[s]) for s in steps)),
        ("WebSocket on A (send to A -> pushed)", ms((watch_a.get(s), sent[s]) for s in steps)),
    ]
    print(f"# {heading}")
    print(f"  load {m['load']:.2f} (1 min), others {m['others_cores']:.2f} cores"
          + (" (the load's client included)" if load else "") + ", cluster processes "
          f"{sum(m['cpu'].values()) / m['elapsed']:.2f} cores over {m['elapsed']:.1f} s"
          + (f"; {missing} writes never visible on B within 10 s" if missing else ""))
    for label, values in rows:
        print(f"  {label:38} {benchlib.percentiles(values)}")
    early = sum(1 for s in steps if watch_b.get(s) is not None and watch_b.get(s) < acked[s])
    if early:
        print(f"  ({early} of {n} points reached B's WebSocket before A's ack reached the writer: negative "
              f"ack-relative latencies)")
    print(flush=True)
    return name, rows[1][1], rows[2][1], m["load"]


def latency_part(args, Server, BenchCluster):
    root = benchlib.scratch_dir(args, "cluster-latency")
    loads = [float(x) for x in args.latency_loads.split(",") if x != ""]
    print(f"\n## latency: {args.latency_writes} writes of one point (after {args.latency_warmup} not counted), "
          f"{args.latency_rate:g}/s, POST /api/v1/write to tw0 (A); after each ack tw1 (B) is polled with "
          f"/api/v1/series for that step; WebSockets on B and on A; phases: background load "
          f"{', '.join(f'{x:g}' for x in loads)} points/s over gRPC into tw2", flush=True)
    summary = []
    with BenchCluster(root, partitions=args.partitions, lease=args.lease) as cluster:
        for load_rate in loads:
            summary.append(latency_phase(args, cluster, load_rate))
    print("## latency summary: ack on A -> visible on B, ms")
    print(f"{'phase':36} {'query p50':>9} {'p99':>7} {'WS p50':>7} {'p99':>7} {'load':>5}")
    for name, query, ws, load in summary:
        q, w = sorted(query) or [float("nan")], sorted(ws) or [float("nan")]
        print(f"{name:36} {benchlib.nearest_rank(q, 0.5):9.2f} {benchlib.nearest_rank(q, 0.99):7.2f} "
              f"{benchlib.nearest_rank(w, 0.5):7.2f} {benchlib.nearest_rank(w, 0.99):7.2f} {load:5.2f}", flush=True)


# --- failover


def owned(node):
    return int(node.metric_value("trainwatch_cluster_partitions_owned"))


def settled_ownership(nodes, partitions):
    """Whether every node's view names the rendezvous owner over the nodes for every partition
    and every node holds exactly those (its /metrics, live); returns the owners."""
    from harness.nats_cluster import rendezvous_owner  # importable once load_harness ran
    names = sorted(cluster_info(n)["node"] for n in nodes)
    want = [rendezvous_owner(p, names) for p in range(partitions)]
    if any(owned(n) != want.count(cluster_info(n)["node"]) for n in nodes):
        return None
    return want if all(cluster_info(n)["owners"] == want for n in nodes) else None


class Responsiveness:
    """A thread asking `path` of a node again and again from now until stop(); how long the answers
    took (a node whose HTTP threads are blocked shows here)."""

    def __init__(self, node, path, t0):
        self.node, self.path, self.t0 = node, path, t0
        self.times = []  # (asked, answered), s after t0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        conn = Http(self.node)
        while not self.stopping.is_set():
            asked = time.monotonic() - self.t0
            conn.request("GET", self.path)
            self.times.append((asked, time.monotonic() - self.t0))
            self.stopping.wait(0.02)  # the sampling interval; stop() ends it at once

    def stop(self):
        self.stopping.set()
        self.thread.join()

    def summary(self):
        if not self.times:
            return "no answer"
        asked, answered = max(self.times, key=lambda x: x[1] - x[0])
        return (f"{len(self.times)} answers, the slowest asked at {asked:.2f} s and answered "
                f"{(answered - asked) * 1e3:.0f} ms later")


def failover_part(args, Server, BenchCluster):
    workload = benchlib.ensure_workload(args)
    points = benchlib.workload_meta(workload)["points"]
    parts = split_workload(workload)
    root = benchlib.scratch_dir(args, "cluster-failover")
    print(f"\n## failover: lease {args.lease}, {args.partitions} partitions; the stream loaded with preset "
          f"{args.preset} ({points:,} points) first" + (f", {args.failover_copies} times (projects copy0...)"
                                                       if args.failover_copies > 1 else ""), flush=True)
    with BenchCluster(root, partitions=args.partitions, lease=args.lease) as cluster:
        nodes = cluster.nodes
        owners = poll(lambda: settled_ownership(nodes, args.partitions), 120, interval=0.2)
        if owners is None:
            raise RuntimeError("the partitions did not settle over the three nodes")
        print("  owners: " + ", ".join(f"tw{i} {owned(n)}" for i, n in enumerate(nodes)), flush=True)
        position = stream_position(nodes)
        loaded = 0
        for copy in range(args.failover_copies):
            reports = run_writers(args, [f"127.0.0.1:{n.grpc_port}" for n in nodes], parts,
                                  project=f"copy{copy}" if args.failover_copies > 1 else None)
            loaded += sum(r["points_accepted"] for r in reports)
        last_seq, _ = wait_applied(nodes, position)
        print(f"  loaded: {loaded:,} points in {last_seq} stream messages, applied on every node", flush=True)

        victim_index = max(range(len(nodes)), key=lambda i: (owned(nodes[i]), i))
        victim, survivors = nodes[victim_index], [n for i, n in enumerate(nodes) if i != victim_index]
        victim_name = f"tw{victim_index}"
        had = owned(victim)
        load = loadavg()
        t_kill = time.monotonic()
        victim.kill9()
        t_metrics = t_view = None
        while (t_metrics is None or t_view is None) and time.monotonic() - t_kill < 180:
            if t_metrics is None and sum(owned(n) for n in survivors) == args.partitions:
                t_metrics = time.monotonic() - t_kill
            if t_view is None:
                views = [cluster_info(n)["owners"] for n in survivors]
                if all(all(o is not None and o != victim_name for o in v) for v in views):
                    t_view = time.monotonic() - t_kill
            time.sleep(0.05)
        fmt = lambda t: f"{t:.2f} s" if t is not None else "not within 180 s"
        print(f"  kill -9 {victim_name} (owned {had} of {args.partitions}; load {load:.2f}): the survivors own every "
              f"partition after {fmt(t_metrics)} (/metrics, live); both survivors' /api/v1/info name a live owner "
              f"for every partition after {fmt(t_view)} (the view refreshes every quarter of the lease)", flush=True)

        # Rebuild: a fresh node replays the stream into an empty store.
        fresh = Server(os.path.join(root, "tw3"), extra_args=cluster.node_flags("tw3"))
        try:
            load = loadavg()
            nats_pids = [x.proc.pid for x in cluster.nats if x.running]
            nats0 = sum(benchlib.cpu_seconds(p) for p in nats_pids)
            busy0 = benchlib.machine_busy_seconds()
            t_spawn = time.monotonic()
            fresh.start(timeout=120)
            t_serving = time.monotonic() - t_spawn
            samples, asked = [], []  # (answered, applied sequence) and (asked, answered), s after the start
            health = Responsiveness(fresh, "/healthz", t_spawn)

            def caught_up():
                t = time.monotonic() - t_spawn
                c = cluster_info(fresh)
                samples.append((time.monotonic() - t_spawn, c["applied_sequence"]))
                asked.append((t, samples[-1][0]))
                return c["applied_sequence"] >= last_seq

            caught = poll(caught_up, 600)
            health.stop()
            if not caught:
                raise RuntimeError(f"tw3 did not apply the stream up to {last_seq} in 600 s")
            t_caught = samples[-1][0]
            cpu = benchlib.cpu_seconds(fresh.proc.pid)
            nats_cpu = sum(benchlib.cpu_seconds(p) for p in nats_pids) - nats0
            busy = (benchlib.machine_busy_seconds() - busy0) / (time.monotonic() - t_spawn)
            first = next(((t, s) for t, s in samples if s > 0), samples[0])
            per_msg = loaded / last_seq
            print(f"  rebuild: fresh node tw3 (empty data dir) serving {t_serving:.2f} s after its start; caught up "
                  f"(applied sequence {last_seq}) {t_caught:.2f} s after its start -> {loaded / t_caught / 1e6:.3f} M "
                  f"points/s ({last_seq / t_caught:,.0f} messages/s)", flush=True)
            print(f"    its applied sequence, polled every 20 ms from {samples[0][0]:.2f} s: {samples[0][1]} first, "
                  f"first above 0 at {first[0]:.2f} s ({first[1]}); {len(set(x for _, x in samples))} distinct values "
                  f"(the applier moves it once per fetch of up to 256 messages)", flush=True)
            slowest = max(asked, key=lambda x: x[1] - x[0])
            print(f"    while it caught up: {len(asked)} /api/v1/info answers, the slowest asked at {slowest[0]:.2f} s "
                  f"and answered {slowest[1] - slowest[0]:.2f} s later; /healthz polled meanwhile: {health.summary()}",
                  flush=True)
            if t_caught > first[0]:
                steady = (last_seq - first[1]) * per_msg / (t_caught - first[0])
                print(f"    from the first sample to caught up: {steady / 1e6:.3f} M points/s", flush=True)
            print(f"    its CPU {cpu:.2f} s (start-up included) -> {loaded / cpu / 1e6:.3f} M points per CPU-s; "
                  f"nats-server CPU meanwhile {nats_cpu:.2f} s; load {load:.2f} before, {loadavg():.2f} after; "
                  f"the machine's busy cores meanwhile (all processes) {busy:.2f}", flush=True)
            members = survivors + [fresh]
            share = poll(lambda: settled_ownership(members, args.partitions), 120, interval=0.05)
            print(f"  tw3 holds its rendezvous share ({owned(fresh)} of {args.partitions} partitions) "
                  + (f"{time.monotonic() - t_spawn:.2f} s after its start" if share else "not within 120 s"),
                  flush=True)
        finally:
            fresh.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    benchlib.add_common_args(parser)
    parser.add_argument("--part", default=",".join(PARTS), help="comma-separated: " + ",".join(PARTS))
    parser.add_argument("--rounds", type=int, default=1, help="ingest: interleaved single-node/cluster rounds")
    parser.add_argument("--streams", type=int, default=2, help="ingest: gRPC streams per writer (3 writers)")
    parser.add_argument("--inflight", type=int, default=8)
    parser.add_argument("--rows-per-batch", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=16)
    parser.add_argument("--lease", default="10s", help="--cluster-lease of every node (the server's default: 10s)")
    parser.add_argument("--failover-copies", type=int, default=1,
                        help="failover: load the workload this many times (one project each) before the kill")
    parser.add_argument("--latency-writes", type=int, default=300)
    parser.add_argument("--latency-rate", type=float, default=20.0, help="writes per second")
    parser.add_argument("--latency-warmup", type=int, default=10, help="writes before the counted ones")
    parser.add_argument("--latency-loads", default="0,200000",
                        help="background loads into tw2 during the latency phases, points/s (0: idle)")
    args = parser.parse_args()
    parts = args.part.split(",")
    for p in parts:
        if p not in PARTS:
            parser.error(f"unknown part {p!r}")
    Server, BenchCluster = load_harness(args)
    print(f"# {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, {os.cpu_count()} cores, load {loadavg():.2f}",
          flush=True)
    if "ingest" in parts:
        ingest_part(args, Server, BenchCluster)
    if "latency" in parts:
        latency_part(args, Server, BenchCluster)
    if "failover" in parts:
        failover_part(args, Server, BenchCluster)


if __name__ == "__main__":
    main()
