"""Alerts across a cluster's failover (issue 15, docs/cluster.md "Alerts across nodes"), with real
processes on 127.0.0.1: three Debian `nats-server` nodes, three `trainwatch serve --nats` nodes
sharing one alerting file, and one real webhook receiver (receivers.py).

Every node detects every run; only the owner of a run's partition notifies, and a node that takes a
partition over tells the receivers what the cluster's notified record (the JetStream bucket
`tw_notified`) says nobody told them:

- A NaN written to a run whose owner is killed right after: exactly one firing notification for it
  reaches the receiver, sent after the take-over, with an idempotency key that is the incident's on
  every node.
- A NaN its owner notified before being killed: after the take-over nothing is sent again, and the
  resolution is sent once, by the new owner.
- A run whose writer stops sending heartbeats is declared crashed once, by its owner alone, and
  every node shows it crashed.
- Silences and acknowledgements made through one node hold on every node (the JetStream bucket
  `tw_alert_ops`): a silence made on one node mutes a run another node owns, an acknowledgement
  made on one node shows on every node, and a silence expired through a third node ends everywhere.

Waits are on conditions (harness.wait_until, the receiver's requests, /metrics), never on time.
"""
import json
import os
import re

import pytest

from conftest import BIN
from harness import ingest_pb, wait_until
from harness.nats_cluster import TrainwatchCluster, nats_available
from receivers import HttpReceiver

PARTITIONS = 8
NAMES = ["tw0", "tw1", "tw2"]  # the fixture's node names
PROJECT = "ca"
T0 = 1767225600.0
pytestmark = pytest.mark.skipif(not nats_available(),
                                reason="nats-server is missing (scripts/install-deps.sh installs it)")


def partition_of(project, run, partitions=PARTITIONS):
    """src/cluster/partition.cc: FNV-1a 64 of `project \\x1f run`, mod the partition count."""
    h = 14695981039346656037
    for byte in project.encode() + b"\x1f" + run.encode():
        h = ((h ^ byte) * 1099511628211) % (1 << 64)
    return h % partitions


def weight(member, p):
    """src/cluster/membership.cc: the rendezvous weight of `member` for partition p."""
    mask = (1 << 64) - 1
    h = 14695981039346656037
    for byte in member.encode():
        h = ((h ^ byte) * 1099511628211) & mask
    h = ((h ^ p) + 0x9e3779b97f4a7c15) & mask
    h = ((h ^ (h >> 30)) * 0xbf58476d1ce4e5b9) & mask
    h = ((h ^ (h >> 27)) * 0x94d049bb133111eb) & mask
    return h ^ (h >> 31)


def preferred_owner(p, members):
    """PreferredOwner: the member of highest weight (the smaller name on a tie)."""
    return min(members, key=lambda m: (-weight(m, p), m))


def settled(nodes, names):
    """Whether nodes (named `names`) hold exactly their rendezvous share of the partitions."""
    return all(owned_partitions(n) == {p for p in range(PARTITIONS) if preferred_owner(p, names) == name}
               for n, name in zip(nodes, names))


def owned_partitions(node):
    """The partitions `node` holds now, from its own log lines ("partition gained"/"lost")."""
    held = set()
    for m in re.finditer(r'msg="partition (gained|lost)" partition=(\d+)', node.stderr_text()):
        (held.add if m.group(1) == "gained" else held.discard)(int(m.group(2)))
    return held


def metric(node, name):
    return node.metric_value(name)


@pytest.fixture
def hook():
    r = HttpReceiver("webhook").start()
    yield r
    print("--- receiver\n%s" % r.log())
    r.close()


@pytest.fixture
def cluster(tmp_path, hook):
    assert os.access(BIN, os.X_OK), "no trainwatch binary at %s (set TRAINWATCH_BIN)" % BIN
    alerting = tmp_path / "alerting.yml"
    alerting.write_text("receivers:\n"
                        "  - name: hook\n"
                        "    webhook: {url: \"%s/hook\"}\n"
                        "routes:\n"
                        "  - {receiver: hook}\n" % hook.url)
    with TrainwatchCluster(tmp_path / "cluster", partitions=PARTITIONS, lease="3s",
                           node_args=["--alerting", str(alerting)]) as c:
        nodes = c.nodes
        wait_until(lambda: settled(nodes, NAMES), "the partitions to settle on their rendezvous owners")
        yield c
        for i, n in enumerate(nodes):
            print("--- tw%d\n%s" % (i, n.tail(60)))


def run_owned_by(name, prefix):
    """A run name whose partition node `name` owns once the partitions settled."""
    return next(r for r in ("%s-%d" % (prefix, i) for i in range(1000))
                if preferred_owner(partition_of(PROJECT, r), NAMES) == name)


def records(run, steps, nan_at=None):
    """NDJSON lines of `run`: a steady loss at `steps`, NaN at step `nan_at`."""
    out = []
    for s in steps:
        loss = "NaN" if s == nan_at else "%.3f" % (1.0 + 0.01 * (s % 3))
        out.append('{"project": %s, "run": %s, "step": %d, "time": %r, "metrics": {"loss": %s}}'
                   % (json.dumps(PROJECT), json.dumps(run), s, T0 + s, loss))
    return out


def is_nan(r, run, status="firing"):
    """Whether request `r` is the webhook's notification of `status` of run's nan alert."""
    if r.path != "/hook":
        return False
    body = r.json()
    return body["run"] == run and body["kind"] == "nan" and body["status"] == status


def nan_bodies(hook, run, status="firing"):
    return [r for r in hook.received("/hook") if is_nan(r, run, status)]


def nan_alert(node, run):
    """The nan alert of `run` as `node` lists it (None while it has none)."""
    listed = node.get_json("/api/v1/alerts", {"project": PROJECT, "run": run, "kind": "nan"})["alerts"]
    return listed[0] if listed else None


def take_over(survivors):
    """Waits until the two survivors (tw0, tw1) hold every partition (tw2's leases expired)."""
    wait_until(lambda: settled(survivors, NAMES[:2]), "the survivors to own every partition", timeout=90)


def outboxes_idle(nodes):
    return all(metric(n, "trainwatch_notifications_queued") == 0 for n in nodes)


def test_a_nan_whose_owner_is_killed_right_after_is_notified_exactly_once(cluster, hook):
    nodes = cluster.nodes
    victim, survivors = nodes[2], nodes[:2]
    run = run_owned_by("tw2", "killed")
    nodes[0].write_ok(records(run, range(0, 30)))
    # The NaN goes in through another node, and its owner dies before it can have told anyone.
    nodes[0].write_ok(records(run, [30], nan_at=30))
    victim.kill9()

    take_over(survivors)
    # Both survivors applied and detected it: the same incident on both, whatever their alert ids.
    alerts = [wait_until(lambda n=n: nan_alert(n, run), "the nan alert on %s" % n.url) for n in survivors]
    assert alerts[0]["incident_id"] == alerts[1]["incident_id"], alerts
    assert alerts[0]["first_step"] == 30, alerts[0]
    key = alerts[0]["incident_id"] + "-firing"

    req = hook.wait_for(lambda r: is_nan(r, run), timeout=60, what="the firing notification of %s" % run)
    body = req.json()
    assert body["status"] == "firing" and body["kind"] == "nan" and body["step"] == 30, body
    assert body["idempotency_key"] == key, body
    assert req.headers.get("idempotency-key") == key, req.headers
    # The new owner recorded that it told receivers; nothing else is waiting to be sent anywhere.
    owner = survivors[NAMES.index(preferred_owner(partition_of(PROJECT, run), NAMES[:2]))]
    wait_until(lambda: nan_alert(owner, run)["notified"] == "firing", "the new owner to record it notified")
    wait_until(lambda: metric(owner, "trainwatch_cluster_notified_marked_total") >= 1,
               "the delivery to be recorded in the cluster's notified bucket")
    wait_until(lambda: outboxes_idle(survivors), "the survivors' outboxes to be idle")
    assert len(nan_bodies(hook, run)) == 1, hook.log()
    # Which way it went: sent on take-over (the usual case: the victim died before detecting it),
    # or found in the record (it had delivered it in the moment before its death).
    print("take-over: notified %d, found delivered %d" % tuple(
        sum(metric(n, "trainwatch_alerts_takeover_%s_total" % k) for n in survivors) for k in ("notified", "known")))


def test_an_incident_notified_before_its_owner_dies_is_not_notified_again(cluster, hook):
    nodes = cluster.nodes
    victim, survivors = nodes[2], nodes[:2]
    run = run_owned_by("tw2", "told")
    nodes[0].write_ok(records(run, range(0, 30)))
    nodes[0].write_ok(records(run, [30], nan_at=30))
    req = hook.wait_for(lambda r: is_nan(r, run), timeout=60,
                        what="the owner's firing notification of %s" % run)
    key = req.json()["idempotency_key"]
    wait_until(lambda: metric(victim, "trainwatch_cluster_notified_marked_total") >= 1,
               "the owner to record its delivery in the cluster's notified bucket")
    # The others detected the same incident but stayed quiet: they do not own the run.
    for n in survivors:
        alert = wait_until(lambda n=n: nan_alert(n, run), "the nan alert on %s" % n.url)
        assert alert["status"] == "firing" and alert["notified"] == "", alert
        assert alert["incident_id"] + "-firing" == key, (alert, key)
    victim.kill9()

    take_over(survivors)
    known = lambda: sum(metric(n, "trainwatch_alerts_takeover_known_total") for n in survivors)
    wait_until(lambda: known() >= 1, "the new owner to find the incident in the notified record")
    assert known() == 1
    assert sum(metric(n, "trainwatch_alerts_takeover_notified_total") for n in survivors) == 0
    wait_until(lambda: outboxes_idle(survivors), "the survivors' outboxes to be idle")
    assert len(nan_bodies(hook, run)) == 1, hook.log()

    # The incident ends: the new owner, which knows the receivers were told it fired, resolves it once.
    survivors[0].write_ok(records(run, range(31, 60)))
    resolved = hook.wait_for(lambda r: is_nan(r, run, "resolved"), timeout=60,
                             what="the resolution of %s" % run)
    assert resolved.json()["idempotency_key"] == key[:-len("firing")] + "resolved", resolved.json()
    wait_until(lambda: outboxes_idle(survivors), "the survivors' outboxes to be idle")
    assert len(nan_bodies(hook, run, "resolved")) == 1, hook.log()
    assert len(nan_bodies(hook, run)) == 1, hook.log()


def silence_uids(node, include_expired=False):
    params = {"all": "1"} if include_expired else None
    return {s["uid"]: s for s in node.get_json("/api/v1/silences", params)["silences"]}


def test_silences_and_acknowledgements_made_on_one_node_hold_on_every_node(cluster, hook):
    nodes = cluster.nodes
    made = nodes[0].post("/api/v1/silences", json.dumps({
        "project": PROJECT, "run": "muted-*", "duration": "1h", "comment": "maintenance", "created_by": "ana"}))
    assert made.status == 200, made
    uid = made.json()["silence"]["uid"]
    assert len(uid) == 32, made.json()
    for n in nodes:
        silence = wait_until(lambda n=n: silence_uids(n).get(uid), "the silence on %s" % n.url)
        assert silence["comment"] == "maintenance" and silence["run"] == "muted-*", silence

    # A muted run that tw1 owns, written through tw2: detected everywhere, silenced, sent by nobody.
    muted = run_owned_by("tw1", "muted")
    nodes[2].write_ok(records(muted, range(0, 30)) + records(muted, [30], nan_at=30))
    for n in nodes:
        alert = wait_until(lambda n=n: nan_alert(n, muted), "the nan alert of %s on %s" % (muted, n.url))
        assert alert["status"] == "firing" and alert["silenced_by"] != 0, alert
        assert alert["notified"] == "", alert

    # An acknowledgement through tw2 of an alert tw0 owns (tw2's own alert id): shown on every node.
    acked = run_owned_by("tw0", "acked")
    nodes[0].write_ok(records(acked, range(0, 30)) + records(acked, [30], nan_at=30))
    hook.wait_for(lambda r: is_nan(r, acked), timeout=60, what="the firing notification of %s" % acked)
    local = wait_until(lambda: nan_alert(nodes[2], acked), "the nan alert of %s on tw2" % acked)
    r = nodes[2].post("/api/v1/alerts/ack", json.dumps({"id": local["id"], "by": "bo"}))
    assert r.status == 200 and r.json()["alert"]["acknowledged"], r
    for n in nodes:
        wait_until(lambda n=n: nan_alert(n, acked)["acknowledged_by"] == "bo",
                   "the acknowledgement on %s" % n.url)

    # Expired through tw1, by tw1's own id of it: ended on every node, kept in the full listing.
    own_id = silence_uids(nodes[1])[uid]["id"]
    r = nodes[1].post("/api/v1/silences/expire", json.dumps({"id": own_id}))
    assert r.status == 200, r
    for n in nodes:
        wait_until(lambda n=n: uid not in silence_uids(n), "the silence to end on %s" % n.url)
        assert uid in silence_uids(n, include_expired=True)
    assert nan_bodies(hook, muted) == [], hook.log()
    assert sum(metric(n, "trainwatch_cluster_shared_records_written_total") for n in nodes) == 3


def test_a_silent_run_is_declared_crashed_once_by_its_owner(cluster):
    nodes = cluster.nodes
    pb = ingest_pb.load()
    run = run_owned_by("tw1", "silent")
    req = pb.WriteRequest()
    batch = req.runs.add(project=PROJECT, run=run)
    batch.heartbeat.interval_seconds = 0.5
    r = ingest_pb.post(nodes[2], req)  # through a node that does not own it
    assert r.status == 200 and r.json()["errors"] == [], r
    for n in nodes:
        wait_until(lambda n=n: n.get_json("/api/v1/run", {"project": PROJECT, "run": run})["status"] == "crashed",
                   "%s to be crashed on %s" % (run, n.url))
    declared = [n.stderr_text().count("marked crashed") for n in nodes]
    assert declared == [0, 1, 0], declared
