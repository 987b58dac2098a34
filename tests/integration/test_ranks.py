"""Distributed runs against the real server (docs/distributed.md): JSON lines from 4 simulated ranks of
one run, read back per rank, across ranks (aggregates checked against numpy), as a rank × step matrix
and as the ranks table; the same answers after a clean restart and after a crash (replay); export
lines carry each rank. Answers are checked against schema/api.schema.json."""
import json
import math
import os

import numpy as np
import pytest

jsonschema = pytest.importorskip("jsonschema")

RANKS = 4
STEPS = 300
SCHEMA_PATH = os.path.join(os.path.dirname(__file__), "..", "..", "schema", "api.schema.json")
T0 = 1767225600.0


@pytest.fixture(scope="module")
def schema():
    with open(SCHEMA_PATH) as f:
        return json.load(f)


def check(schema, definition, document):
    sub = {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": "#/$defs/" + definition}
    jsonschema.validate(document, sub)


def value(rank, step):
    # Rank 3 is slow and noisy; step 150 of rank 1 is NaN; every rank shares a trend.
    if rank == 1 and step == 150:
        return float("nan")
    v = 5.0 / (1 + step) + 0.01 * rank + ((step * 7919 + rank * 104729) % 97) / 1000.0
    return v + (1.0 if rank == 3 else 0.0)


def rank_lines(rank, steps, world=RANKS, **extra):
    lines = []
    for step in steps:
        line = {"project": "dist", "run": "job", "rank": rank, "world_size": world,
                "local_rank": rank % 2, "host": "node-%d" % (rank // 2), "step": step,
                "time": T0 + step * (2.0 if rank == 3 else 1.0) + rank * 0.001,
                "metrics": {"loss": value(rank, step), "dist/step_time": 0.1 + rank}}
        line.update(extra)
        lines.append(json.dumps(line, allow_nan=True))
    return lines


def write_job(server):
    # Rank 3 is behind: it has written only half the steps.
    for rank in range(RANKS):
        last = STEPS // 2 if rank == 3 else STEPS
        body = rank_lines(rank, range(0, last))
        for i in range(0, len(body), 100):
            r = server.write_ok(body[i:i + 100])
            assert r["lines_rejected"] == 0, r


def fnum(x):
    if isinstance(x, str):
        return float(x)
    return x


def expected_buckets(buckets, lo, hi):
    """Per non-empty bucket of [lo, hi] the statistics numpy computes over every rank's values."""
    width = (hi - lo) / buckets
    cells = {}
    for rank in range(RANKS):
        last = STEPS // 2 if rank == 3 else STEPS
        for step in range(last):
            if step < lo or step > hi:
                continue
            i = min(int((step - lo) / width), buckets - 1) if hi > lo else 0
            cells.setdefault(i, []).append((value(rank, step), rank, step))
    out = {}
    for i, cell in cells.items():
        vals = np.array([v for v, _, _ in cell if not math.isnan(v)])
        min_v = vals.min()
        max_v = vals.max()
        out[i] = {
            "count": len(cell), "nan_count": sum(1 for v, _, _ in cell if math.isnan(v)),
            "ranks": len({r for _, r, _ in cell}),
            "first_step": min(s for _, _, s in cell), "last_step": max(s for _, _, s in cell),
            "min": min_v, "min_rank": min(r for v, r, _ in cell if v == min_v),
            "max": max_v, "max_rank": min(r for v, r, _ in cell if v == max_v),
            "mean": vals.mean(), "median": np.percentile(vals, 50), "p10": np.percentile(vals, 10),
            "p90": np.percentile(vals, 90),
        }
    return out


def answers(server):
    """Everything the rank routes say about the job (what must survive a restart)."""
    q = {"project": "dist", "run": "job"}
    out = {
        "run": server.get_json("/api/v1/run", q),
        "rank2": server.get_json("/api/v1/series", dict(q, metric="loss", rank="2")),
        "default": server.get_json("/api/v1/series", dict(q, metric="loss")),
        "rank3_down": server.get_json("/api/v1/series", dict(q, metric="loss", rank="3", buckets="10")),
        "agg": server.get_json("/api/v1/series/ranks", dict(q, metric="loss", buckets="37")),
        "agg_window": server.get_json("/api/v1/series/ranks",
                                      dict(q, metric="loss", buckets="10", **{"from": "100", "to": "200"})),
        "matrix": server.get_json("/api/v1/series/rank_matrix", dict(q, metric="loss", buckets="20")),
        "ranks": server.get_json("/api/v1/ranks", q),
        "metrics": server.get_json("/api/v1/metrics", q),
    }
    # Time-dependent fields of the ranks table and the run are compared separately.
    return out


def check_answers(schema, a):
    run = a["run"]
    check(schema, "RunDetail", run)
    assert run["distributed"] is True and run["world_size"] == RANKS and run["rank_count"] == RANKS
    # Each name once, whatever the number of ranks.
    names = sorted(m["name"] for m in a["metrics"])
    assert names == ["dist/step_time", "loss"]

    check(schema, "SeriesRaw", a["rank2"])
    assert a["rank2"]["rank"] == 2
    pts = a["rank2"]["series"][0]["points"]
    assert [p[0] for p in pts] == list(range(STEPS))
    assert all(fnum(p[2]) == value(2, p[0]) for p in pts)
    # Without rank: the run-level view, rank 0.
    check(schema, "SeriesRaw", a["default"])
    assert "rank" not in a["default"]
    assert [fnum(p[2]) for p in a["default"]["series"][0]["points"]] == [value(0, s) for s in range(STEPS)]
    check(schema, "SeriesDownsampled", a["rank3_down"])
    assert sum(b["count"] for b in a["rank3_down"]["series"][0]["buckets"]) == STEPS // 2

    for key, buckets, lo, hi in (("agg", 37, 0, STEPS - 1), ("agg_window", 10, 100, 200)):
        agg = a[key]
        check(schema, "RankAggregates", agg)
        assert agg["rank_count"] == RANKS
        assert agg["grid"]["from"] == lo and agg["grid"]["to"] == hi and agg["grid"]["buckets"] == buckets
        want = expected_buckets(buckets, lo, hi)
        assert [b["i"] for b in agg["buckets"]] == sorted(want)
        for b in agg["buckets"]:
            w = want[b["i"]]
            for field in ("count", "nan_count", "ranks", "first_step", "last_step", "min_rank", "max_rank"):
                assert b[field] == w[field], (key, b["i"], field, b[field], w[field])
            for field in ("min", "max", "mean", "median", "p10", "p90"):
                assert b[field] == pytest.approx(w[field], rel=1e-12), (key, b["i"], field)
    # Rank 3's values are a whole 1.0 above the others: it holds every max.
    assert all(b["max_rank"] == 3 for b in a["agg"]["buckets"] if b["last_step"] < STEPS // 2)

    m = a["matrix"]
    check(schema, "RankMatrix", m)
    assert [r["rank"] for r in m["ranks"]] == list(range(RANKS))
    assert sum(m["ranks"][3]["count"]) == STEPS // 2
    assert sum(m["ranks"][0]["count"]) == STEPS
    assert len(m["ranks"][1]["i"]) == 20

    t = a["ranks"]
    check(schema, "RankTable", t)
    assert t["world_size"] == RANKS
    assert t["median_step"] == STEPS - 1
    rows = t["ranks"]
    assert [r["rank"] for r in rows] == list(range(RANKS))
    assert [r["host"] for r in rows] == ["node-0", "node-0", "node-1", "node-1"]
    assert [r["local_rank"] for r in rows] == [0, 1, 0, 1]
    assert [r["last_step"] for r in rows] == [STEPS - 1] * 3 + [STEPS // 2 - 1]
    assert [r["lag"] for r in rows] == [0, 0, 0, STEPS - STEPS // 2]
    assert rows[0]["steps_per_second"] == pytest.approx(1.0)
    assert rows[3]["steps_per_second"] == pytest.approx(0.5)
    assert all(r["status"] == "running" for r in rows)


def stable(a):
    """The answers without fields that legitimately change over a restart (none of the rank routes'
    do: every field is data)."""
    return json.dumps(a, sort_keys=True)


def test_four_ranks_one_run_and_a_restart(server, schema):
    write_job(server)
    before = answers(server)
    check_answers(schema, before)

    server.restart()  # clean: checkpointed at shutdown
    after = answers(server)
    check_answers(schema, after)
    assert stable(after) == stable(before)

    # More steps, then a crash: replayed from the log.
    for rank in range(3):
        server.write_ok(rank_lines(rank, range(STEPS, STEPS + 5)))
    server.restart(kill=True)
    crashed = answers(server)
    pts = crashed["rank2"]["series"][0]["points"]
    assert [p[0] for p in pts] == list(range(STEPS + 5))
    assert crashed["ranks"]["ranks"][1]["last_step"] == STEPS + 4
    assert crashed["ranks"]["ranks"][3]["last_step"] == STEPS // 2 - 1

    # Export carries each rank; importing it elsewhere gives the same ranks back.
    lines = server.export("job", project="dist")
    by_rank = {}
    for line in lines:
        by_rank.setdefault(line["rank"], []).append(line["step"])
    assert sorted(by_rank) == list(range(RANKS))
    assert by_rank[3] == list(range(STEPS // 2))
    assert by_rank[1] == list(range(STEPS + 5))


def test_ranks_finish_the_run_together(server):
    for rank in range(3):
        server.write_ok(rank_lines(rank, range(3), world=3))
    for rank in range(3):
        server.write_ok([json.dumps({"project": "dist", "run": "job", "rank": rank, "status": "finished"})])
        run = server.get_json("/api/v1/run", {"project": "dist", "run": "job"})
        assert run["status"] == ("finished" if rank == 2 else "running"), rank
        rows = server.get_json("/api/v1/ranks", {"project": "dist", "run": "job"})["ranks"]
        assert [r["status"] for r in rows] == ["finished"] * (rank + 1) + ["running"] * (2 - rank)


def test_bad_rank_fields_and_parameters_are_named(server):
    r = server.write(['{"run":"r","rank":4,"world_size":4,"step":0,"metrics":{"x":1}}',
                      '{"run":"r","world_size":4,"step":0,"metrics":{"x":1}}'])
    assert r.status == 400
    errors = r.json()["errors"]
    assert "field 'rank'" in errors[0]["error"] and errors[0]["line"] == 1
    assert "field 'world_size' needs field 'rank'" in errors[1]["error"]
    server.write_ok(rank_lines(0, range(3)))
    q = {"project": "dist", "run": "job", "metric": "loss"}
    for path, params, word in (
            ("/api/v1/series", dict(q, rank="-1"), "rank"),
            ("/api/v1/series", dict(q, rank="x"), "rank"),
            ("/api/v1/series/ranks", q, "buckets"),
            ("/api/v1/series/ranks", dict(q, buckets="0"), "buckets"),
            ("/api/v1/series/ranks", {"project": "dist", "metric": "loss", "buckets": "3"}, "run"),
            ("/api/v1/series/rank_matrix", {"project": "dist", "run": "job", "buckets": "3"}, "metric"),
            ("/api/v1/series/rank_matrix", dict(q, buckets="3", to="x"), "to"),
            ("/api/v1/ranks", {"project": "dist"}, "run")):
        r = server.get(path, params)
        assert r.status == 400, (path, params, r)
        assert word in r.json()["error"], (path, params, r)
    r = server.get("/api/v1/series/ranks", dict(q, metric="nope", buckets="3"))
    assert r.status == 404 and "nope" in r.json()["error"]
    r = server.get("/api/v1/series", dict(q, rank="7"))
    assert r.status == 200 and "rank 7" in r.json()["series"][0]["error"]


def test_a_run_that_is_not_distributed_is_unchanged(server, schema):
    server.write_ok([{"project": "plain", "run": "r", "step": s, "metrics": {"loss": s}} for s in range(3)])
    run = server.get_json("/api/v1/run", {"project": "plain", "run": "r"})
    check(schema, "RunDetail", run)
    assert run["distributed"] is False and run["world_size"] == 0 and run["rank_count"] == 0
    table = server.get_json("/api/v1/ranks", {"project": "plain", "run": "r"})
    check(schema, "RankTable", table)
    assert table["ranks"] == [] and table["median_step"] == -1
    lines = server.export("r", project="plain")
    assert all("rank" not in line for line in lines)
    agg = server.get_json("/api/v1/series/ranks", {"project": "plain", "run": "r", "metric": "loss", "buckets": "3"})
    assert agg["rank_count"] == 1 and [b["count"] for b in agg["buckets"]] == [1, 1, 1]
