"""Cluster mode in tests (docs/cluster.md): real Debian `nats-server` processes forming a JetStream
cluster on 127.0.0.1, and trainwatch nodes (`serve --nats ... --node-name twN`) joined to it.

    with TrainwatchCluster(workdir, nodes=3, partitions=8, lease="3s") as c:
        c.nats[0].kill(); c.nats[0].restart(); c.nodes[1].kill9(); c.start_node(1)

Each nats-server picks its own ports (-1) and says them in its log, which a thread reads as it
comes; a start waits for the line a ready server writes last, never for time. A restarted server
keeps its client and route ports and its data."""
import json
import os
import queue
import re
import signal
import socket
import subprocess
import threading
from urllib.parse import urlparse

from .server import Server

NATS_SERVER = "/usr/sbin/nats-server"


def nats_available():
    return os.access(NATS_SERVER, os.X_OK)


class NatsNode:
    """One nats-server process of the cluster `cluster_name`."""

    READY = "Listening for route connections"

    def __init__(self, workdir, name, cluster_name="twtest"):
        self.name = name
        self.cluster_name = cluster_name
        self.data = os.path.join(workdir, name)
        os.makedirs(self.data, exist_ok=True)
        self.config = self.data + ".conf"
        with open(self.config, "w") as f:  # the defaults reserve most of RAM and disk
            f.write('jetstream {\n  store_dir: "%s"\n  max_memory_store: 64MB\n  max_file_store: 1GB\n}\n' % self.data)
        self.proc = None
        self.client_port = None
        self.route_port = None
        self.routes = []
        self.log = []

    def start(self, routes, client_port=-1, route_port=-1):
        """Starts the server routing to `routes` (nats:// route URLs); ports -1: its own choice."""
        self.routes = list(routes)
        self.log = []
        self.proc = subprocess.Popen(
            [NATS_SERVER, "-c", self.config, "-a", "127.0.0.1", "-p", str(client_port), "--server_name", self.name,
             "--cluster_name", self.cluster_name, "--cluster", "nats://127.0.0.1:%d" % route_port,
             "--routes", ",".join(self.routes), "-js"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        ready = queue.Queue(maxsize=1)
        threading.Thread(target=self._read, args=(self.proc.stderr, ready), daemon=True).start()
        assert ready.get(timeout=60), "nats-server %s did not start:\n%s" % (self.name, "".join(self.log))
        text = "".join(self.log)
        self.client_port = int(re.search(r"Listening for client connections on 127\.0\.0\.1:(\d+)", text).group(1))
        self.route_port = int(re.search(r"Listening for route connections on 127\.0\.0\.1:(\d+)", text).group(1))

    def restart(self):
        """Starts the killed server again on the same ports with the same data and routes."""
        assert self.proc is None or self.proc.poll() is not None, "%s is still running" % self.name
        self.start(self.routes, self.client_port, self.route_port)

    def _read(self, pipe, ready):
        told = False
        for raw in iter(pipe.readline, b""):
            line = raw.decode("utf-8", "replace")
            self.log.append(line)
            if not told and self.READY in line:
                ready.put(True)
                told = True
        if not told:
            ready.put(False)

    @property
    def url(self):
        return "nats://127.0.0.1:%d" % self.client_port

    @property
    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        if self.running:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)


class TrainwatchCluster:
    """`nats` NatsNodes (R3 needs three) and `nodes` trainwatch servers joined to them, each in its
    own directory under `workdir`. `node_args` are added to every node's command line."""

    def __init__(self, workdir, nodes=3, nats=3, partitions=8, lease="3s", node_args=()):
        self.workdir = str(workdir)
        self.partitions = partitions
        self.lease = lease
        self.node_args = list(node_args)
        self.nats = [NatsNode(self.workdir, "n%d" % i) for i in range(nats)]
        self.nodes = [None] * nodes

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    def start(self):
        # A JetStream cluster needs a route to start: the first server's leads nowhere (port 1)
        # until the others route to it.
        self.nats[0].start(["nats://127.0.0.1:1"])
        for n in self.nats[1:]:
            n.start(["nats://127.0.0.1:%d" % self.nats[0].route_port])
        for i in range(len(self.nodes)):
            self.start_node(i)

    @property
    def nats_urls(self):
        return ",".join(n.url for n in self.nats)

    def start_node(self, i):
        """Starts trainwatch node i (`twi`), or starts it again on its data directory and ports."""
        if self.nodes[i] is None:
            self.nodes[i] = Server(os.path.join(self.workdir, "tw%d" % i), extra_args=[
                "--nats", self.nats_urls, "--node-name", "tw%d" % i, "--partitions", str(self.partitions),
                "--cluster-lease", self.lease, "--http-threads", "1", "--query-threads", "1", *self.node_args])
        # The first node joins once NATS has elected its metadata leader.
        return self.nodes[i].start(timeout=120)

    def close(self):
        nats_up = any(n.running for n in self.nats)
        for node in self.nodes:
            if node is None:
                continue
            if nats_up and node.alive():
                node.close()  # while NATS is up, so that it leaves cleanly
            else:
                node.kill9()
                node.release_ports()
        for n in self.nats:
            n.kill()


def jetstream_request(url, subject, payload=None, timeout=30):
    """One JetStream API request (e.g. `$JS.API.STREAM.INFO.<stream>`) through the NATS client
    protocol spoken over a plain socket (no NATS client library on this machine): connects to
    `url` (nats://host:port), sends `payload` (a dict, as JSON) with a reply inbox, and returns the
    answer parsed. The server answers an API request or says why not; `timeout` only guards a hang."""
    u = urlparse(url)
    with socket.create_connection((u.hostname, u.port), timeout=timeout) as sock:
        f = sock.makefile("rb")
        assert f.readline().startswith(b"INFO "), "not a NATS server at %s" % url
        body = json.dumps(payload or {}).encode()
        inbox = "_INBOX.twtest.%d" % os.getpid()
        sock.sendall(b'CONNECT {"verbose":false,"pedantic":false,"headers":false}\r\n'
                     + ("SUB %s 1\r\n" % inbox).encode()
                     + ("PUB %s %s %d\r\n" % (subject, inbox, len(body))).encode() + body + b"\r\n")
        while True:
            line = f.readline()
            assert line, "the NATS server closed the connection"
            if line.startswith(b"PING"):
                sock.sendall(b"PONG\r\n")
            elif line.startswith(b"-ERR"):
                raise AssertionError("NATS: %s" % line.decode().strip())
            elif line.startswith(b"MSG "):
                size = int(line.split()[-1])
                data = f.read(size + 2)[:size]
                return json.loads(data)


def stream_state(url, stream):
    """The stream's state (`messages`, `first_seq`, `last_seq`, ...) as JetStream reports it."""
    answer = jetstream_request(url, "$JS.API.STREAM.INFO." + stream)
    assert "error" not in answer, answer
    return answer["state"]


def purge_stream_below(url, stream, sequence):
    """Removes the stream's messages with a sequence below `sequence` (what max_age does to old
    ones); returns how many went."""
    answer = jetstream_request(url, "$JS.API.STREAM.PURGE." + stream, {"seq": sequence})
    assert answer.get("success"), answer
    return answer["purged"]


# -- what the cluster tests and bench/cluster_bench.py share ----------------------------------------

T0 = 1767225600.0  # the time of step 0 in loss_request


def loss_value(run, step):
    """The loss of `run` at `step` in loss_request: run-specific, so that runs cannot be mixed up."""
    return (sum(map(ord, run)) % 97) + step / 8.0


def loss_request(pb, project, writer, sequence, runs, steps):
    """A WriteRequest of writer `writer` (pb: harness.ingest_pb.load()): `steps` of metric loss for
    each of `runs` in `project`, valued by loss_value."""
    req = pb.WriteRequest(writer_id=writer, sequence=sequence)
    for run in runs:
        batch = req.runs.add(project=project, run=run)
        batch.steps.extend(steps)
        batch.times.extend(T0 + s for s in steps)
        batch.metrics.add(name="loss", values=[loss_value(run, s) for s in steps])
    return req


def rendezvous_owner(p, members):
    """src/cluster/membership.cc's PreferredOwner in Python, so that tests and benchmarks check the
    assignment independently of the server's code."""
    mask = (1 << 64) - 1

    def weight(member):
        h = 14695981039346656037
        for c in member.encode():
            h = ((h ^ c) * 1099511628211) & mask
        h ^= p
        h = (h + 0x9e3779b97f4a7c15) & mask
        h = ((h ^ (h >> 30)) * 0xbf58476d1ce4e5b9) & mask
        h = ((h ^ (h >> 27)) * 0x94d049bb133111eb) & mask
        return h ^ (h >> 31)

    return max(sorted(members), key=weight)  # ties: the first name (max keeps the first maximum)
