"""Histograms, model graphs, sampled rows and /api/v1/info, written as protobuf to the real binary."""
import json
import random
import struct
import subprocess
import time

import pytest

from harness import ingest_pb
from conftest import BIN, http, loads

T0 = 1767225600.0


@pytest.fixture(scope="module")
def pb():
    return ingest_pb.load()


def bits(x):
    return struct.pack("<d", x)


def random_histogram(rng, step):
    """(edges, counts): random strictly increasing edges at assorted scales and counts that are integers
    (odd steps) or fractions over a wide range (even steps); every fifth step a -0.0 edge, a subnormal
    edge and a -0.0 count."""
    if step % 5 == 0:
        return [-1.5, -0.0, 5e-324, 1.0], [-0.0, 2.0, 0.5]
    n = rng.randint(1, 64)
    scale = rng.choice([1.0, 3.0, 1e-6, 1e6])
    edges = sorted({rng.uniform(-1000, 1000) * scale for _ in range(n + 1)})
    n = len(edges) - 1  # in case two draws collided
    if step % 2:
        counts = [float(rng.randint(0, 10**6)) for _ in range(n)]
    else:
        counts = [rng.random() * 10.0 ** rng.randint(-300, 300) for _ in range(n)]
    return edges, counts


def add_histogram(batch, name, step, time_, edges, counts):
    h = batch.histograms.add()
    h.name = name
    h.step = step
    h.time = time_
    h.edges.extend(edges)
    h.counts.extend(counts)
    return h


def request_with(pb, run, project="hg", writer="", sequence=0):
    req = pb.WriteRequest(writer_id=writer, sequence=sequence)
    batch = req.runs.add()
    batch.project = project
    batch.run = run
    return req, batch


def histograms(server, run, metric, project="hg", **params):
    r = server.get("/api/v1/histograms", dict(project=project, run=run, metric=metric, **params))
    assert r.status == 200, r
    return loads(r.body)["histograms"]


def assert_same(got, want):
    """got: the API's histograms; want: {step: (time, edges, counts)}, bit for bit."""
    assert [h["step"] for h in got] == sorted(want)
    for h in got:
        t, edges, counts = want[h["step"]]
        assert bits(h["time"]) == bits(t), h["step"]
        assert [bits(e) for e in h["edges"]] == [bits(e) for e in edges], h["step"]
        assert [bits(float(c)) for c in h["counts"]] == [bits(c) for c in counts], h["step"]


def test_histograms_round_trip_bit_exact_and_are_durable(server, pb):
    rng = random.Random(7)
    want = {"weights": {}, "grads": {}}
    seq = 0
    for chunk in range(5):
        seq += 1
        req, batch = request_with(pb, "r", writer="w1", sequence=seq)
        batch.steps.extend([chunk])
        batch.times.extend([T0 + chunk])
        batch.metrics.add(name="loss", values=[1.0 / (chunk + 1)])
        for step in range(chunk * 10, chunk * 10 + 10):
            for name in want:
                edges, counts = random_histogram(rng, step)
                add_histogram(batch, name, step, T0 + step + 0.125, edges, counts)
                want[name][step] = (T0 + step + 0.125, edges, counts)
        r = ingest_pb.post(server, req)
        assert r.status == 200, r
        body = r.json()
        assert body["points_accepted"] == 1 and body["errors"] == [], body  # histograms are not points

    def check():
        for name, expected in want.items():
            assert_same(histograms(server, "r", name), expected)
        listed = {m["name"]: m for m in server.get_json("/api/v1/metrics", {"project": "hg", "run": "r"})}
        assert listed["loss"]["kind"] == "scalar"
        for name in want:
            m = listed[name]
            assert (m["kind"], m["count"], m["first_step"], m["last_step"]) == ("histogram", 50, 0, 49), m
        run = server.get_json("/api/v1/run", {"project": "hg", "run": "r"})
        assert {m["name"]: m["kind"] for m in run["metrics"]} == {"loss": "scalar", "weights": "histogram",
                                                                    "grads": "histogram"}

    check()
    # Ranges and limits.
    got = histograms(server, "r", "weights", **{"from": 12, "to": 20})
    assert [h["step"] for h in got] == list(range(12, 21))
    got = histograms(server, "r", "weights", **{"from": 40, "limit": 3})
    assert [h["step"] for h in got] == [40, 41, 42]
    # The same step again replaces it; the count stays.
    req, batch = request_with(pb, "r")
    add_histogram(batch, "weights", 10, T0 + 99, [0.0, 1.0], [42.0])
    want["weights"][10] = (T0 + 99, [0.0, 1.0], [42.0])
    assert ingest_pb.post(server, req).status == 200
    check()
    # The export holds the scalars only (histograms have no /write line form).
    assert [row["metrics"] for row in server.export("r", project="hg")] == [{"loss": 1.0 / (c + 1)} for c in range(5)]

    server.restart()
    check()
    # Acknowledged means durable: kill -9 right after the ack, then replay (no double counting).
    req, batch = request_with(pb, "r", writer="w1", sequence=seq + 1)
    edges, counts = random_histogram(rng, 50)
    add_histogram(batch, "weights", 50, T0 + 50, edges, counts)
    add_histogram(batch, "grads", 3, T0 + 3.5, [1.0, 2.0, 3.0], [0.5, 0.25])
    want["weights"][50] = (T0 + 50, edges, counts)
    want["grads"][3] = (T0 + 3.5, [1.0, 2.0, 3.0], [0.5, 0.25])
    assert ingest_pb.post(server, req).status == 200
    server.restart(kill=True)
    for name, expected in want.items():
        assert_same(histograms(server, "r", name), expected)
    listed = {m["name"]: m for m in server.get_json("/api/v1/metrics", {"project": "hg", "run": "r"})}
    assert listed["weights"]["count"] == 51 and listed["weights"]["last_step"] == 50
    assert listed["grads"]["count"] == 50
    server.restart(kill=True)  # a second replay of the same log
    listed = {m["name"]: m for m in server.get_json("/api/v1/metrics", {"project": "hg", "run": "r"})}
    assert listed["weights"]["count"] == 51 and listed["grads"]["count"] == 50


def test_histogram_time_zero_means_server_time(server, pb):
    req, batch = request_with(pb, "t0")
    add_histogram(batch, "h", 1, 0.0, [0.0, 1.0], [1.0])
    before = time.time()
    assert ingest_pb.post(server, req).status == 200
    (h,) = histograms(server, "t0", "h")
    assert before - 5 <= h["time"] <= time.time() + 5


def test_invalid_histograms_reject_their_batch_with_the_field_named(server, pb):
    cases = [
        ("edges", lambda h: h.edges.pop(), "histograms[1]: has 2 edges for 2 buckets"),
        ("order", lambda h: h.edges.__setitem__(1, -1.0), "histograms[1]: edges are not strictly increasing at edges[1]"),
        ("inf", lambda h: h.edges.__setitem__(2, float("inf")), "histograms[1]: edges[2] is not finite"),
        ("count", lambda h: h.counts.__setitem__(0, -2.0), "histograms[1]: counts[0] is not a finite, non-negative"),
        ("nan", lambda h: h.counts.__setitem__(1, float("nan")), "histograms[1]: counts[1]"),
        ("step", lambda h: setattr(h, "step", -3), "histograms[1]: step -3 is negative"),
        ("name", lambda h: setattr(h, "name", ""), "histograms[1]: histogram name is empty"),
        ("time", lambda h: setattr(h, "time", float("nan")), "histograms[1]: time"),
        ("buckets", lambda h: (h.ClearField("counts"), h.ClearField("edges"), h.edges.append(1.0)),
         "histograms[1]: has 0 buckets"),
    ]
    for label, spoil, message in cases:
        req, bad = request_with(pb, "bad_" + label)
        bad.steps.append(1)
        bad.times.append(T0)
        bad.metrics.add(name="loss", values=[1.0])
        add_histogram(bad, "ok", 1, T0, [0.0, 1.0], [1.0])
        spoil(add_histogram(bad, "weights", 2, T0, [0.0, 1.0, 2.0], [3.0, 4.0]))
        good = req.runs.add(project="hg", run="good_" + label, steps=[1], times=[T0])
        good.metrics.add(name="loss", values=[2.0])
        add_histogram(good, "weights", 1, T0, [0.0, 1.0], [5.0])
        r = ingest_pb.post(server, req)
        # As for every bad run batch: the batch is rejected with its reason, the others stored, 400.
        assert r.status == 400, (label, r)
        body = r.json()
        assert len(body["errors"]) == 1, (label, body)
        assert body["errors"][0]["error"].startswith("runs[0] (run 'bad_%s'): " % label), (label, body)
        assert message in body["errors"][0]["error"], (label, body)
        assert body["points_accepted"] == 1 and body["points_rejected"] == 1, (label, body)
        assert server.get("/api/v1/run", {"project": "hg", "run": "bad_" + label}).status == 404
        assert [h["counts"] for h in histograms(server, "good_" + label, "weights")] == [[5]]


def test_unknown_run_or_histogram_is_404(server, pb):
    req, batch = request_with(pb, "known")
    add_histogram(batch, "h", 1, T0, [0.0, 1.0], [1.0])
    assert ingest_pb.post(server, req).status == 200
    r = server.get("/api/v1/histograms", {"project": "hg", "run": "nope", "metric": "h"})
    assert r.status == 404 and "no run 'nope'" in r.json()["error"], r
    r = server.get("/api/v1/histograms", {"project": "hg", "run": "known", "metric": "nope"})
    assert r.status == 404 and "no histogram 'nope' in run 'known'" in r.json()["error"], r
    assert server.get("/api/v1/histograms", {"project": "hg", "run": "known"}).status == 400
    for bad in ({"from": "x"}, {"to": "1.5"}, {"limit": "0"}, {"limit": "100001"}):
        r = server.get("/api/v1/histograms", dict(project="hg", run="known", metric="h", **bad))
        assert r.status == 400, (bad, r)


def graph_of(depth, width):
    node = {"name": "leaf", "type": "Linear", "params": [{"name": "weight", "shape": [width, width]}],
            "children": []}
    for d in range(depth):
        node = {"name": "block%d" % d, "type": "Sequential", "params": [],
                "children": [node] + [{"name": "relu%d" % i, "type": "ReLU", "params": [], "children": []}
                                      for i in range(width)]}
    return node


def test_graph_round_trip(server, pb):
    graph = graph_of(6, 40)
    req, batch = request_with(pb, "g")
    batch.metadata.graph_json = json.dumps(graph)
    batch.metadata.name = "with a graph"
    req.runs.add(project="hg", run="nograph", steps=[1], times=[T0]).metrics.add(name="loss", values=[1.0])
    assert ingest_pb.post(server, req).status == 200
    for restart in (False, True):
        if restart:
            server.restart(kill=True)
        r = server.get("/api/v1/graph", {"project": "hg", "run": "g"})
        assert r.status == 200, r
        assert r.headers.get("Content-Type", "").startswith("application/json")
        assert r.json() == graph
        assert server.get_json("/api/v1/run", {"project": "hg", "run": "g"})["has_graph"] is True
        runs = {run["id"]: run for run in server.get_json("/api/v1/runs", {"project": "hg"})["runs"]}
        assert runs["g"]["has_graph"] is True and runs["nograph"]["has_graph"] is False
        assert "children" not in json.dumps(runs["g"]), "the graph is not part of run listings"
        r = server.get("/api/v1/graph", {"project": "hg", "run": "nograph"})
        assert r.status == 404 and "has no graph" in r.json()["error"], r
        assert server.get("/api/v1/graph", {"project": "hg", "run": "nope"}).status == 404
    # A new graph replaces the old one.
    req, batch = request_with(pb, "g")
    batch.metadata.graph_json = '{"name": "v2"}'
    assert ingest_pb.post(server, req).status == 200
    assert server.get("/api/v1/graph", {"project": "hg", "run": "g"}).json() == {"name": "v2"}
    # Not an object, or over 8 MiB: the batch is rejected with the reason.
    for bad, reason in (("[1, 2]", "not a JSON object"), ("{\"a\": ", "invalid JSON at byte"),
                        (json.dumps({"pad": "x" * (8 << 20)}), "the limit is 8388608")):
        req, batch = request_with(pb, "badgraph")
        batch.metadata.graph_json = bad
        r = ingest_pb.post(server, req)
        assert r.status == 400 and reason in r.json()["errors"][0]["error"], r
    assert server.get("/api/v1/run", {"project": "hg", "run": "badgraph"}).status == 404


def test_sampled_rows_keep_their_own_times(server, pb):
    # Training steps 0..2999 at T0+step; machine samples numbered 0..3999 at other times. Enough rows to
    # seal chunks, so that a chunk stored "times from the clock" would show.
    req, batch = request_with(pb, "s")
    n = 3000
    batch.steps.extend(range(n))
    batch.times.extend(T0 + s for s in range(n))
    batch.metrics.add(name="loss", values=[s * 0.5 for s in range(n)])
    sampled = req.runs.add(project="hg", run="s", sampled=True)
    sampled.steps.extend(range(4000))
    sample_times = [T0 + 0.3 + s * 0.75 if s % 3 else T0 + s for s in range(4000)]  # some match the clock
    sampled.times.extend(sample_times)
    sampled.metrics.add(name="system/cpu_percent", values=[float(s % 100) for s in range(4000)])
    r = ingest_pb.post(server, req)
    assert r.status == 200 and r.json()["points_accepted"] == 7000, r

    def check():
        got = server.get_json("/api/v1/series", {"project": "hg", "run": "s", "metric": "system/cpu_percent"})
        points = got["series"][0]["points"]
        assert [p[0] for p in points] == list(range(4000))
        assert [bits(p[1]) for p in points] == [bits(t) for t in sample_times]
        loss = server.get_json("/api/v1/series", {"project": "hg", "run": "s", "metric": "loss"})
        assert [p[1] for p in loss["series"][0]["points"]] == [T0 + s for s in range(n)]

    check()
    server.restart()  # sealed and read back from the store
    check()


def test_info_tells_the_grpc_address(server_factory):
    out = subprocess.run([BIN, "version"], capture_output=True, text=True).stdout.split()
    server = server_factory()
    info = server.get_json("/api/v1/info")
    assert info == {"version": out[1], "grpc": "127.0.0.1:%d" % server.grpc_port, "grpc_tls": False,
                    "api_key_required": False}
    keyed = server_factory("--api-key", "s3cret")
    assert keyed.get("/api/v1/info").status == 401
    r = http("GET", keyed.url + "/api/v1/info", headers={"Authorization": "Bearer s3cret"})
    assert r.status == 200 and r.json()["api_key_required"] is True, r
    assert r.json()["grpc"] == "127.0.0.1:%d" % keyed.grpc_port
