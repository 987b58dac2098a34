"""Cluster mode (issue 15, docs/cluster.md) with real processes on 127.0.0.1: three Debian
`nats-server` nodes forming a JetStream cluster (R3 streams and buckets), and three
`trainwatch serve --nats ... --node-name nN` nodes on port 0.

- Concurrent writers, each through another node, with the SDK's writer ids and sequences; a batch
  resent through a different node is acknowledged as a duplicate; every acknowledged point is
  present exactly once in the answers of every node (/api/v1/runs and /api/v1/series).
- A write larger than a NATS message (three 600 KB images and 20,000 rows, over the servers' 1 MiB
  max_payload) goes as several messages: every node serves every image and row, and the batch
  resent through another node is a duplicate.
- Partitions are spread over the nodes; after a kill -9 of one node the two others take its
  partitions over (its leases expire), and writes through them go on with nothing lost.
- With NATS unreachable, a write is refused with 503 and Retry-After (the SDK spools it), and
  reads are still answered from the node's own store.

Waits are on conditions (harness.wait_until) and on the processes' own log lines, never on time.
"""
import hashlib
import os
import random
import struct
import threading
import zlib

import pytest

from conftest import BIN
from harness import ingest_pb, wait_until
from harness.nats_cluster import TrainwatchCluster, loss_request, loss_value as value, nats_available

PARTITIONS = 8
PROJECT = "cl"
BIG_PROJECT = "cl-big"  # the large write's run, apart from the runs the other tests count
pytestmark = pytest.mark.skipif(not nats_available(),
                                reason="nats-server is missing (scripts/install-deps.sh installs it)")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    assert os.access(BIN, os.X_OK), "no trainwatch binary at %s (set TRAINWATCH_BIN)" % BIN
    with TrainwatchCluster(tmp_path_factory.mktemp("cluster"), partitions=PARTITIONS, lease="3s") as c:
        yield {"nats": c.nats, "nodes": c.nodes}


def owned(node):
    return int(node.metric_value("trainwatch_cluster_partitions_owned"))


def series_of(node, runs, project=PROJECT):
    """run -> [(step, value)] read through `node` (raw points)."""
    params = [("project", project), ("metric", "loss")] + [("run", r) for r in runs]
    r = node.get("/api/v1/series", params)
    if r.status == 404:
        return {}
    assert r.status == 200, r
    return {s["run"]: [(p[0], p[-1]) for p in s["points"]] for s in r.json()["series"]}


def expected_series(expected, runs):
    return {run: sorted(expected[run].items()) for run in runs}


def check_every_node(nodes, expected):
    """Every node answers with exactly the expected points of every run (each once)."""
    runs = sorted(expected)
    want = expected_series(expected, runs)
    for node in nodes:
        # A node applies the stream on its own: wait until it has caught up, then compare exactly.
        wait_until(lambda: all(len(points) >= len(want[run]) for run, points in series_of(node, runs).items())
                   and len(series_of(node, runs)) == len(runs), "%s to apply every write" % node.url)
        got = series_of(node, runs)
        for run in runs:
            steps = [s for s, _ in got[run]]
            assert len(steps) == len(set(steps)), "%s: run %s has a step twice: %s" % (node.url, run, steps)
            assert got[run] == want[run], (node.url, run)
        listed = node.get_json("/api/v1/runs", {"project": PROJECT, "limit": 1000})
        assert sorted(r["id"] for r in listed["runs"]) == runs, node.url


def write_concurrently(pb, nodes, writers, sequences, expected, lock):
    """Each writer sends its batches through its own node, all at once; returns the errors."""
    errors = []

    def writer_thread(i):
        node = nodes[i % len(nodes)]
        runs = writers[i]
        for seq in sequences:
            steps = list(range((seq - 1) * 10, seq * 10))
            r = ingest_pb.post(node, loss_request(pb, PROJECT, "w%d" % i, seq, runs, steps))
            if r.status != 200 or r.json()["duplicate_batch"]:
                errors.append((i, seq, r))
                return
            with lock:
                for run in runs:
                    for s in steps:
                        expected.setdefault(run, {})[s] = value(run, s)

    threads = [threading.Thread(target=writer_thread, args=(i,)) for i in range(len(writers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


WRITERS = [["r%d-%d" % (w, k) for k in range(4)] for w in range(3)]  # 12 runs over the partitions
EXPECTED = {}


def test_writes_through_any_node_are_stored_once_and_read_through_every_node(cluster):
    pb = ingest_pb.load()
    nodes = cluster["nodes"]
    # Every partition gets an owner, and each node a share.
    wait_until(lambda: sum(owned(n) for n in nodes) == PARTITIONS and all(owned(n) > 0 for n in nodes),
               "the partitions to be spread over the three nodes")
    lock = threading.Lock()
    errors = write_concurrently(pb, nodes, WRITERS, range(1, 9), EXPECTED, lock)
    assert not errors, errors
    # A batch resent through another node (the SDK retrying after a lost acknowledgement) is a
    # duplicate: JetStream's window has its message ids.
    for i, runs in enumerate(WRITERS):
        r = ingest_pb.post(nodes[(i + 1) % 3], loss_request(pb, PROJECT, "w%d" % i, 4, runs, list(range(30, 40))))
        assert r.status == 200, r
        assert r.json()["duplicate_batch"] is True, r
    check_every_node(nodes, EXPECTED)
    assert sum(len(v) for v in EXPECTED.values()) == 3 * 4 * 8 * 10


def noisy_png(width, height, seed):
    """A PNG of random RGB pixels: it does not compress, so it is about width x height x 3 bytes."""
    rng = random.Random(seed)
    raw = b"".join(b"\x00" + bytes(rng.getrandbits(8) for _ in range(width * 3)) for _ in range(height))

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data +
                struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw, 1)) + chunk(b"IEND", b""))


def test_a_write_larger_than_a_nats_message_is_sent_as_several(cluster):
    pb = ingest_pb.load()
    nodes = cluster["nodes"]
    pngs = [noisy_png(400, 500, seed) for seed in range(3)]
    assert all(len(p) > 550_000 for p in pngs)
    req = pb.WriteRequest(writer_id="big-writer", sequence=1)
    batch = req.runs.add(project=BIG_PROJECT, run="big-batch")
    column = batch.metrics.add(name="loss")
    for step in range(20000):
        batch.steps.append(step)
        batch.times.append(1767225600.0 + step)
        column.values.append(value("big-batch", step))
    for k, data in enumerate(pngs):
        batch.images.add(name="samples", step=k, index=0, data=data)
    batch.metadata.status = "finished"
    assert req.ByteSize() > 2 * (1 << 20)
    r = ingest_pb.post(nodes[0], req)
    assert r.status == 200 and r.json()["errors"] == [], r
    assert r.json()["duplicate_batch"] is False, r
    want = {k: hashlib.sha256(p).hexdigest() for k, p in enumerate(pngs)}
    for node in nodes:
        def images(node=node):
            r = node.get("/api/v1/images", {"project": BIG_PROJECT, "run": "big-batch"})
            if r.status == 404:  # not applied on this node yet
                return None
            assert r.status == 200, r
            return r.json() if len(r.json()) == 3 else None
        listed = wait_until(images, "the three images on %s" % node.url)
        assert {i["step"]: i["sha256"] for i in listed} == want, listed
        blob = node.get(listed[2]["url"])
        assert blob.status == 200 and hashlib.sha256(blob.body).hexdigest() == want[listed[2]["step"]]
        wait_until(lambda node=node: len(series_of(node, ["big-batch"], BIG_PROJECT).get("big-batch", [])) == 20000,
                   "the 20,000 rows on %s" % node.url)
        assert series_of(node, ["big-batch"], BIG_PROJECT)["big-batch"] == [(s, value("big-batch", s)) for s in range(20000)]
        wait_until(lambda node=node: node.get_json("/api/v1/run", {"project": BIG_PROJECT, "run": "big-batch"})
                   ["status"] == "finished", "the run finished on %s" % node.url)
    # Resent through another node, every message of it is a duplicate.
    again = ingest_pb.post(nodes[1], req)
    assert again.status == 200 and again.json()["duplicate_batch"] is True, again


def test_a_killed_node_partitions_are_taken_over_and_nothing_is_lost(cluster):
    pb = ingest_pb.load()
    nodes = cluster["nodes"]
    assert EXPECTED, "runs after the first test"
    victim = nodes[2]
    assert owned(victim) > 0
    victim.kill9()
    survivors = nodes[:2]
    # Its leases expire (--cluster-lease 3s) and the survivors' balancers take its partitions.
    wait_until(lambda: sum(owned(n) for n in survivors) == PARTITIONS,
               "the survivors to own every partition", timeout=90)
    lock = threading.Lock()
    errors = write_concurrently(pb, survivors, WRITERS, range(9, 12), EXPECTED, lock)
    assert not errors, errors
    check_every_node(survivors, EXPECTED)


def test_writes_are_refused_with_503_while_nats_is_unreachable_and_reads_go_on(cluster):
    pb = ingest_pb.load()
    node = cluster["nodes"][0]
    assert EXPECTED, "runs after the first test"
    for n in cluster["nats"]:
        n.kill()
    r = ingest_pb.post(node, loss_request(pb, PROJECT, "w-down", 1, ["r-down"], [0, 1, 2]), timeout=120)
    assert r.status == 503, r
    assert r.headers.get("Retry-After") == "1", r.headers
    runs = sorted(EXPECTED)
    assert series_of(node, runs) == expected_series(EXPECTED, runs)
