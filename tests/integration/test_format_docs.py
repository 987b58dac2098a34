"""The format documents (docs/format/*.md) against the files the built binary really writes.

For every format whose file a test can produce without C++ help, a real artefact is made (a server on a
temporary data directory, the Python SDK in offline mode, `trainwatch watch`) and read back by the
layout the document states: magic bytes taken from the document itself, record framing, CRC-32C, field
names. wal.md's example bytes are checked in C++ (src/storage/wal/wal_writer_test.cc), and so are
store.md's and chunk.md's examples (src/storage/store_format_test.cc,
src/storage/encoding/chunk_format_test.cc): they describe values inside RocksDB, which these tests
cannot open (no RocksDB reader for Python here); here only the store's presence in the data directory
is checked.
"""
import json
import os
import re
import signal
import struct
import subprocess
import sys
import time

import pytest

from conftest import BIN, REPO, Server, http

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tfevents"))
import tfevents_writer as tw  # noqa: E402

from harness import ingest_pb  # noqa: E402
from harness import wait_until  # noqa: E402

FORMAT_DIR = os.path.join(REPO, "docs", "format")
PYTHON = os.environ.get("TRAINWATCH_PYTHON", "/usr/bin/python3")
BUILD_PYTHON = os.environ.get("TRAINWATCH_PYTHONPATH", os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(BIN))), "python"))
WAIT = 20


def doc(name):
    with open(os.path.join(FORMAT_DIR, name), encoding="utf-8") as f:
        return f.read()


def doc_magic(name):
    """The 8-byte magic a format document states (its first `"XXXXXXXX"  8 bytes of magic` line)."""
    m = re.search(r'"([A-Z0-9]{8})"\s+8 bytes of magic', doc(name))
    assert m, "%s states no 8-byte magic" % name
    return m.group(1).encode()


def wait_for(what, probe, timeout=WAIT):
    return wait_until(probe, what, timeout=timeout)


# --- the data directory after an alert that a down receiver could not take -------------------------------

def healthy(run, steps, t0):
    return [{"project": "p", "run": run, "step": s, "time": t0 + 0.5 * s, "metrics": {"loss": 2.0 / (s + 1)}}
            for s in steps]


@pytest.fixture(scope="module")
def stopped_data_dir(tmp_path_factory, request):
    """A server with a webhook receiver whose port refuses connections: a NaN raises an alert (alerts.log)
    whose delivery waits in the outbox; a silence is added. Returns the data directory (after a clean
    stop), what the API listed before the stop, and the receiver's name."""
    work = tmp_path_factory.mktemp("formats")
    import socket
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    dead_port = probe.getsockname()[1]
    probe.close()  # nothing listens there; a delivery attempt is refused and retried later
    alerting = work / "alerting.yml"
    alerting.write_text("receivers:\n  - name: hook\n    webhook: {url: \"http://127.0.0.1:%d/hook\"}\n"
                        "routes:\n  - {receiver: hook, kinds: [nan]}\n" % dead_port)
    server = Server(work, extra_args=("--alerting", str(alerting)))
    request.module._SHARED_SERVERS = getattr(request.module, "_SHARED_SERVERS", []) + [server]
    server.start()
    try:
        t0 = time.time() - 3600
        server.write_ok(healthy("r1", range(20), t0) + [
            '{"project": "p", "run": "r1", "step": 20, "time": %r, "metrics": {"loss": NaN}}' % (t0 + 10.0)])
        alerts = wait_for("the NaN alert", lambda: server.get_json("/api/v1/alerts", {"run": "r1"})["alerts"])
        r = server.post("/api/v1/silences", json.dumps({"project": "p", "kind": "loss_spike", "run": "x*",
                                                         "duration": "1h", "comment": "format test"}))
        assert r.status in (200, 201), r
        silences = server.get_json("/api/v1/silences")["silences"]
        wait_for("a failed delivery", lambda: server.metric_value("trainwatch_notifications_failed_total") >= 1)
    finally:
        server.stop()
    return {"dir": server.data_dir, "alerts": alerts, "silences": silences}


def crc32c(data):
    return tw.crc32c(data)


def test_readme_indexes_every_format_file():
    readme = doc("README.md")
    files = sorted(f for f in os.listdir(FORMAT_DIR) if f.endswith(".md") and f != "README.md")
    linked = set(re.findall(r"\]\(([a-z_]+\.md)\)", readme))
    assert set(files) <= linked, "docs/format/README.md does not link %s" % sorted(set(files) - linked)
    assert linked <= set(files), "docs/format/README.md links missing files %s" % sorted(linked - set(files))


def test_data_dir_layout_is_the_readmes(stopped_data_dir):
    d = stopped_data_dir["dir"]
    # keys.json appears only once a key was created (docs/security.md).
    assert sorted(os.listdir(d)) == ["LOCK", "alerts", "audit", "notify", "store", "wal"], os.listdir(d)
    lock = open(os.path.join(d, "LOCK")).read()
    assert re.fullmatch(r"\d+\n", lock), repr(lock)  # that server's pid and a newline
    for name in os.listdir(os.path.join(d, "wal")):
        assert re.fullmatch(r"\d{20}\.wal", name), name
    assert os.path.exists(os.path.join(d, "store", "CURRENT"))  # a RocksDB database
    assert os.listdir(os.path.join(d, "alerts")) == ["alerts.log"]
    assert all(n.endswith(".outbox") for n in os.listdir(os.path.join(d, "notify")))
    for name in os.listdir(os.path.join(d, "audit")):
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}\.jsonl", name), name


def test_alerts_log_is_as_alerts_md(stopped_data_dir):
    data = open(os.path.join(stopped_data_dir["dir"], "alerts", "alerts.log"), "rb").read()
    records, at = [], 0
    while at < len(data):
        length, crc = struct.unpack_from("<II", data, at)
        assert length <= 16 << 20
        payload = data[at + 8:at + 8 + length]
        assert len(payload) == length, "a torn record at %d" % at
        assert crc32c(payload) == crc, "CRC-32C (unmasked) of the payload, record at %d" % at
        records.append(json.loads(payload))
        at += 8 + length
    latest = {}
    for r in records:
        assert isinstance(r, dict) and len(r) == 1 and next(iter(r)) in ("alert", "silence"), r
        kind, obj = next(iter(r.items()))
        latest[(kind, obj["id"])] = obj  # the last version of each id wins
    for listed in stopped_data_dir["alerts"]:
        stored = latest[("alert", listed["id"])]
        # Exactly what the API lists, plus `notified`.
        assert set(stored) == set(listed) | {"notified"}, (sorted(stored), sorted(listed))
        assert stored["kind"] == listed["kind"] == "nan" and stored["step"] == listed["step"] == 20, stored
    for listed in stopped_data_dir["silences"]:
        stored = latest[("silence", listed["id"])]
        assert set(stored) == set(listed), (sorted(stored), sorted(listed))


def test_outbox_segment_is_as_outbox_md(stopped_data_dir):
    magic = doc_magic("outbox.md")
    notify = os.path.join(stopped_data_dir["dir"], "notify")
    names = sorted(os.listdir(notify))
    assert len(names) == 1 and re.fullmatch(r"\d{20}\.outbox", names[0]), names  # one active segment
    data = open(os.path.join(notify, names[0]), "rb").read()
    assert data[:8] == magic, data[:8]
    deliveries, acks, at = [], [], 8
    while at < len(data):
        length, crc = struct.unpack_from("<II", data, at)
        assert 1 <= length <= 4 << 20, length
        body = data[at + 8:at + 8 + length]
        assert len(body) == length and crc32c(body) == crc, "record at %d" % at
        rtype, rest = body[0], body[1:]
        if rtype == 0x01:
            rid, enqueued_at, rlen = struct.unpack_from("<QdH", rest)
            receiver = rest[18:18 + rlen].decode()
            deliveries.append((rid, enqueued_at, receiver, json.loads(rest[18 + rlen:])))
        elif rtype == 0x02:
            rid, outcome = struct.unpack("<QB", rest)
            assert outcome in (1, 2)
            acks.append(rid)
        else:
            pytest.fail("record type %#x at %d" % (rtype, at))
        at += 8 + length
    waiting = [d for d in deliveries if d[0] not in acks]
    assert waiting, "the refused delivery is waiting in the outbox"
    rid, enqueued_at, receiver, notification = waiting[0]
    # sleep-ok: seconds since the epoch (not milliseconds) from this test's run; a sanity window, not a duration
    assert receiver == "hook" and abs(enqueued_at - time.time()) < 600, (receiver, enqueued_at)
    alert = stopped_data_dir["alerts"][0]
    # The generic webhook body (docs/notifications.md).
    assert notification["version"] == 1 and str(notification["alert_id"]) == str(alert["id"]), notification
    assert (notification["project"], notification["run"], notification["kind"]) == ("p", "r1", "nan"), notification


# --- the SDK spool ----------------------------------------------------------------------------------------

SPOOL_CHILD = r'''
import trainwatch as tw
run = tw.init(project="fmt", id="spooled", server="http://127.0.0.1:9", system_metrics=False)
for step in range(50):
    run.log({"loss": 1.0 / (step + 1)}, step=step)
run.finish()
'''


def zstd_decompress(frame):
    out = subprocess.run(["zstd", "-d", "-c", "-q"], input=frame, capture_output=True, check=True)
    return out.stdout


def test_spool_segment_is_as_spool_md(tmp_path):
    magic = doc_magic("spool.md")
    pb = ingest_pb.load()
    root = tmp_path / "spool"
    env = dict(os.environ, PYTHONPATH=BUILD_PYTHON, TRAINWATCH_SPOOL_DIR=str(root), TRAINWATCH_MODE="offline")
    env.pop("TRAINWATCH_SERVER", None)
    child = subprocess.run([PYTHON, "-c", SPOOL_CHILD], env=env, capture_output=True, timeout=120)
    assert child.returncode == 0, child.stderr.decode()
    writers = os.listdir(root)
    assert len(writers) == 1 and re.fullmatch(r"[0-9a-f]{32}", writers[0]), writers
    segments = sorted(os.listdir(root / writers[0]))
    assert segments and all(re.fullmatch(r"\d{20}\.seg", s) for s in segments), segments
    total_points, expected_sequence = 0, None
    for name in segments:
        data = (root / writers[0] / name).read_bytes()
        assert data[:8] == magic, data[:8]
        at, first = 8, True
        while at < len(data):
            sequence, points, length, crc = struct.unpack_from("<QIII", data, at)
            payload = data[at + 20:at + 20 + length]
            assert len(payload) == length and crc32c(payload) == crc, "%s: record at %d" % (name, at)
            assert payload[:4] == b"\x28\xb5\x2f\xfd", "a zstd frame"
            fhd = payload[4]
            assert fhd >> 6 or fhd & 0x20, "the frame carries its content size"
            req = pb.WriteRequest.FromString(zstd_decompress(payload))
            assert req.writer_id == writers[0] and req.sequence == sequence, (req.writer_id, req.sequence)
            if first:
                assert int(name[:20]) == sequence, "a segment is named by its first sequence"
                first = False
            if expected_sequence is not None:
                assert sequence == expected_sequence, "consecutive batches"
            expected_sequence = sequence + 1
            total_points += points
            at += 20 + length
    assert total_points >= 50, total_points  # the 50 losses (and the run's clock, heartbeats: no points)


# --- the `trainwatch watch` state file --------------------------------------------------------------------

def keys_of(example):
    """The documented structure: top-level keys, a file's keys, a run's keys."""
    run = next(iter(example["runs"].values()))
    return {"top": set(example), "file": set(example["files"][0]), "run": set(run),
            "tag": set(next(iter(run["tags"].values())))}


def test_watch_state_is_as_watch_state_md(tmp_path, request):
    m = re.search(r"```json\n(.*?)```", doc("watch_state.md"), re.S)
    documented = keys_of(json.loads(m.group(1)))
    server = Server(tmp_path / "server")
    request.module._SHARED_SERVERS = getattr(request.module, "_SHARED_SERVERS", []) + [server]
    server.start()
    logdir = tmp_path / "logs"
    os.makedirs(logdir / "exp1")
    w = tw.EventFileWriter(str(logdir / "exp1" / "events.out.tfevents.1767225600.host.1.0"))
    for step in range(10):
        meta = tw.plugin_metadata("scalars") if step == 0 else None
        w.add_event(tw.event(1767225600.0 + step, step, summary_values=[tw.value("loss", metadata=meta,
                                                                              simple_value=1.0 / (step + 1))]))
    size = w.offset()
    w.f.close()
    state = tmp_path / "state" / "watch.json"
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), TRAINWATCH_SPOOL_DIR=str(tmp_path / "spool"))
    env.pop("TRAINWATCH_API_KEY", None)
    log = open(tmp_path / "watch.log", "wb")
    proc = subprocess.Popen([BIN, "watch", str(logdir), "--project", "fmt", "--server", server.url,
                             "--state", str(state), "--interval", "100ms"], stdout=log, stderr=log, env=env)
    try:
        def saved():
            try:
                s = json.loads(state.read_text())
            except (OSError, ValueError):
                return None
            return s if s.get("files") and s["files"][0]["offset"] == size else None
        wait_for("the state file to reach the end of the event file", saved)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        log.close()
        server.stop()
    real = json.loads(state.read_text())
    assert real["version"] == 1 and real["logdir"] == str(logdir) and real["project"] == "fmt", real
    assert keys_of(real) == documented, (keys_of(real), documented)
    f = real["files"][0]
    assert f["path"] == "exp1/events.out.tfevents.1767225600.host.1.0" and f["run"] == "exp1", f
    st = os.stat(logdir / "exp1" / "events.out.tfevents.1767225600.host.1.0")
    assert (f["dev"], f["ino"]) == (st.st_dev, st.st_ino), f
    head = open(logdir / "exp1" / "events.out.tfevents.1767225600.host.1.0", "rb").read(f["head_len"])
    assert f["head_len"] <= 64 and f["head_crc"] == tw.crc32c(head), f
    run = real["runs"]["exp1"]
    assert run["tags"]["loss"] == {"plugin": "scalars", "data_class": 0} and run["steps"]["loss"] == 9, run
