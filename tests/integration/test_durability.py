"""Acknowledged writes survive kill -9; retries never duplicate; a torn log tail is repaired."""
import json
import os
import random
import re
import struct
import threading
import time

from conftest import http

N_WRITERS = 4
STEPS_PER_BATCH = 20
METRICS = ["loss", "acc", "lr", "grad_norm", "tokens"]
T0 = 1767225600.0
KILLS = 6


def value_of(writer, step, metric_index):
    """Deterministic and distinct per (writer, step, metric), with non-trivial low bits."""
    return (writer * 1_000_003 + step * 101 + metric_index) / 7.0 - 12345.678


def time_of(writer, step):
    return T0 + step * 0.5 + writer * 0.001


def batch_lines(writer, first_step):
    lines = []
    for step in range(first_step, first_step + STEPS_PER_BATCH):
        metrics = {m: value_of(writer, step, i) for i, m in enumerate(METRICS)}
        lines.append(json.dumps({"project": "dur", "run": "writer%d" % writer, "step": step,
                                 "time": time_of(writer, step), "metrics": metrics}))
    return "\n".join(lines) + "\n"


class Writer(threading.Thread):
    """Writes batches of increasing steps; retries a batch until it gets a 200."""

    def __init__(self, server, index, stop):
        super().__init__(daemon=True)
        self.server, self.index, self.stop = server, index, stop
        self.acked = []  # first steps of acknowledged batches, in order
        self.retries = 0
        self.retries_found_applied = 0
        self.failure = None

    def run(self):
        try:
            next_step = 0
            while not self.stop.is_set():
                self.write_until_acked(next_step)
                self.acked.append(next_step)
                next_step += STEPS_PER_BATCH
        except Exception as e:  # reported by the test
            self.failure = e

    def write_until_acked(self, first_step):
        body = batch_lines(self.index, first_step)
        n = STEPS_PER_BATCH * len(METRICS)
        attempt = 0
        deadline = time.monotonic() + 120
        while True:
            attempt += 1
            assert time.monotonic() < deadline, "writer %d: batch %d never acknowledged" % (self.index, first_step)
            try:
                r = http("POST", self.server.url + "/api/v1/write", body=body, timeout=15)
            except OSError:  # refused, reset, timed out: not acknowledged
                self.retries += 1
                time.sleep(0.02)
                continue
            if r.status >= 500:
                self.retries += 1
                time.sleep(0.02)
                continue
            assert r.status == 200, "writer %d batch %d: %r" % (self.index, first_step, r)
            result = r.json()
            assert result["points_accepted"] == n, result
            if attempt > 1 and result["points_unchanged"] > 0:
                self.retries_found_applied += 1
            elif attempt == 1:
                assert result["points_unchanged"] == 0, result
            return


def check_export(server, expected):
    """expected: run -> {(step, metric): (time, value)}; the export must hold exactly that."""
    for run, points in expected.items():
        got = {}
        for row in server.export(run, project="dur"):
            for metric, value in row["metrics"].items():
                key = (row["step"], metric)
                assert key not in got, "%s: step %d of %s appears twice in the export" % (run, key[0], metric)
                got[key] = (row["time"], value)
        missing = sorted(points.keys() - got.keys())
        extra = sorted(got.keys() - points.keys())
        assert not missing, "%s: %d acknowledged points lost, e.g. %r" % (run, len(missing), missing[:5])
        assert not extra, "%s: %d points never written, e.g. %r" % (run, len(extra), extra[:5])
        wrong = [(k, points[k], got[k]) for k in points
                 if struct.pack("<dd", *points[k]) != struct.pack("<dd", *got[k])]
        assert not wrong, "%s: %d points changed, e.g. %r" % (run, len(wrong), wrong[:5])


def expected_points(writer, first_steps):
    points = {}
    for first in first_steps:
        for step in range(first, first + STEPS_PER_BATCH):
            for i, m in enumerate(METRICS):
                points[(step, m)] = (time_of(writer, step), value_of(writer, step, i))
    return points


def test_acknowledged_writes_survive_kill9(server):
    rng = random.Random(1234)
    stop = threading.Event()
    writers = [Writer(server, i, stop) for i in range(N_WRITERS)]
    for w in writers:
        w.start()
    replay_logs = []
    try:
        for _ in range(KILLS):
            time.sleep(rng.uniform(0.2, 1.2))
            server.kill9()
            time.sleep(rng.uniform(0.0, 0.3))
            server.start()
            replay_logs.append(server.stderr_text())
        time.sleep(0.5)
    finally:
        stop.set()
        for w in writers:
            w.join(timeout=150)
    for w in writers:
        assert not w.is_alive(), "writer %d hung" % w.index
        assert w.failure is None, "writer %d: %r" % (w.index, w.failure)
        assert len(w.acked) >= 5, "writer %d got only %d batches acknowledged" % (w.index, len(w.acked))
    assert sum(w.retries for w in writers) > 0, "no kill hit a writer; the test proved nothing"

    expected = {"writer%d" % w.index: expected_points(w.index, w.acked) for w in writers}
    check_export(server, expected)

    # Every restart replayed the log it found, and said so.
    for log in replay_logs:
        m = re.search(r'msg="write-ahead log replayed".*\brecords=(\d+)', log)
        assert m, "no replay logged at start:\n" + log[-2000:]
    assert any(int(re.search(r'msg="write-ahead log replayed".*\brecords=(\d+)', log).group(1)) > 0
               for log in replay_logs)

    # And once more after a clean shutdown: still exactly the same.
    server.restart()
    check_export(server, expected)
    print("acked batches per writer: %s; retries: %d, of which found already applied: %d" % (
        [len(w.acked) for w in writers], sum(w.retries for w in writers),
        sum(w.retries_found_applied for w in writers)))


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
    expected = {"writer0": {}}
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
        expected = {"writer0": expected_points(0, first_steps)}
        check_export(server, expected)
        # The log still takes writes after the repair, and they survive another crash.
        extra = 1000 + first
        assert server.write(batch_lines(0, extra)).status == 200
        first_steps.append(extra)
        server.kill9()
        server.start()
        check_export(server, {"writer0": expected_points(0, first_steps)})
