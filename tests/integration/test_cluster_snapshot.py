"""Bounded rebuild in cluster mode (issue 15, docs/cluster.md): store snapshots kept in the
cluster. Three Debian `nats-server` (JetStream R3) and three trainwatch nodes on 127.0.0.1.

- Points are written through every node; a snapshot is taken through one node's admin route
  (POST /api/v1/cluster/snapshot); more points are written; the ingest stream's messages up to the
  snapshot's covered sequence are purged (what --cluster-stream-max-age does to old ones). A
  fourth node started on an empty data directory installs the snapshot and applies only the tail:
  it answers every acknowledged point exactly once, in the series and the export, as the others
  do, and its log says which snapshot it installed and how many tail messages it applied.
- With no snapshot in the cluster and a stream that no longer starts at 1, a node on an empty data
  directory refuses to start, saying why.
- The holder of partition 0 publishes one on --cluster-snapshot-interval once it applied more than
  the newest covers, and the older one's pieces are purged from TW_SNAPSHOTS.

Waits are on conditions (harness.wait_until) and the processes' own answers, never on time.
"""
import contextlib
import os
import re
import signal

import pytest

from conftest import BIN
from harness import ingest_pb, wait_until
from harness.nats_cluster import (TrainwatchCluster, jetstream_request, loss_request, loss_value as value,
                                  nats_available, purge_stream_below, stream_state)
from harness.server import Server

PARTITIONS = 8
PROJECT = "snap"
STREAM = "TRAINWATCH_INGEST"
WRITERS = [["s%d-%d" % (w, k) for k in range(3)] for w in range(3)]  # 9 runs over the partitions
pytestmark = pytest.mark.skipif(not nats_available(),
                                reason="nats-server is missing (scripts/install-deps.sh installs it)")


def info(node):
    return node.get_json("/api/v1/info")["cluster"]


def series_of(node, runs):
    """run -> [(step, value)] read through `node` (raw points)."""
    r = node.get("/api/v1/series", [("project", PROJECT), ("metric", "loss")] + [("run", r) for r in runs])
    if r.status == 404:
        return {}
    assert r.status == 200, r
    return {s["run"]: [(p[0], p[-1]) for p in s["points"]] for s in r.json()["series"]}


def exported(node, run):
    """[(step, loss)] of the run's /api/v1/export lines, in their order."""
    return [(line["step"], line["metrics"]["loss"]) for line in node.export(run, PROJECT)
            if "loss" in line.get("metrics", {})]


def write(pb, nodes, sequences, expected):
    """Each writer sends its batches through its own node; every one must be acknowledged."""
    for i, runs in enumerate(WRITERS):
        for seq in sequences:
            steps = list(range((seq - 1) * 10, seq * 10))
            r = ingest_pb.post(nodes[i % len(nodes)], loss_request(pb, PROJECT, "w%d" % i, seq, runs, steps))
            assert r.status == 200 and not r.json()["duplicate_batch"], r
            for run in runs:
                for s in steps:
                    expected.setdefault(run, {})[s] = value(run, s)


def wait_caught_up(nodes, last):
    wait_until(lambda: all(info(n)["applied_sequence"] >= last for n in nodes),
               "every node to apply the stream up to %d" % last, timeout=90)


def check_exactly_once(nodes, expected):
    """Every node answers with exactly the expected points of every run, each once, in the series
    and in the export, and all answer alike."""
    runs = sorted(expected)
    want = {run: sorted(expected[run].items()) for run in runs}
    seen = []
    for node in nodes:
        wait_until(lambda: (lambda got: len(got) == len(runs) and all(len(got[r]) >= len(want[r]) for r in runs))(
            series_of(node, runs)), "%s to hold every acknowledged point" % node.url, timeout=90)
        series = series_of(node, runs)
        export = {run: exported(node, run) for run in runs}
        for run in runs:
            assert series[run] == want[run], (node.url, run, "series")
            assert sorted(export[run]) == want[run], (node.url, run, "export")
            assert len(export[run]) == len(want[run]), (node.url, run, "a point exported twice")
        listed = sorted(r["id"] for r in node.get_json("/api/v1/runs", {"project": PROJECT, "limit": 1000})["runs"])
        assert listed == runs, node.url
        seen.append((series, export))
    for node, other in zip(nodes[1:], seen[1:]):
        assert other == seen[0], "%s answers differently from %s" % (node.url, nodes[0].url)


def log_line(node, text):
    """The node's log line holding `text` (its first start's log), or None."""
    for line in node.stderr_text(0).splitlines():
        if text in line:
            return line
    return None


def field(line, name):
    m = re.search(r"\b%s=(\S+)" % name, line)
    assert m, (name, line)
    return m.group(1).strip('"')


@contextlib.contextmanager
def written_cluster(tmp_path, pb, batches, expected):
    """A cluster that snapshots only when asked (the test decides which snapshot is the newest),
    with `batches` of every writer written through every node and applied on every node; yields it
    and the stream's last sequence."""
    assert os.access(BIN, os.X_OK), "no trainwatch binary at %s (set TRAINWATCH_BIN)" % BIN
    with TrainwatchCluster(tmp_path, partitions=PARTITIONS, lease="3s",
                           node_args=["--cluster-snapshot-interval", "0"]) as c:
        write(pb, c.nodes, batches, expected)
        last = stream_state(c.nats[0].url, STREAM)["last_seq"]
        wait_caught_up(c.nodes, last)
        yield c, last


def test_a_fresh_node_installs_the_snapshot_and_applies_only_the_tail(tmp_path):
    pb = ingest_pb.load()
    expected = {}
    with written_cluster(tmp_path, pb, range(1, 5), expected) as (c, before):
        nodes = c.nodes

        r = nodes[1].post("/api/v1/cluster/snapshot", "")
        assert r.status == 200, r
        manifest = r.json()
        covered = manifest["covered_sequence"]
        assert covered == before, "the snapshot covers what the node had applied: %s" % manifest
        assert manifest["node"] == "tw1" and manifest["stream"] == STREAM
        assert manifest["files"] and all(len(f["sha256"]) == 64 for f in manifest["files"])
        # An older one cannot replace it (compare-and-set on the covered sequence).
        again = nodes[2].post("/api/v1/cluster/snapshot", "")
        assert again.status == 409, again

        write(pb, nodes, range(5, 8), expected)
        last = stream_state(c.nats[0].url, STREAM)["last_seq"]
        assert last > covered
        # What max_age would do to the oldest messages: the stream now starts after the snapshot.
        assert purge_stream_below(c.nats[0].url, STREAM, covered + 1) == covered
        state = stream_state(c.nats[0].url, STREAM)
        assert state["first_seq"] == covered + 1 and state["last_seq"] == last, state

        c.nodes.append(None)
        fresh = c.start_node(3)
        installed = log_line(fresh, "installed the cluster's store snapshot")
        assert installed, fresh.tail()
        assert field(installed, "snapshot") == manifest["id"]
        assert int(field(installed, "covered_sequence")) == covered
        wait_until(lambda: log_line(fresh, "caught up with the ingest stream"),
                   "the fresh node to catch up", timeout=90)
        tail = log_line(fresh, "caught up with the ingest stream")
        assert int(field(tail, "from_sequence")) == covered + 1, tail
        assert int(field(tail, "messages")) == last - covered, tail
        check_exactly_once(nodes, expected)

        # Writes after it reach the fresh node too.
        write(pb, nodes[:3], range(8, 9), expected)
        check_exactly_once(nodes, expected)

        # Without a snapshot in the cluster, a node on an empty data directory cannot be rebuilt
        # from a stream that lost its start: it refuses to start and says so.
        purged = jetstream_request(c.nats[0].url, "$JS.API.STREAM.PURGE.KV_tw_snapshots")
        assert purged.get("success"), purged
        lone = Server(os.path.join(str(tmp_path), "tw-refused"), extra_args=[
            "--nats", c.nats_urls, "--node-name", "tw-refused", "--partitions", str(PARTITIONS),
            "--cluster-lease", "3s", "--http-threads", "1", "--query-threads", "1"])
        try:
            with pytest.raises(RuntimeError):
                lone.start(timeout=120)
        finally:
            lone.close()
        log = lone.stderr_text()
        assert "no store snapshot" in log and "starts at sequence %d" % (covered + 1) in log, log
        assert not os.path.exists(os.path.join(lone.data_dir, "store", "CURRENT"))


def snapshot_subjects(url):
    """The subjects of TW_SNAPSHOTS that hold pieces, with their message counts."""
    answer = jetstream_request(url, "$JS.API.STREAM.INFO.TW_SNAPSHOTS", {"subjects_filter": "tw.snapshot.>"})
    assert "error" not in answer, answer
    return answer["state"].get("subjects") or {}


def test_the_partition_0_owner_snapshots_on_its_interval_and_older_pieces_go(tmp_path):
    assert os.access(BIN, os.X_OK), "no trainwatch binary at %s (set TRAINWATCH_BIN)" % BIN
    pb = ingest_pb.load()
    expected = {}
    with TrainwatchCluster(tmp_path, nodes=1, partitions=PARTITIONS, lease="3s",
                           node_args=["--cluster-snapshot-interval", "1s"]) as c:
        node = c.nodes[0]  # alone: it owns partition 0
        published = lambda: node.metric_value("trainwatch_cluster_snapshots_published_total")
        write(pb, [node], range(1, 3), expected)
        first = stream_state(c.nats[0].url, STREAM)["last_seq"]
        wait_until(lambda: published() >= 1, "a snapshot on the interval", timeout=90)
        write(pb, [node], range(3, 5), expected)
        last = stream_state(c.nats[0].url, STREAM)["last_seq"]
        assert last > first
        # Once it covers the new messages, the older snapshot's pieces are gone: one subject left.
        wait_until(lambda: any("covered_sequence=%d" % last in line for line in node.stderr_text(0).splitlines()
                               if "published a store snapshot" in line), "a snapshot covering %d" % last, timeout=90)
        wait_until(lambda: len(snapshot_subjects(c.nats[0].url)) == 1, "the older snapshot's pieces purged", timeout=90)
        (subject,) = snapshot_subjects(c.nats[0].url)
        assert subject.startswith("tw.snapshot.tw0-%d-" % last), subject
        # The interval passes again and more was applied: another one.
        count = published()
        write(pb, [node], range(5, 6), expected)
        wait_until(lambda: published() > count, "a snapshot of the new write", timeout=90)


def test_a_running_node_the_stream_left_behind_says_so_in_healthz(tmp_path):
    # A node stopped (SIGSTOP) while the stream drops what it has not applied (what max age does to
    # a node far behind) serves a store with a hole: /healthz says so until it is rebuilt.
    pb = ingest_pb.load()
    expected = {}
    with written_cluster(tmp_path, pb, range(1, 3), expected) as (c, applied):
        nodes = c.nodes
        behind = nodes[2]
        os.kill(behind.proc.pid, signal.SIGSTOP)
        try:
            write(pb, nodes[:2], range(3, 6), expected)
            last = stream_state(c.nats[0].url, STREAM)["last_seq"]
            assert purge_stream_below(c.nats[0].url, STREAM, last) == last - 1
        finally:
            os.kill(behind.proc.pid, signal.SIGCONT)
        wait_until(lambda: behind.get("/healthz").status == 503, "the node left behind to say so")
        reason = behind.get("/healthz").json()["reason"]
        missed = re.match(r"cluster: Unavailable: this node's store misses ingest-stream messages (\d+) to (\d+), "
                          r"removed \(max age\) before it applied them; restart it on an empty data directory", reason)
        assert missed, reason
        # From the first message it had not applied when it stopped (the stream may have taken one
        # more after `applied` was read) to the last one purged.
        assert applied < int(missed.group(1)) <= int(missed.group(2)) == last - 1, (reason, applied, last)
        assert all(n.get("/healthz").status == 200 for n in nodes[:2])
