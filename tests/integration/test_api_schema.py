"""The server's JSON answers against schema/api.schema.json, the one schema the web app's API types
are generated from: a field added, renamed or retyped on either side fails here, not in a browser.

Every object in the schema is closed (unevaluatedProperties: false), so an undocumented field is an
error too. The data written covers the shapes' variants: NaN values, a resolved and a firing alert,
a silence, raw and downsampled series, a run without the metric, histograms beside scalars, images and
texts.
"""
import json
import os
import time

import jsonschema
import numpy as np
import pytest
import websocket

from harness import ingest_pb
from harness import png_decode
from harness import wait_until
from conftest import REPO

SCHEMA_PATH = os.path.join(REPO, "schema", "api.schema.json")


@pytest.fixture(scope="module")
def schema():
    with open(SCHEMA_PATH) as f:
        doc = json.load(f)
    jsonschema.Draft202012Validator.check_schema(doc)
    return doc


def check(schema, definition, document):
    """Validates `document` against $defs/<definition>; the error names the path that is wrong."""
    sub = {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": "#/$defs/" + definition}
    errors = sorted(jsonschema.Draft202012Validator(sub).iter_errors(document), key=lambda e: list(e.path))
    assert not errors, "%s: %s" % (definition, "; ".join(
        "at %s: %s" % ("/".join(map(str, e.path)) or "(root)", e.message) for e in errors[:5]))


def get(server, path, params=None, expect=200):
    r = server.get(path, params)
    assert r.status == expect, (path, params, r)
    return json.loads(r.body)  # the raw text: "NaN" stays the string the schema expects


@pytest.fixture(scope="module")
def populated(module_server):
    s = module_server
    lines = []
    for step in range(120):
        loss = "NaN" if step == 100 else repr(1.0 + 0.01 * (step % 3))
        lines.append('{"project":"schema","run":"r1","step":%d,"time":%f,"metrics":{"loss":%s,"acc":0.5}}'
                     % (step, 1767225600 + step, loss))
    for step in range(80):
        loss = "NaN" if step == 70 else repr(2.0)
        lines.append('{"project":"schema","run":"r2","step":%d,"metrics":{"loss":%s}}' % (step, loss))
    s.write_ok("\n".join(lines))
    r = s.post("/api/v1/runs/update", json.dumps({"tags": ["baseline"], "config": {"optim": {"lr": 3e-4}}}),
               params={"project": "schema", "run": "r1"})
    assert r.status == 200, r
    def both_alerted_one_resolved():
        alerts = get(s, "/api/v1/alerts", {"project": "schema"})["alerts"]
        return {a["run"] for a in alerts} == {"r1", "r2"} and any(a["status"] == "resolved" for a in alerts)
    wait_until(both_alerted_one_resolved, "alerts of r1 and r2, one resolved")
    return s


def test_runs(schema, populated):
    check(schema, "RunList", get(populated, "/api/v1/runs", {"project": "schema", "latest": "loss,acc,none"}))
    check(schema, "RunList", get(populated, "/api/v1/runs"))


def test_run_and_metrics(schema, populated):
    check(schema, "RunDetail", get(populated, "/api/v1/run", {"project": "schema", "run": "r1"}))
    check(schema, "MetricList", get(populated, "/api/v1/metrics", {"project": "schema", "run": "r1"}))


def test_series_raw_and_downsampled(schema, populated):
    params = {"project": "schema", "run": ["r1", "r2", "missing"], "metric": "loss"}
    check(schema, "SeriesRaw", get(populated, "/api/v1/series", params))
    check(schema, "SeriesDownsampled", get(populated, "/api/v1/series", dict(params, buckets="7")))
    check(schema, "SeriesDownsampled", get(populated, "/api/v1/series", dict(params, buckets="50", x="relative")))


def test_series_batch_is_series_in_columns(schema, populated):
    """/api/v1/series/batch: per metric what /api/v1/series?buckets=N answers, the buckets as columns."""
    runs = [("run", "r1"), ("run", "r2"), ("run", "missing")]  # pairs: repeated keys
    for extra in ({"buckets": "7"}, {"buckets": "50", "x": "relative"}, {"buckets": "3", "from": "10", "to": "90"}):
        common = [("project", "schema")] + runs + list(extra.items())
        batch = get(populated, "/api/v1/series/batch", common + [("metric", "loss"), ("metric", "acc")])
        check(schema, "SeriesBatch", batch)
        assert [m["metric"] for m in batch["metrics"]] == ["loss", "acc"]
        assert [s["run"] for s in batch["metrics"][0]["series"]] == ["r1", "r2", "missing"]
        for m in batch["metrics"]:
            one = get(populated, "/api/v1/series", common + [("metric", m["metric"])])
            assert m["grid"] == one["grid"]
            for cols, rows in zip(m["series"], one["series"], strict=True):
                assert cols["run"] == rows["run"] and cols.get("error") == rows.get("error")
                fields = [f for f in cols if f not in ("run", "error")]
                as_rows = [dict(zip(fields, values)) for values in zip(*(cols[f] for f in fields))]
                assert as_rows == rows["buckets"], (extra, m["metric"], cols["run"])
    no_buckets = populated.get("/api/v1/series/batch", {"project": "schema", "run": "r1", "metric": "loss"})
    assert no_buckets.status == 400 and b"buckets" in no_buckets.body, no_buckets
    too_many = populated.get("/api/v1/series/batch", runs[:2] + [("metric", "m%d" % i) for i in range(501)] + [("buckets", "5")])
    assert too_many.status == 400 and b"1000 series" in too_many.body, too_many


def test_alerts_acks_and_silences(schema, populated):
    alerts = get(populated, "/api/v1/alerts", {"project": "schema"})
    check(schema, "AlertList", alerts)
    assert {a["status"] for a in alerts["alerts"]} == {"firing", "resolved"}, alerts
    r = populated.post("/api/v1/alerts/ack", json.dumps({"id": alerts["alerts"][0]["id"], "by": "schema-test"}))
    assert r.status == 200, r
    check(schema, "AlertResponse", json.loads(r.body))
    r = populated.post("/api/v1/silences", json.dumps({"project": "schema", "kind": "nan", "duration": "1h"}))
    assert r.status == 200, r
    silence = json.loads(r.body)
    check(schema, "SilenceResponse", silence)
    check(schema, "SilenceList", get(populated, "/api/v1/silences", {"all": "1"}))
    r = populated.post("/api/v1/silences/expire", json.dumps({"id": silence["silence"]["id"]}))
    check(schema, "SilenceResponse", json.loads(r.body))


def test_histograms_and_graph(schema, populated):
    pb = ingest_pb.load()
    req = pb.WriteRequest()
    batch = req.runs.add(project="schema", run="h1")
    batch.steps.extend([0])
    batch.metrics.add(name="loss", values=[1.0])
    for step in (0, 100):
        batch.histograms.add(name="weights/fc1", step=step, time=1767225600 + step, edges=[-1.0, 0.0, 0.5, 2.0],
                             counts=[3.0, 0.0, 7.5])
    batch.metadata.graph_json = json.dumps({"name": "Net", "type": "Net", "params": [], "children": [
        {"name": "fc1", "type": "Linear", "params": [{"name": "weight", "shape": [4, 3]}], "children": []}]})
    r = ingest_pb.post(populated, req)
    assert r.status == 200, r
    check(schema, "HistogramList",
          get(populated, "/api/v1/histograms", {"project": "schema", "run": "h1", "metric": "weights/fc1"}))
    check(schema, "GraphNode", get(populated, "/api/v1/graph", {"project": "schema", "run": "h1"}))
    check(schema, "RunDetail", get(populated, "/api/v1/run", {"project": "schema", "run": "h1"}))


def test_images_and_texts(schema, populated):
    pb = ingest_pb.load()
    png = png_decode.encode_plain(np.zeros((2, 3, 4), np.uint8))
    req = pb.WriteRequest()
    batch = req.runs.add(project="schema", run="m1")
    for step in (0, 5):
        batch.images.add(name="samples", step=step, index=1, data=png, caption="c" if step else "")
        batch.texts.add(name="notes", step=step, value="**step** %d" % step)
    r = ingest_pb.post(populated, req)
    assert r.status == 200, r
    images = get(populated, "/api/v1/images", {"project": "schema", "run": "m1"})
    assert len(images) == 2
    check(schema, "ImageList", images)
    texts = get(populated, "/api/v1/texts", {"project": "schema", "run": "m1"})
    assert len(texts) == 2
    check(schema, "TextList", texts)
    metrics = get(populated, "/api/v1/metrics", {"project": "schema", "run": "m1"})
    assert {m["kind"] for m in metrics} == {"image", "text"}
    check(schema, "MetricList", metrics)
    check(schema, "RunDetail", get(populated, "/api/v1/run", {"project": "schema", "run": "m1"}))
    check(schema, "ErrorResponse", get(populated, "/api/v1/blobs/xyz", expect=400))


def test_errors_and_info(schema, populated):
    check(schema, "ErrorResponse", get(populated, "/api/v1/runs", {"q": "("}, expect=400))
    check(schema, "ErrorResponse", get(populated, "/api/v1/run", {"project": "schema", "run": "nope"}, expect=404))
    check(schema, "ServerInfo", get(populated, "/api/v1/info"))


def test_token(schema, populated):
    r = populated.post("/api/v1/tokens", b"")
    assert r.status == 200, r
    check(schema, "Token", json.loads(r.body))


def test_paged_raw_series(schema, server_factory):
    server = server_factory("--max-raw-points", "10")
    server.write_ok(['{"run":"r","step":%d,"metrics":{"loss":1.5}}' % s for s in range(25)])
    paged = get(server, "/api/v1/series", {"run": "r", "metric": "loss"})
    assert paged["series"][0]["next_from"] == 10, paged
    check(schema, "SeriesRaw", paged)
    truncated = get(server, "/api/v1/series", {"run": "r", "metric": "loss", "x": "time"})
    assert truncated["series"][0]["truncated"] is True, truncated
    check(schema, "SeriesRaw", truncated)


def test_keys_and_audit(schema, server_factory):
    server = server_factory("--api-key", "admin-s3cret")
    admin = {"Authorization": "Bearer admin-s3cret"}
    r = server.post("/api/v1/keys", json.dumps({"name": "ci", "scope": "write", "projects": ["v"], "expires": "30d",
                                                "allow_from": "10.0.0.0/8"}), headers=admin)
    assert r.status == 200, r
    check(schema, "NewKey", json.loads(r.body))
    r = server.post("/api/v1/keys", json.dumps({"name": "dash"}), headers=admin)
    check(schema, "NewKey", json.loads(r.body))
    r = server.get("/api/v1/keys", headers=admin)
    listed = json.loads(r.body)
    assert {k["name"] for k in listed["keys"]} == {"ci", "dash"}, listed
    check(schema, "KeyList", listed)
    r = server.post("/api/v1/keys/revoke", json.dumps({"name": "dash"}), headers=admin)
    check(schema, "KeyRevoked", json.loads(r.body))
    assert server.get("/api/v1/runs", headers={"Authorization": "Bearer nope"}).status == 401
    r = server.get("/api/v1/audit", headers=admin)
    entries = json.loads(r.body)
    assert any(e.get("detail") for e in entries["entries"]) and len(entries["entries"]) == 4, entries
    check(schema, "AuditList", entries)


def test_live_messages(schema, populated):
    ws = websocket.create_connection(populated.ws_url + "/api/v1/live", timeout=10)
    try:
        ws.send(json.dumps({"subscribe": {"project": "schema", "runs": ["r3"]}}))
        messages = [json.loads(ws.recv())]
        lines = ['{"project":"schema","run":"r3","step":%d,"metrics":{"loss":%s}}' % (s, "NaN" if s == 70 else "1.5")
                 for s in range(71)]
        populated.write_ok("\n".join(lines))
        while not any(m["type"] == "alert" for m in messages):
            messages.append(json.loads(ws.recv()))
        ws.send("not json")
        messages.append(json.loads(ws.recv()))
    finally:
        ws.close()
    assert {m["type"] for m in messages} == {"subscribed", "points", "alert", "error"}, messages
    for m in messages:
        check(schema, "LiveMessage", m)
