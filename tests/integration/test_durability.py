"""Acknowledged writes survive kill -9; retries never duplicate; a torn log tail is repaired."""
import json
import os
import random
import re
import struct
import threading
import time

from conftest import SeriesModel, bits, http
from harness import wait_until

N_WRITERS = 4
REWINDING = {2, 3}  # these writers also restart from older steps now and then, with new values
STEPS_PER_BATCH = 20
METRICS = ["loss", "acc", "lr", "grad_norm", "tokens"]
T0 = 1767225600.0
CYCLES = ["kill9", "kill9", "sigterm", "kill9", "kill9", "kill9", "sigterm", "kill9"]


def value_of(writer, step, metric_index, gen=0):
    """Deterministic and distinct per (writer, step, metric, timeline), with non-trivial low bits."""
    return (writer * 1_000_003 + step * 101 + metric_index) / 7.0 - 12345.678 + gen * 0.5


def time_of(writer, step, gen=0):
    return T0 + step * 0.5 + writer * 0.001 + gen * 10_000


def make_batch(writer, first_step, gen=0):
    """[(step, time, {metric: value})] for STEPS_PER_BATCH steps from first_step."""
    return [(step, time_of(writer, step, gen), {m: value_of(writer, step, i, gen) for i, m in enumerate(METRICS)})
            for step in range(first_step, first_step + STEPS_PER_BATCH)]


def batch_body(writer, batch):
    return "".join(json.dumps({"project": "dur", "run": "writer%d" % writer, "step": step, "time": t,
                               "metrics": metrics}) + "\n" for step, t, metrics in batch)


def batch_lines(writer, first_step):
    return batch_body(writer, make_batch(writer, first_step))


class Writer(threading.Thread):
    """Writes batches of increasing steps (and, when rewinding, sometimes jumps back to an older step with
    new values); retries a batch until it gets a 200 — a failed try waits for `up`, which the test sets
    once the server is back. `acked` lists acknowledged batches in order."""

    def __init__(self, server, index, stop, up):
        super().__init__(daemon=True)
        self.server, self.index, self.stop, self.up = server, index, stop, up
        self.rng = random.Random(index)
        self.acked = []
        self.acked_steps = 0  # steps [0, acked_steps) acknowledged (append-only writers)
        self.retries = 0
        self.retries_found_applied = 0
        self.failure = None

    def run(self):
        try:
            next_step, gen = 0, 0
            while not self.stop.is_set():
                if self.index in REWINDING and self.acked and self.rng.random() < 0.08:
                    gen += 1
                    next_step = max(0, next_step - self.rng.choice([7, 45, 1500]))
                batch = make_batch(self.index, next_step, gen)
                self.write_until_acked(batch)
                self.acked.append(batch)
                next_step += STEPS_PER_BATCH
                self.acked_steps = next_step
        except Exception as e:  # reported by the test
            self.failure = e

    def write_until_acked(self, batch):
        body = batch_body(self.index, batch)
        n = STEPS_PER_BATCH * len(METRICS)
        attempt = 0
        deadline = time.monotonic() + 120
        while True:
            attempt += 1
            assert time.monotonic() < deadline, "writer %d: batch at %d never acknowledged" % (self.index, batch[0][0])
            try:
                r = http("POST", self.server.url + "/api/v1/write", body=body, timeout=15,
                         headers={"Content-Type": "application/x-ndjson"})
            except OSError:  # refused, reset, timed out: not acknowledged
                self.retries += 1
                self.up.wait(timeout=120)
                continue
            if r.status >= 500:  # shutting down
                self.retries += 1
                self.up.wait(timeout=120)
                continue
            assert r.status == 200, "writer %d batch at %d: %r" % (self.index, batch[0][0], r)
            result = r.json()
            assert result["points_accepted"] == n, result
            if attempt == 1:
                assert result["points_unchanged"] == 0, result
            elif result["points_unchanged"] > 0:
                assert result["points_unchanged"] == n, result  # a log record is applied whole or not at all
                self.retries_found_applied += 1
            return

    def models(self):
        """{metric: SeriesModel} after applying the acknowledged batches in order."""
        models = {m: SeriesModel() for m in METRICS}
        for batch in self.acked:
            for step, t, metrics in batch:
                for m, v in metrics.items():
                    models[m].write(step, t, v)
        return models


class Reader(threading.Thread):
    """Reads writer 0's series while everything goes on: every read must hold every step acknowledged
    before it began (a read never goes back in time), and a bucketed read must count the same points."""

    def __init__(self, server, writer, stop, up):
        super().__init__(daemon=True)
        self.server, self.writer, self.stop, self.up = server, writer, stop, up
        self.reads = 0
        self.problems = []

    def run(self):
        while not self.stop.is_set():
            acked = self.writer.acked_steps
            try:
                r = self.server.get("/api/v1/series", {"project": "dur", "run": "writer0", "metric": "loss"}, timeout=10)
                b = self.server.get("/api/v1/series", {"project": "dur", "run": "writer0", "metric": "loss",
                                                       "buckets": "37", "from": "0", "to": str(acked)}, timeout=10)
            except OSError:
                self.up.wait(timeout=120)  # the server is down: read again once it is back
                continue
            if acked == 0:
                continue  # the run may not exist yet
            if r.status != 200 or b.status != 200:
                if r.status != 503 and b.status != 503:  # 503: shutting down
                    self.problems.append((r, b))
                continue
            self.reads += 1
            steps = [p[0] for p in r.json()["series"][0]["points"]]
            if steps[:acked] != list(range(acked)):
                self.problems.append("read after %d acknowledged steps saw %d steps, first gap near %r" % (
                    acked, len(steps), next((i for i, s in enumerate(steps) if s != i), None)))
            counted = sum(bucket["count"] for bucket in b.json()["series"][0]["buckets"])
            if counted < acked:
                self.problems.append("buckets over [0, %d] counted %d points" % (acked, counted))


def check_export(server, writer_models):
    """writer_models: run -> {metric: SeriesModel}; the export must hold exactly the visible points."""
    for run, models in writer_models.items():
        got = {}
        for row in server.export(run, project="dur"):
            for metric, value in row["metrics"].items():
                key = (row["step"], metric)
                assert key not in got, "%s: step %d of %s appears twice in the export" % (run, key[0], metric)
                got[key] = (row["time"], value)
        want = {(s, m): tv for m, model in models.items() for s, tv in model.visible.items()}
        missing = sorted(want.keys() - got.keys())
        extra = sorted(got.keys() - want.keys())
        assert not missing, "%s: %d acknowledged points lost, e.g. %r" % (run, len(missing), missing[:5])
        assert not extra, "%s: %d points that should not be visible, e.g. %r" % (run, len(extra), extra[:5])
        wrong = [(k, want[k], got[k]) for k in want
                 if struct.pack("<dd", *want[k]) != struct.pack("<dd", *got[k])]
        assert not wrong, "%s: %d points changed (key, want, got), e.g. %r" % (run, len(wrong), wrong[:5])


def check_superseded(server, run, models):
    for metric, model in models.items():
        body = server.get_json("/api/v1/series/superseded", {"project": "dur", "run": run, "metric": metric})
        got = sorted((p["point"][0], bits(p["point"][1]), bits(p["point"][2])) for p in body["points"])
        want = sorted((s, bits(t), bits(v)) for s, t, v in model.superseded)
        assert got == want, "%s/%s: %d superseded points listed, %d expected" % (run, metric, len(got), len(want))


def expected_points(writer, first_steps):
    """{metric: SeriesModel} for an append-only writer whose batches start at first_steps."""
    models = {m: SeriesModel() for m in METRICS}
    for first in first_steps:
        for step, t, metrics in make_batch(writer, first):
            for m, v in metrics.items():
                models[m].write(step, t, v)
    return models


def test_acknowledged_writes_survive_kill9(server):
    rng = random.Random(1234)
    stop = threading.Event()
    up = threading.Event()  # set while the server runs: failed requests wait for it
    up.set()
    writers = [Writer(server, i, stop, up) for i in range(N_WRITERS)]
    reader = Reader(server, writers[0], stop, up)
    for w in writers + [reader]:
        w.start()
    start_logs = []
    try:
        def acked():
            return sum(len(w.acked) for w in writers)

        def retries():
            return sum(w.retries for w in writers)
        for how in CYCLES:
            # A random amount of traffic on this lifetime, then the crash lands mid-write.
            target = acked() + rng.randint(2, 40)
            wait_until(lambda: acked() >= target, "the writers to make progress")
            # Each writer meets the stopped server once, then waits for it to be back: some of them
            # must have met it before the next start.
            target = retries() + rng.randint(1, N_WRITERS)
            up.clear()
            if how == "kill9":
                server.kill9()
            else:
                assert server.terminate() == 0, "SIGTERM under load did not exit cleanly:\n" + server.tail()
            wait_until(lambda: retries() >= target, "the writers to meet the stopped server")
            server.start()
            up.set()
            start_logs.append(server.stderr_text())
        # Every writer gets a batch through the last lifetime.
        after = [len(w.acked) for w in writers]
        wait_until(lambda: all(len(w.acked) > n for w, n in zip(writers, after)), "a batch from every writer")
    finally:
        stop.set()
        up.set()
        for w in writers + [reader]:
            w.join(timeout=150)
    for w in writers:
        assert not w.is_alive(), "writer %d hung" % w.index
        assert w.failure is None, "writer %d: %r" % (w.index, w.failure)
        assert len(w.acked) >= 5, "writer %d got only %d batches acknowledged" % (w.index, len(w.acked))
    assert sum(w.retries for w in writers) > 0, "no kill hit a writer; the test proved nothing"
    assert not reader.is_alive()
    assert not reader.problems, "%d bad reads, e.g. %r" % (len(reader.problems), reader.problems[:3])
    assert reader.reads > 10

    models = {"writer%d" % w.index: w.models() for w in writers}
    for i in REWINDING:
        assert models["writer%d" % i]["loss"].rewinds > 0, "writer %d never rewound" % i
    check_export(server, models)
    for i in REWINDING:
        check_superseded(server, "writer%d" % i, models["writer%d" % i])

    # Every start replayed the log it found, and said so.
    for log in start_logs:
        assert re.search(r'msg="write-ahead log replayed".*\brecords=(\d+)', log), "no replay logged:\n" + log[-2000:]
    assert any(int(re.search(r'msg="write-ahead log replayed".*\brecords=(\d+)', log).group(1)) > 0
               for log in start_logs)

    # And once more after a clean shutdown: still exactly the same.
    server.restart()
    check_export(server, models)
    print("acked batches per writer: %s; retries: %d, of which found already applied: %d; reads: %d" % (
        [len(w.acked) for w in writers], sum(w.retries for w in writers),
        sum(w.retries_found_applied for w in writers), reader.reads))


def test_run_metadata_survives_kill9(server):
    r = server.post("/api/v1/runs/update", json.dumps({"name": "meta", "tags": ["x", "y"], "status": "finished",
                                                       "config": {"a": {"b": 1}}}),
                    params={"project": "dur", "run": "meta"})
    assert r.status == 200, r
    before = server.get_json("/api/v1/run", {"project": "dur", "run": "meta"})
    server.kill9()
    server.start()
    after = server.get_json("/api/v1/run", {"project": "dur", "run": "meta"})
    assert after == before


def newest_wal_file(data_dir):
    wal = os.path.join(data_dir, "wal")
    names = sorted(n for n in os.listdir(wal) if n.endswith(".wal"))
    assert names, "no WAL segments in %s" % wal
    return os.path.join(wal, names[-1])


def torn_tails():
    rng = random.Random(99)
    garbage = bytes(rng.randrange(256) for _ in range(333))
    # A record header promising 4000 payload bytes, then only part of them (a write cut short).
    partial_record = struct.pack("<IIQ", 4000, 0x12345678, 10**6) + bytes(rng.randrange(256) for _ in range(700))
    zeros = b"\0" * 4096  # a preallocated, never written tail
    return [("garbage", garbage), ("partial record", partial_record), ("zeros", zeros)]


def test_torn_wal_tail_is_repaired(server):
    first_steps = []
    for k, (label, tail) in enumerate(torn_tails()):
        first = k * STEPS_PER_BATCH
        r = server.write(batch_lines(0, first))
        assert r.status == 200, r
        first_steps.append(first)
        server.kill9()
        path = newest_wal_file(server.data_dir)
        size = os.path.getsize(path)
        with open(path, "ab") as f:
            f.write(tail)
        server.start()
        log = server.stderr_text()
        assert "write-ahead log replayed" in log, log
        assert re.search(r"damage repaired.*torn_tail_bytes=%d\b" % len(tail), log), (
            "%s tail of %d bytes after offset %d in %s went unreported:\n%s" % (label, len(tail), size, path, log))
        check_export(server, {"writer0": expected_points(0, first_steps)})
        # The log still takes writes after the repair, and they survive another crash.
        extra = 1000 + first
        assert server.write(batch_lines(0, extra)).status == 200
        first_steps.append(extra)
        server.kill9()
        server.start()
        check_export(server, {"writer0": expected_points(0, first_steps)})


def test_sequenced_batches_in_the_unsealed_head_survive_kill9(server):
    """Batches with a writer id and sequence (the SDK's) whose points are still in memory heads
    when the server dies: replay must apply them, not take them for already-applied duplicates."""
    from harness import ingest_pb
    pb = ingest_pb.load()

    def request(seq):
        req = pb.WriteRequest(writer_id="w-kill9", sequence=seq)
        batch = req.runs.add(project="dur", run="seq")
        steps = range((seq - 1) * 10, seq * 10)
        batch.steps.extend(steps)
        batch.times.extend(T0 + s for s in steps)
        batch.metrics.add(name="loss", values=[s / 3.0 for s in steps])
        return req

    for seq in range(1, 31):  # 300 points: fewer than a chunk, so all in the head
        r = ingest_pb.post(server, request(seq))
        assert r.status == 200, r
    server.restart(kill=True)
    series = server.get_json("/api/v1/series", {"project": "dur", "run": "seq", "metric": "loss"})
    assert [p[0] for p in series["series"][0]["points"]] == list(range(300))
    again = ingest_pb.post(server, request(30)).json()
    assert again["duplicate_batch"] is True
    assert ingest_pb.post(server, request(31)).json()["duplicate_batch"] is False
