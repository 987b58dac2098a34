"""Cluster mode under failures (issue 15, docs/cluster.md), with real processes on 127.0.0.1: three
Debian `nats-server` nodes (JetStream R3) and three `trainwatch serve --nats` nodes.

1. Concurrent writers, each through its own node, with writer ids and sequences; a refused or
   unanswered batch is resent with the same sequence (through another node once its node is
   gone). During the load, `kill -9` of a trainwatch node: every acknowledged point is present
   exactly once in the series and the export read through each surviving node, and every query
   gives the same answer on both.
2. Every NATS server killed while writes keep coming: each is refused with 503 and Retry-After,
   reads go on; a real SDK run (the `trainwatch` package) logging meanwhile is refused and keeps
   its points; the servers restarted, ingest is back on every node within 30 s and every point
   the SDK logged is present exactly once.
3. The killed trainwatch node restarted: it rejoins, owns its rendezvous share of the partitions
   again (the owners every node reports are the rendezvous assignment over three members), catches
   up, and answers with every point exactly once, as the others do.
4. Writers again through all three nodes, and `kill -9` of the JetStream stream leader's
   nats-server (named by the nodes' /api/v1/info): every acknowledged point exactly once on every
   node; the server restarted catches up.

The tests run in order on one cluster. Waits are on conditions (harness.wait_until; its timeout is
the bound of a condition, never a pause), never on time: the outage lasts as long as it takes to
count four refused writes.
"""
import os
import sys
import threading
import time

import pytest

from conftest import BIN, loads
from harness import ingest_pb, wait_until
from harness.nats_cluster import (TrainwatchCluster, loss_request, loss_value as value, nats_available,
                                  rendezvous_owner)

PARTITIONS = 8
PROJECT = "fail"
STEPS = 10  # steps per batch
WRITERS = [["w%d-r%d" % (w, k) for k in range(3)] for w in range(3)]  # 9 runs over the partitions
BUILD_PYTHON = os.environ.get("TRAINWATCH_PYTHONPATH", os.path.join(os.path.dirname(os.path.dirname(BIN)), "python"))
pytestmark = pytest.mark.skipif(not nats_available(),
                                reason="nats-server is missing (scripts/install-deps.sh installs it)")

EXPECTED = {}  # run -> {step: value}: every point some node acknowledged
LOCK = threading.Lock()
STATE = {}  # what a test leaves to the next: the killed node, the SDK run's points


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    assert os.access(BIN, os.X_OK), "no trainwatch binary at %s (set TRAINWATCH_BIN)" % BIN
    with TrainwatchCluster(tmp_path_factory.mktemp("cluster-failures"), partitions=PARTITIONS, lease="3s") as c:
        yield c


# -- helpers ----------------------------------------------------------------------------------------

def acknowledge(runs, steps):
    with LOCK:
        for run in runs:
            for s in steps:
                EXPECTED.setdefault(run, {})[s] = value(run, s)


def info(node):
    return node.get_json("/api/v1/info")["cluster"]


def series_of(node, runs, project=PROJECT):
    """run -> [(step, value)] read through `node` (raw points)."""
    r = node.get("/api/v1/series", [("project", project), ("metric", "loss")] + [("run", r) for r in runs])
    if r.status == 404:
        return {}
    assert r.status == 200, r
    return {s["run"]: [(p[0], p[-1]) for p in s["points"]] for s in r.json()["series"]}


def exported(node, run, project=PROJECT):
    """[(step, loss)] of the run's /api/v1/export lines, in their order."""
    r = node.get("/api/v1/export", {"project": project, "run": run}, timeout=120)
    assert r.status == 200, r
    lines = [loads(line) for line in r.text.split("\n") if line.strip()]
    return [(line["step"], line["metrics"]["loss"]) for line in lines if "loss" in line.get("metrics", {})]


def caught_up(node):
    """The node has applied the whole stream (as far as it last read the stream's end)."""
    v = info(node)
    return v["stream_last_sequence"] > 0 and v["consumer_lag"] == 0 and v["applied_sequence"] >= v["stream_last_sequence"]


def wait_caught_up(nodes, what):
    """Waits until every node has applied the stream to its end; a timeout names each one's view."""
    try:
        wait_until(lambda: all(caught_up(n) for n in nodes), what, timeout=90)
    except AssertionError as e:
        seen = ["%s: stream_last_sequence %d applied_sequence %d consumer_lag %d leader %s" % (
            v["node"], v["stream_last_sequence"], v["applied_sequence"], v["consumer_lag"], v["stream_leader"])
            for v in (info(n) for n in nodes)]
        raise AssertionError("%s\n%s" % (e, "\n".join(seen))) from None


def answers(node, runs):
    """What the node answers: its run listing, every run's raw series and every run's export."""
    listed = sorted(r["id"] for r in node.get_json("/api/v1/runs", {"project": PROJECT, "limit": 1000})["runs"])
    return listed, series_of(node, runs), {run: exported(node, run) for run in runs}


def check_exactly_once(nodes, expected):
    """Every node answers with exactly the expected points of every run, each once, in the series
    and in the export; and every node gives the same answers."""
    runs = sorted(expected)
    want = {run: sorted(expected[run].items()) for run in runs}
    seen = []
    for node in nodes:
        # A node applies the stream by itself: wait until it holds every acknowledged point.
        try:
            wait_until(lambda: (lambda got: len(got) == len(runs) and all(len(got[r]) >= len(want[r]) for r in runs))(
                series_of(node, runs)), "%s to apply every acknowledged write" % node.url, timeout=90)
        except AssertionError as e:
            got = series_of(node, runs)
            missing = {run: sorted(set(s for s, _ in want[run]) - set(s for s, _ in got.get(run, [])))
                       for run in runs}
            raise AssertionError("%s\nmissing steps: %s\nviews: %s" % (
                e, {r: m for r, m in missing.items() if m}, [info(n) for n in nodes])) from None
        listed, series, export = answers(node, runs)
        for run in runs:
            steps = [s for s, _ in series[run]]
            assert len(steps) == len(set(steps)), "%s: run %s has a step twice in its series" % (node.url, run)
            assert series[run] == want[run], (node.url, run, "series")
            assert sorted(export[run]) == want[run], (node.url, run, "export")
            assert len(export[run]) == len(want[run]), (node.url, run, "a point exported twice")
        assert set(runs) <= set(listed), (node.url, listed)
        seen.append((listed, series, export))
    for node, other in zip(nodes[1:], seen[1:]):
        assert other == seen[0], "%s answers differently from %s" % (node.url, nodes[0].url)


def agreed_views(nodes, members):
    """The nodes' cluster views once every one sees `members` and the same owner for every
    partition, and owns exactly the partitions that table gives it; else None."""
    views = [info(n) for n in nodes]
    table = views[0]["owners"]
    if any(v["members"] != members or v["owners"] != table for v in views) or None in table:
        return None
    if any(v["owned_partitions"] != [p for p, o in enumerate(table) if o == v["node"]] for v in views):
        return None
    return views


def wait_agreed(nodes, members, what, timeout=90):
    """wait_until(agreed_views); a timeout names what each node last reported."""
    try:
        return wait_until(lambda: agreed_views(nodes, members), what, timeout=timeout)
    except AssertionError as e:
        now = time.time()
        seen = ["%s: members %s owned %s owners %s leader %s, read %.1f s ago" % (
            v["node"], v["members"], v["owned_partitions"], v["owners"], v["stream_leader"],
            now - (v["refreshed_at"] or 0)) for v in (info(n) for n in nodes)]
        raise AssertionError("%s\n%s" % (e, "\n".join(seen))) from None


class Load:
    """One thread per writer, writer i through nodes[i] with writer id fw<i>, sending batches of
    STEPS steps of its runs with sequences 1, 2, ... until stopped. A batch refused (503) or
    unanswered is resent with the same sequence: at once through the next live node when its own
    is gone, else once the node has reached NATS again since the refusal (its /api/v1/info
    refreshed_at moved past it). Only batches answered 200 count as acknowledged. A later load goes
    on from `first_sequences` (writer i's next batch), so that its batches are new ones."""

    def __init__(self, pb, nodes, first_sequences=None):
        self.pb = pb
        self.nodes = nodes
        self.first = list(first_sequences or [1] * len(WRITERS))
        self.acked = [0] * len(WRITERS)
        self.refused = 0
        self.errors = []
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._writer, args=(i,), daemon=True) for i in range(len(WRITERS))]

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=300)

    def acked_at_least(self, counts):
        return all(a >= c for a, c in zip(self.acked, counts))

    def _writer(self, i):
        at = i % len(self.nodes)
        runs = WRITERS[i]
        sequence = self.first[i]
        try:
            while not self.stop.is_set():
                steps = list(range((sequence - 1) * STEPS, sequence * STEPS))
                req = loss_request(self.pb, PROJECT, "fw%d" % i, sequence, runs, steps)
                while True:
                    node = self.nodes[at]
                    refused_at = time.time()
                    try:
                        r = ingest_pb.post(node, req, timeout=60)
                    except OSError:
                        r = None
                    if r is not None and r.status == 200:
                        break
                    if r is not None and r.status != 503:
                        self.errors.append((i, sequence, node.url, r))
                        return
                    with LOCK:
                        self.refused += 1
                    if not node.alive():
                        at = (at + 1) % len(self.nodes)
                        while not self.nodes[at].alive():
                            at = (at + 1) % len(self.nodes)
                        continue
                    if r is None:
                        continue  # a connection the kill cut: resend at once
                    wait_until(lambda: (info(node)["refreshed_at"] or 0) > refused_at,
                               "%s to reach NATS again" % node.url, timeout=120)
                acknowledge(runs, steps)
                self.acked[i] += 1
                sequence += 1
        except Exception as e:  # reported by the test
            self.errors.append((i, sequence, repr(e)))


# -- the tests --------------------------------------------------------------------------------------

def test_node_killed_under_load_every_acknowledged_point_once(cluster):
    pb = ingest_pb.load()
    nodes = cluster.nodes
    wait_agreed(nodes, ["tw0", "tw1", "tw2"], "the partitions to be spread over three nodes")
    with Load(pb, nodes) as load:
        wait_until(lambda: load.acked_at_least([3] * 3) or load.errors, "every writer to be acknowledged")
        nodes[2].kill9()
        STATE["killed_node"] = 2
        after_node = list(load.acked)
        wait_until(lambda: load.acked_at_least([a + 3 for a in after_node]) or load.errors,
                   "every writer to go on after tw2's death (its writer through another node)", timeout=90)
    assert not load.errors, load.errors
    assert not any(t.is_alive() for t in load.threads)
    STATE["next_sequences"] = [a + 1 for a in load.acked]
    survivors = nodes[:2]
    # The survivors own every partition, each by one of them (tw2's leases expired).
    def every_partition_once():
        owned = [p for n in survivors for p in info(n)["owned_partitions"]]
        return sorted(owned) == list(range(PARTITIONS))
    wait_until(every_partition_once, "the survivors to own every partition, each once", timeout=90)
    check_exactly_once(survivors, EXPECTED)


def test_nats_down_writes_refused_then_back_and_sdk_points_once(cluster, tmp_path):
    assert EXPECTED, "runs after the first test"
    sys.path.insert(0, BUILD_PYTHON)
    try:
        import trainwatch as tw
    except ImportError as e:
        pytest.fail("the Python SDK is not built at %s (%s): build the _trainwatch target" % (BUILD_PYTHON, e))
    pb = ingest_pb.load()
    survivors = cluster.nodes[:2]
    run_id = "sdk-outage"
    run = tw.init(project=PROJECT, id=run_id, server=survivors[0].url, system_metrics=False,
                  flush_timeout_seconds=60, batch_max_delay_seconds=0.02, backoff_max_seconds=0.5,
                  spool_dir=str(tmp_path / "spool"))
    logged = []

    def log_steps(n):
        for _ in range(n):
            step = len(logged)
            run.log({"loss": value(run_id, step)}, step=step)
            logged.append(step)

    log_steps(20)
    assert run.flush(60), run.stats()
    for n in cluster.nats:
        n.kill()
    # The load goes on: writes through both nodes in turn, each refused with 503 and Retry-After,
    # the SDK logging between them, reads answered from the nodes' stores.
    refused = 0
    attempts = 0
    while refused < 4:
        node = survivors[attempts % 2]
        r = ingest_pb.post(node, loss_request(pb, PROJECT, "down-%d" % attempts, 1, ["r-down"], [0, 1, 2]), timeout=120)
        attempts += 1
        assert r.status == 503, r
        assert r.headers.get("Retry-After") == "1", r.headers
        refused += 1
        log_steps(10)
        runs = sorted(EXPECTED)
        assert series_of(node, runs) == {run: sorted(EXPECTED[run].items()) for run in runs}
    stats = wait_until(lambda: (lambda s: s if s["last_error"] and s["points_acked"] < len(logged) else None)(
        run.stats()), "the SDK to be refused and keep its points")
    STATE["sdk_refused_stats"] = dict(stats)

    for n in cluster.nats:
        n.restart()
    # Ingest back within 30 s on every node: a write with a writer id and sequence, resent until
    # acknowledged (a resend of a stored one is a duplicate, stored once).
    for k, node in enumerate(survivors):
        req = loss_request(pb, PROJECT, "back-%d" % k, 1, ["r-back"], [10 * k + s for s in range(STEPS)])
        wait_until(lambda: ingest_pb.post(node, req, timeout=30).status == 200,
                   "%s to take writes again" % node.url, timeout=30)
        acknowledge(["r-back"], [10 * k + s for s in range(STEPS)])
    log_steps(10)
    assert run.flush(60), run.stats()
    run.finish()
    want = [(s, value(run_id, s)) for s in logged]
    for node in survivors:
        wait_until(lambda: len(series_of(node, [run_id]).get(run_id, [])) >= len(want),
                   "%s to hold the SDK's points" % node.url, timeout=90)
        got = series_of(node, [run_id])[run_id]
        assert got == want, (node.url, "the SDK's points, each exactly once")
        assert sorted(exported(node, run_id)) == want, (node.url, "export")
    STATE["sdk_points"] = want
    check_exactly_once(survivors, EXPECTED)


def test_killed_node_restarted_rejoins_owns_its_share_without_loss_or_duplicate(cluster):
    assert STATE.get("killed_node") == 2 and "sdk_points" in STATE, "runs after the first two tests"
    nodes = cluster.nodes
    cluster.start_node(2)
    members = ["tw0", "tw1", "tw2"]
    views = wait_agreed(nodes, members, "tw2 to rejoin and the owners to settle")
    assert views[0]["owners"] == [rendezvous_owner(p, members) for p in range(PARTITIONS)], views[0]["owners"]
    assert views[2]["owned_partitions"], "tw2 owns partitions again: %s" % views[2]
    wait_caught_up(nodes, "tw2 to apply the stream it missed")
    # Its answers: every acknowledged point exactly once, the same as the others'.
    check_exactly_once(nodes, EXPECTED)
    for node in nodes:
        assert series_of(node, ["sdk-outage"])["sdk-outage"] == STATE["sdk_points"], node.url
    # And it takes writes again, read through every node.
    pb = ingest_pb.load()
    r = ingest_pb.post(nodes[2], loss_request(pb, PROJECT, "rejoined", 1, ["r-rejoined"], list(range(STEPS))))
    assert r.status == 200 and not r.json()["duplicate_batch"], r
    acknowledge(["r-rejoined"], list(range(STEPS)))
    check_exactly_once(nodes, EXPECTED)


# Last, so that a failure here leaves the tests above as they are. This scenario found the
# applier's acknowledgement bug (messages delivered to a fetch that had given up were acknowledged
# by the next fetch's AckAll and never applied on that node: StreamReaderOptions::contiguous).
def test_stream_leader_killed_under_load_every_acknowledged_point_once(cluster):
    assert "next_sequences" in STATE, "runs after the first test"
    pb = ingest_pb.load()
    nodes = cluster.nodes
    with Load(pb, nodes, STATE["next_sequences"]) as load:
        wait_until(lambda: load.acked_at_least([3] * 3) or load.errors, "every writer to be acknowledged")
        # The stream's raft leader, as every node reports it.
        leader = wait_until(lambda: (lambda ls: len(ls) == 1 and None not in ls and ls.pop())(
            {info(n)["stream_leader"] for n in nodes}), "the nodes to name one stream leader")
        victim = next(n for n in cluster.nats if n.name == leader)
        victim.kill()
        wait_until(lambda: all(info(n)["stream_leader"] not in (None, leader) for n in nodes),
                   "a new stream leader", timeout=90)
        after_leader = list(load.acked)
        wait_until(lambda: load.acked_at_least([a + 3 for a in after_leader]) or load.errors,
                   "every writer to go on after the stream leader's death", timeout=90)
    assert not load.errors, load.errors
    check_exactly_once(nodes, EXPECTED)
    # The killed server back, with the stream it missed.
    victim.restart()
    wait_caught_up(nodes, "every node to catch up")
