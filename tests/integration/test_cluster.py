"""Cluster mode (issue 15, docs/cluster.md) with real processes on 127.0.0.1: three Debian
`nats-server` nodes forming a JetStream cluster (R3 streams and buckets), and three
`trainwatch serve --nats ... --node-name nN` nodes on port 0.

- Concurrent writers, each through another node, with the SDK's writer ids and sequences; a batch
  resent through a different node is acknowledged as a duplicate; every acknowledged point is
  present exactly once in the answers of every node (/api/v1/runs and /api/v1/series).
- Partitions are spread over the nodes; after a kill -9 of one node the two others take its
  partitions over (its leases expire), and writes through them go on with nothing lost.
- With NATS unreachable, a write is refused with 503 and Retry-After (the SDK spools it), and
  reads are still answered from the node's own store.

Waits are on conditions (harness.wait_until) and on the processes' own log lines, never on time.
"""
import os
import threading

import pytest

from conftest import BIN
from harness import ingest_pb, wait_until
from harness.nats_cluster import TrainwatchCluster, loss_request, loss_value as value, nats_available

PARTITIONS = 8
PROJECT = "cl"
pytestmark = pytest.mark.skipif(not nats_available(),
                                reason="nats-server is missing (scripts/install-deps.sh installs it)")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    assert os.access(BIN, os.X_OK), "no trainwatch binary at %s (set TRAINWATCH_BIN)" % BIN
    with TrainwatchCluster(tmp_path_factory.mktemp("cluster"), partitions=PARTITIONS, lease="3s") as c:
        yield {"nats": c.nats, "nodes": c.nodes}


def owned(node):
    return int(node.metric_value("trainwatch_cluster_partitions_owned"))


def series_of(node, runs):
    """run -> [(step, value)] read through `node` (raw points)."""
    params = [("project", PROJECT), ("metric", "loss")] + [("run", r) for r in runs]
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
