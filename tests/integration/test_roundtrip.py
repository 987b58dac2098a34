"""The 1M-point workload goes in through /api/v1/write and comes back bit-identical from /api/v1/export."""
import json
import math
import os
import random
import struct
import subprocess
import time

import pytest

from conftest import loads

GEN = "/work/shared/bench/gen_workload.py"
LINES_PER_BODY = 2000

# Values whose exact bits are easy to lose: non-finite, signed zero, subnormals, the extremes, and
# integer tokens beyond 2^53 and beyond int64 (correctly rounded to the nearest double).
SPECIAL_VALUES = [
    float("nan"), float("inf"), float("-inf"),
    -0.0, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, -1.7976931348623157e308,
    0.30000000000000004, 1e-300, 9007199254740993, 12345678901234567890, -123456789012345678901,
]


def bits(x):
    return struct.pack("<d", float(x))


def same_value(a, b):
    a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return bits(a) == bits(b)


@pytest.fixture(scope="session")
def workload(tmp_path_factory):
    """The 1m preset, with SPECIAL_VALUES injected into a few cells; returns (body lines, expected).

    expected maps (run, step, metric) -> (time, value as float).
    """
    out = tmp_path_factory.mktemp("workload")
    subprocess.run(["/usr/bin/python3", GEN, "--preset", "1m", "--out", str(out), "--no-lp"],
                   check=True, stdout=subprocess.DEVNULL, timeout=120)
    rng = random.Random(7)
    with open(os.path.join(out, "workload.jsonl")) as f:
        rows = [json.loads(line) for line in f]
    assert len(rows) == 8 * 2500
    # Inject every special value into several random cells (different runs, metrics and steps).
    for value in SPECIAL_VALUES:
        for _ in range(4):
            row = rows[rng.randrange(len(rows))]
            metric = rng.choice(sorted(row["metrics"]))
            row["metrics"][metric] = value
    lines, expected = [], {}
    for row in rows:
        # json.dumps writes NaN / Infinity / -Infinity as bare tokens and floats in shortest repr.
        lines.append(json.dumps(row, allow_nan=True))
        for metric, value in row["metrics"].items():
            expected[(row["run"], row["step"], metric)] = (row["time"], float(value))
    assert len(expected) == 1_000_000
    text = "\n".join(lines)
    for token in ("NaN", "Infinity", "-Infinity"):
        assert token in text
    return lines, expected


def compare_export(server, runs, expected, when):
    got = {}
    for run in runs:
        for row in server.export(run):
            assert row["project"] == "default" and row["run"] == run, row
            for metric, value in row["metrics"].items():
                key = (run, row["step"], metric)
                assert key not in got, "%s: export repeats %r" % (when, key)
                got[key] = (row["time"], value)
    missing = expected.keys() - got.keys()
    extra = got.keys() - expected.keys()
    assert not missing, "%s: %d points missing from export, e.g. %r" % (when, len(missing), sorted(missing)[:5])
    assert not extra, "%s: %d unexpected points in export, e.g. %r" % (when, len(extra), sorted(extra)[:5])
    bad_values = [(k, expected[k][1], got[k][1]) for k in expected if not same_value(expected[k][1], got[k][1])]
    assert not bad_values, "%s: %d values differ (key, sent, exported), e.g. %r" % (when, len(bad_values), bad_values[:10])
    bad_times = [(k, expected[k][0], got[k][0]) for k in expected if bits(expected[k][0]) != bits(got[k][0])]
    assert not bad_times, "%s: %d times differ, e.g. %r" % (when, len(bad_times), bad_times[:10])


def test_million_points_round_trip_bit_exact(server, workload):
    lines, expected = workload
    t0 = time.monotonic()
    accepted = 0
    for start in range(0, len(lines), LINES_PER_BODY):
        body = "\n".join(lines[start:start + LINES_PER_BODY]) + "\n"
        r = server.write(body, timeout=120)
        assert r.status == 200, r
        result = r.json()
        assert result["lines_rejected"] == 0 and result["errors"] == [], result
        assert result["lines_accepted"] == min(LINES_PER_BODY, len(lines) - start)
        accepted += result["points_accepted"]
    assert accepted == 1_000_000
    ingest_s = time.monotonic() - t0

    runs = sorted({key[0] for key in expected})
    compare_export(server, runs, expected, "after ingest")
    # Again from disk: sealed chunks decoded from the store, the rest replayed from the log.
    t1 = time.monotonic()
    server.restart()
    restart_s = time.monotonic() - t1
    compare_export(server, runs, expected, "after a restart")
    print("ingested 1M points in %.1fs; restart took %.1fs" % (ingest_s, restart_s))


def test_export_text_uses_bare_tokens_and_round_trips(server):
    """The export body itself: NaN/Infinity as bare tokens, every number in shortest round-trip form,
    and re-posting the export changes nothing."""
    values = {"nan": float("nan"), "pinf": float("inf"), "ninf": float("-inf"), "nzero": -0.0,
              "third": 1 / 3, "tiny": 5e-324, "big": 1.7976931348623157e308}
    server.write_ok([{"run": "tokens", "step": 3, "time": 1767225600.125, "metrics": values}])
    r = server.get("/api/v1/export", {"run": "tokens"})
    assert r.status == 200
    text = r.text.strip()
    assert "\n" not in text  # one step and one time: one line
    for token in ('"nan":NaN', '"pinf":Infinity', '"ninf":-Infinity', '"third":0.3333333333333333'):
        assert token in text, (token, text)
    row = loads(text)
    assert row["step"] == 3 and bits(row["time"]) == bits(1767225600.125)
    for name, value in values.items():
        assert same_value(row["metrics"][name], value), (name, row["metrics"][name], value)
    again = server.write_ok(text + "\n")
    assert again["points_accepted"] == len(values) and again["points_unchanged"] == len(values), again
