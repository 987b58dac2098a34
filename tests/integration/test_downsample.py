"""Timelines, raw reads and M4 downsampling against a Python model of the same rules.

The model applies the documented write rules point by point:
  * a step above every visible step is appended;
  * a step that holds a visible value with the same bits is a no-op;
  * a step that holds a different visible value starts a new timeline: every visible point at that step
    or later becomes superseded (hidden from reads, listed by /series/superseded);
  * an empty step below the newest is filled in.
Buckets are then checked against a brute-force computation over the raw points /series returns.
"""
import math
import random
import struct

import pytest

from conftest import SeriesModel, bits

T0 = 1767225600.0
NAN, INF = float("nan"), float("inf")
PROJECT = "ds"


def num(v):
    """A number from a JSON response, where non-finite values arrive as strings."""
    return float(v) if isinstance(v, str) else float(v)


def generate_ops(rng, first_step, last_step, rewinds):
    """Point writes in send order: a random walk with spikes, NaN/±Inf, a NaN streak, gaps, holes filled
    in later out of order, identical retries, and rewinds {at_step: back_to_step}."""
    ops, holes = [], []
    walk = rng.uniform(-5, 5)
    wall = T0 + first_step * 0.25
    step = first_step
    done_rewinds = set()
    shadow = SeriesModel()  # to fill in only holes that are still empty

    def emit(op):
        ops.append(op)
        shadow.write(*op)
    nan_streak_at = rng.randrange(first_step + 500, last_step - 500)

    def value():
        nonlocal walk
        walk += rng.gauss(0, 1)
        r = rng.random()
        if r < 0.01:
            return walk + rng.choice([-1, 1]) * rng.uniform(1e3, 1e6)  # single-point spike
        if r < 0.015:
            return NAN
        if r < 0.018:
            return INF
        if r < 0.021:
            return -INF
        return walk

    def tick():
        nonlocal wall
        wall += 0.25 + abs(rng.gauss(0, 0.01))
        return round(wall, 6)

    while step <= last_step:
        due = [at for at in sorted(rewinds) if at <= step and at not in done_rewinds]
        if due:
            done_rewinds.add(due[0])
            step = rewinds[due[0]]  # a restart from an older checkpoint: the same steps, new values
            holes = [h for h in holes if h < step]
            continue
        r = rng.random()
        if r < 0.0006:
            step += rng.randint(50, 400)  # a gap
            continue
        if r < 0.04:
            holes.append(step)  # left empty for now
            step += 1
            continue
        if step == nan_streak_at:
            for _ in range(40):
                emit((step, tick(), NAN))
                step += 1
            continue
        emit((step, tick(), value()))
        if rng.random() < 0.01:
            emit(ops[-1])  # an identical retry
        if holes and rng.random() < 0.03:
            hole = holes.pop(rng.randrange(len(holes)))
            if hole not in shadow.visible:
                emit((hole, tick(), value()))  # an out-of-order fill-in
        step += 1
    return ops


def write_ops(server, run, metric, ops, model, rng):
    """Sends ops in batches of random size, checking each response against the model's outcomes."""
    i = 0
    while i < len(ops):
        batch = ops[i:i + rng.choice([1, 7, 64, 300, 900, 1500])]
        i += len(batch)
        unchanged = sum(model.write(*op) == "unchanged" for op in batch)
        lines = [{"project": PROJECT, "run": run, "step": s, "time": t, "metrics": {metric: v}}
                 for s, t, v in batch]
        result = server.write_ok(lines)
        assert result["points_accepted"] == len(batch), result
        assert result["points_unchanged"] == unchanged, (result, unchanged)


def raw_series(server, runs, metric, **params):
    q = [("project", PROJECT), ("metric", metric)] + [("run", r) for r in runs] + list(params.items())
    r = server.get("/api/v1/series", q)
    assert r.status == 200, r
    body = r.json()
    out = []
    for s in body["series"]:
        assert "error" not in s, s
        out.append([(p[0], num(p[1]), num(p[2])) for p in s["points"]])
    return out


def same_points(got, want):
    """Exact comparison of [(step, time, value)] lists; returns the first difference or None."""
    if len(got) != len(want):
        return "lengths differ: got %d, want %d" % (len(got), len(want))
    for g, w in zip(got, want):
        if g[0] != w[0] or bits(g[1]) != bits(w[1]) or bits(g[2]) != bits(w[2]):
            if not (g[0] == w[0] and bits(g[1]) == bits(w[1]) and math.isnan(g[2]) and math.isnan(w[2])):
                return "got %r, want %r" % (g, w)
    return None


def brute_force_buckets(points, grid, x_of):
    frm, to, count = grid["from"], grid["to"], grid["buckets"]
    width = (to - frm) / count
    buckets = {}
    for p in points:
        x = x_of(p)
        if not (frm <= x <= to):
            continue
        i = 0 if to <= frm else min(int((x - frm) / width), count - 1)
        b = buckets.setdefault(i, {"i": i, "count": 0, "nan_count": 0, "min": INF, "max": -INF, "sum": 0.0,
                                   "abs": 0.0, "first_step": None, "last_step": None})
        step, _, v = p
        b["count"] += 1
        if math.isnan(v):
            b["nan_count"] += 1
        else:
            b["min"] = min(b["min"], v)
            b["max"] = max(b["max"], v)
            if math.isfinite(v):
                b["sum"] += v
                b["abs"] += abs(v)
        if b["first_step"] is None or step < b["first_step"]:
            b["first_step"], b["first"] = step, v
        if b["last_step"] is None or step > b["last_step"]:
            b["last_step"], b["last"] = step, v
    return [buckets[i] for i in sorted(buckets)]


def same_number(a, b):
    return (math.isnan(a) and math.isnan(b)) or bits(a) == bits(b)


def compare_buckets(got, want, context):
    assert [b["i"] for b in got] == [b["i"] for b in want], (
        "%s: non-empty buckets differ: got %r, want %r" % (context, [b["i"] for b in got][:20], [b["i"] for b in want][:20]))
    for g, w in zip(got, want):
        for field in ("count", "nan_count", "first_step", "last_step"):
            assert g[field] == w[field], "%s bucket %d %s: got %r, want %r" % (context, w["i"], field, g, w)
        if w["count"] == w["nan_count"]:
            assert g["min"] is None and g["max"] is None, "%s bucket %d: all NaN, so no min/max: %r" % (
                context, w["i"], g)
        for field in ("first", "last") if w["count"] == w["nan_count"] else ("min", "max", "first", "last"):
            assert same_number(num(g[field]), w[field]), (
                "%s bucket %d %s: got %r, want %r (bucket %r)" % (context, w["i"], field, g[field], w[field], g))
        tolerance = 1e-9 * w["abs"] + 1e-9
        assert abs(num(g["sum"]) - w["sum"]) <= tolerance, "%s bucket %d sum: got %r, want %r" % (
            context, w["i"], g["sum"], w["sum"])


def buckets_request(server, runs, metric, **params):
    q = [("project", PROJECT), ("metric", metric)] + [("run", r) for r in runs] + \
        [(k, str(v)) for k, v in params.items()]
    r = server.get("/api/v1/series", q)
    assert r.status == 200, r
    return r.json()


@pytest.fixture(scope="module")
def data(module_server):
    """Writes the series once; returns {run: model} for metric 'm' plus the tiny series."""
    server = module_server
    rng = random.Random(20261129)
    models = {"walk": SeriesModel(), "other": SeriesModel(), "tiny": SeriesModel()}
    walk_ops = generate_ops(rng, 0, 8000, rewinds={2600: 1900, 4700: 4650, 6000: 3100})
    other_ops = generate_ops(rng, 2000, 9000, rewinds={8200: 7000})
    write_ops(server, "walk", "m", walk_ops, models["walk"], rng)
    write_ops(server, "other", "m", other_ops, models["other"], rng)
    tiny_ops = [(5, T0 + 5, 1.5), (9, T0 + 9, NAN), (7, T0 + 7, -INF), (9, T0 + 9.5, NAN)]
    write_ops(server, "tiny", "m", tiny_ops, models["tiny"], rng)
    for name in ("walk", "other"):
        m = models[name]
        assert len(m.visible) >= 5000 and m.rewinds >= 1 and m.superseded, (name, len(m.visible), m.rewinds)
    return models


def test_raw_series_follows_timeline_rules(module_server, data):
    for run, model in data.items():
        got = raw_series(module_server, [run], "m")[0]
        diff = same_points(got, model.points())
        assert diff is None, "%s: %s" % (run, diff)
        # A step range on the raw read.
        got = raw_series(module_server, [run], "m", **{"from": "2500", "to": "4100.5"})[0]
        want = [p for p in model.points() if 2500 <= p[0] <= 4100]
        assert same_points(got, want) is None, run


def test_superseded_lists_the_hidden_points(module_server, data):
    for run, model in data.items():
        body = module_server.get_json("/api/v1/series/superseded", {"project": PROJECT, "run": run, "metric": "m"})
        got = sorted((p["point"][0], bits(num(p["point"][1])), bits(num(p["point"][2]))) for p in body["points"])
        want = sorted((s, bits(t), bits(v)) for s, t, v in model.superseded)
        # NaN payloads are not part of the contract: compare NaNs as NaN.
        canon = lambda rows: sorted((s, t, bits(NAN) if math.isnan(struct.unpack("<d", v)[0]) else v)
                                    for s, t, v in rows)
        assert canon(got) == canon(want), "%s: %d superseded points listed, %d expected" % (run, len(got), len(want))
        for p in body["points"]:
            assert isinstance(p["timeline"], int) and 0 <= p["timeline"] <= model.rewinds


def test_metric_listing_matches_model(module_server, data):
    for run, model in data.items():
        info = module_server.get_json("/api/v1/run", {"project": PROJECT, "run": run})
        (m,) = [x for x in info["metrics"] if x["name"] == "m"]
        steps = sorted(model.visible)
        assert m["count"] == len(steps), (run, m)
        assert m["first_step"] == steps[0] and m["last_step"] == steps[-1], (run, m)
        assert m["timelines"] == model.rewinds + 1, (run, m)
        latest = model.points()[-1]
        assert m["latest"][0] == latest[0] and same_number(num(m["latest"][2]), latest[2]), (run, m, latest)


GRIDS = [
    # (buckets, from, to); None = the server's default range
    (1, None, None), (7, None, None), (100, None, None), (1000, None, None), (20000, None, None),
    (3, 0, 1023), (50, 1000, 3000), (64, 1023.5, 2049), (333, 777, 6543.25), (10, 6000, 6100),
    (40, 6000, 6010),  # narrower than one step per bucket: many empty buckets
    (5, 4242, 4242),   # a single x
    (2, 100000, 200000),  # beyond the data
    (1, 0, 100000), (17, 1900, 1900 + 17 * 64),
]


@pytest.mark.parametrize("run", ["walk", "other", "tiny"])
def test_buckets_equal_brute_force_on_steps(module_server, data, run):
    points = raw_series(module_server, [run], "m")[0]
    xs = [p[0] for p in points]
    for count, frm, to in GRIDS:
        params = {"buckets": count}
        if frm is not None:
            params.update({"from": frm, "to": to})
        body = buckets_request(module_server, [run], "m", **params)
        grid = body["grid"]
        assert grid["buckets"] == count
        if frm is not None:
            assert (grid["from"], grid["to"]) == (frm, to), grid
        else:
            assert grid["from"] <= min(xs) and grid["to"] >= max(xs), (grid, min(xs), max(xs))
        assert grid["width"] == (grid["to"] - grid["from"]) / count, grid
        want = brute_force_buckets(points, grid, lambda p: float(p[0]))
        compare_buckets(body["series"][0]["buckets"], want, "%s %r" % (run, (count, frm, to)))


@pytest.mark.parametrize("x", ["time", "relative"])
def test_buckets_equal_brute_force_on_time(module_server, data, x):
    run = "walk"
    points = raw_series(module_server, [run], "m")[0]
    origin = 0.0
    if x == "relative":
        origin = module_server.get_json("/api/v1/run", {"project": PROJECT, "run": run})["start_time"]
    x_of = lambda p: p[1] - origin
    lo, hi = min(map(x_of, points)), max(map(x_of, points))
    for count, frm, to in [(1, None, None), (300, None, None), (97, lo + 100.3, lo + 1200.9), (10, lo, lo + 2.0)]:
        params = {"buckets": count, "x": x}
        if frm is not None:
            params.update({"from": repr(frm), "to": repr(to)})
        body = buckets_request(module_server, [run], "m", **params)
        grid = body["grid"]
        if frm is not None:
            assert (grid["from"], grid["to"]) == (frm, to), grid
        else:
            assert grid["from"] <= lo and grid["to"] >= hi, (grid, lo, hi)
        want = brute_force_buckets(points, grid, x_of)
        compare_buckets(body["series"][0]["buckets"], want, "%s %r" % (x, (count, frm, to)))
        if frm is not None:  # the same range on a raw read
            raw = raw_series(module_server, [run], "m", x=x, **{"from": repr(frm), "to": repr(to)})[0]
            assert same_points(raw, [p for p in points if frm <= x_of(p) <= to]) is None, (x, frm, to)


def test_two_runs_share_one_grid(module_server, data):
    walk, other = raw_series(module_server, ["walk", "other"], "m")
    for count, frm, to in [(200, None, None), (30, 1500, 8000)]:
        params = {"buckets": count}
        if frm is not None:
            params.update({"from": frm, "to": to})
        body = buckets_request(module_server, ["walk", "other"], "m", **params)
        grid = body["grid"]
        assert [s["run"] for s in body["series"]] == ["walk", "other"]
        if frm is None:
            all_steps = [p[0] for p in walk + other]
            assert grid["from"] <= min(all_steps) and grid["to"] >= max(all_steps), grid
            # The union of both ranges: wider than either run alone.
            assert grid["from"] <= walk[0][0] and grid["to"] >= other[-1][0]
            single = buckets_request(module_server, ["walk"], "m", buckets=count)["grid"]
            assert grid["to"] > single["to"], (grid, single)
        for points, series in ((walk, body["series"][0]), (other, body["series"][1])):
            want = brute_force_buckets(points, grid, lambda p: float(p[0]))
            compare_buckets(series["buckets"], want, "%s on the shared grid %r" % (series["run"], grid))


def test_bad_series_parameters(module_server, data):
    def status(**params):
        q = [("project", PROJECT), ("run", "walk"), ("metric", "m")] + list(params.items())
        return module_server.get("/api/v1/series", q).status
    assert status(buckets="0") == 400
    assert status(buckets="-3") == 400
    assert status(buckets="abc") == 400
    assert status(buckets="100001") == 400
    assert status(**{"from": "nan"}) == 400
    assert status(**{"from": "10", "to": "5", "buckets": "3"}) == 400
    assert status(x="weird") == 400
    r = module_server.get("/api/v1/series", {"project": PROJECT, "run": "nope", "metric": "m"})
    assert r.status == 200 and "error" in r.json()["series"][0], r


@pytest.mark.parametrize("kill", [False, True], ids=["sigterm", "kill9"])
def test_same_answers_after_restart(module_server, data, kill):
    """Sealed chunks come back from the store and the rest from the log: reads must not change."""
    before = {run: raw_series(module_server, [run], "m")[0] for run in data}
    module_server.restart(kill=kill)
    for run, model in data.items():
        assert same_points(raw_series(module_server, [run], "m")[0], model.points()) is None, run
        body = module_server.get_json("/api/v1/series/superseded", {"project": PROJECT, "run": run, "metric": "m"})
        assert len(body["points"]) == len(model.superseded), run
        for count, frm, to in GRIDS[:8]:
            params = {"buckets": count}
            if frm is not None:
                params.update({"from": frm, "to": to})
            got = buckets_request(module_server, [run], "m", **params)
            want = brute_force_buckets(before[run], got["grid"], lambda p: float(p[0]))
            compare_buckets(got["series"][0]["buckets"], want, "after restart %s %r" % (run, (count, frm, to)))


def test_rewind_into_chunks_loaded_from_disk(module_server, data):
    """After a restart, new timelines and fill-ins land on chunks that came back from the store."""
    rng = random.Random(5)
    model = data["walk"]
    steps = sorted(model.visible)
    module_server.restart(kill=True)
    target = steps[len(steps) // 3]  # deep inside the sealed chunks
    t = T0 + 100_000
    ops = [(s, t + i, float(i) - 0.5) for i, s in enumerate(range(target, target + 1500))]
    holes = [s for s in range(steps[0], target) if s not in model.visible][:20]
    ops += [(h, t + 5000 + i, 1e6 + i) for i, h in enumerate(holes)]  # fill-ins below the rewind
    ops += [ops[0], ops[-1]]  # identical retries
    write_ops(module_server, "walk", "m", ops, model, rng)
    assert holes and model.rewinds >= 4
    for restart in (False, True):
        if restart:
            module_server.restart(kill=True)
        assert same_points(raw_series(module_server, ["walk"], "m")[0], model.points()) is None
        body = module_server.get_json("/api/v1/series/superseded", {"project": PROJECT, "run": "walk", "metric": "m"})
        assert len(body["points"]) == len(model.superseded)
        points = model.points()
        for count, frm, to in GRIDS:
            params = {"buckets": count}
            if frm is not None:
                params.update({"from": frm, "to": to})
            got = buckets_request(module_server, ["walk"], "m", **params)
            want = brute_force_buckets(points, got["grid"], lambda p: float(p[0]))
            compare_buckets(got["series"][0]["buckets"], want, "reloaded walk %r" % ((count, frm, to),))


def test_step_ranges_beyond_int64(module_server):
    """from/to are doubles; a range reaching past the int64 steps must still select by value.

    Found by this suite: the server casts from/to to int64 without clamping, so a `to` above 2^63
    selects nothing and a `from` above 2^63 selects everything."""
    top = 9223372036854775807
    module_server.write_ok([{"project": PROJECT, "run": "huge", "step": s, "time": T0 + i, "metrics": {"m": v}}
                            for i, (s, v) in enumerate([(0, 1.0), (5, 3.0), (top, 2.0)])])
    def steps(**params):
        return [p[0] for p in raw_series(module_server, ["huge"], "m", **params)[0]]
    assert steps() == [0, 5, top]
    assert steps(**{"from": "0", "to": "100"}) == [0, 5]
    assert steps(**{"from": "-1e30", "to": "10"}) == [0, 5]
    assert steps(**{"from": "0", "to": "1e19"}) == [0, 5, top], "to beyond int64 dropped every point"
    assert steps(**{"from": "0", "to": "1e300"}) == [0, 5, top]
    assert steps(**{"from": "1e19"}) == [], "from beyond int64 selected points below it"
    assert steps(**{"from": "1e19", "to": "1e20"}) == []


def test_bucket_first_at_the_largest_step(module_server):
    """A bucket whose lowest step is int64 max must still report that point as `first`.

    Found by this suite: Bucket::AddPoint only takes `first` when p.step < first_step, and first_step
    starts at int64 max, so such a bucket reports first=0."""
    top = 9223372036854775807
    module_server.write_ok([{"project": PROJECT, "run": "huge2", "step": s, "time": T0 + i, "metrics": {"m": v}}
                            for i, (s, v) in enumerate([(0, 1.0), (top, 2.0)])])
    body = buckets_request(module_server, ["huge2"], "m", buckets=2)
    points = raw_series(module_server, ["huge2"], "m")[0]
    want = brute_force_buckets(points, body["grid"], lambda p: float(p[0]))
    assert [b["count"] for b in want] == [1, 1]
    compare_buckets(body["series"][0]["buckets"], want, "huge2")
