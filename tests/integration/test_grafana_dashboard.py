"""The provisioned Grafana "Training overview" dashboard (deploy/grafana/) against a real server:
every variable and every panel query, with Grafana's macros expanded the way Grafana expands them
for an InfluxDB data source, answers, non-empty and right, over what the JSON-lines API (the SDK's
format) and Telegraf-style line protocol wrote; and its annotations show trainwatch's alerts (the
measurement trainwatch_alerts)."""
import json
import os
import re

import pytest
import yaml
from urllib.parse import urlencode

from conftest import REPO, http
from harness.wait import wait_until

DASHBOARD = os.path.join(REPO, "deploy", "grafana", "dashboards", "training-overview.json")
DATASOURCES = os.path.join(REPO, "deploy", "grafana", "provisioning", "datasources", "trainwatch.yaml")
T0 = 1767225600.0  # the runs' first step
STEPS = 120
FROM_MS, TO_MS = int(T0 * 1000) - 60000, int(T0 * 1000) + STEPS * 1000 + 60000
NAN_STEP = 60
INTERVAL = "10s"  # what Grafana's $__interval is for this range on a ~900 px panel


def loss(run, step):
    return (1.0 if run == "r1" else 2.0) / (step + 1) + (5.0 if (run, step) == ("r1", 77) else 0.0)


@pytest.fixture(scope="module")
def populated(module_server):
    lines = []
    for run in ("r1", "r2"):
        for step in range(STEPS):
            metrics = {"loss": loss(run, step), "lr": 0.1 * 0.99 ** step, "grad_norm": 1.0 + step % 5}
            if step % 20 == 0:
                metrics["eval/accuracy"] = step / STEPS
            lines.append({"project": "default", "run": run, "step": step, "time": T0 + step, "metrics": metrics})
    # A non-finite value raises the built-in nan detector's alert: an annotation on the dashboard.
    lines.append({"project": "default", "run": "r1", "step": NAN_STEP, "time": T0 + NAN_STEP,
                  "metrics": {"probe": float("nan")}})
    module_server.write_ok(lines)
    lp = "".join("nvidia_smi,host=gpu1,index=%d utilization_gpu=%di %d\n" % (i, 50 + i * 10 + s % 3, int(T0 + s) * 10**9)
                 for s in range(0, STEPS, 5) for i in (0, 1))
    r = http("POST", module_server.url + "/write?db=default", lp, headers={"Content-Type": "text/plain"})
    assert r.status == 204, r
    return module_server


def query(server, q, epoch="ms"):
    r = http("GET", server.url + "/query?db=default&epoch=%s&q=%s" % (epoch, _quote(q)))
    assert r.status == 200, (q, r)
    (result,) = r.json()["results"]
    assert "error" not in result, (q, result)
    return result.get("series", [])


def _quote(q):
    from urllib.parse import quote
    return quote(q, safe="")


def expand(q, variables):
    """Grafana's expansion for an InfluxDB data source: $timeFilter, $__interval, and multi-value
    variables inside a regex as (a|b|...) of regex-escaped values."""
    q = q.replace("$timeFilter", "time >= %dms and time <= %dms" % (FROM_MS, TO_MS))
    q = q.replace("$__interval", INTERVAL)
    for name, values in variables.items():
        q = q.replace("$" + name, "(" + "|".join(re.escape(v) for v in values) + ")")
    assert not re.search(r"\$[A-Za-z_]", q), q  # every variable expanded (a regex may end in $)
    return q


def test_the_data_sources_point_at_both_apis():
    sources = {source["uid"]: source for source in yaml.safe_load(open(DATASOURCES))["datasources"]}
    assert sources["trainwatch-influx"]["type"] == "influxdb"
    assert sources["trainwatch-prometheus"]["type"] == "prometheus"
    assert sources["trainwatch-prometheus"]["url"].endswith("/prometheus")
    dashboard = json.load(open(DASHBOARD))
    kinds = set()
    for panel in dashboard["panels"]:
        source = sources[panel["datasource"]["uid"]]
        assert panel["datasource"]["type"] == source["type"], panel["title"]
        for target in panel["targets"]:
            assert ("expr" if source["type"] == "prometheus" else "query") in target, panel["title"]
        kinds.add(source["type"])
    assert kinds == {"influxdb", "prometheus"}


def prom_range(server, expr):
    """A Prometheus panel's query as Grafana sends it: query_range over the dashboard's range."""
    params = {"query": expr, "start": FROM_MS / 1000, "end": TO_MS / 1000, "step": 10}
    r = http("GET", server.url + "/prometheus/api/v1/query_range?" + urlencode(params))
    assert r.status == 200, (expr, r)
    body = r.json()
    assert body["status"] == "success" and body["data"]["resultType"] == "matrix", body
    return body["data"]["result"]


def test_every_variable_and_panel_answers(populated):
    dashboard = json.load(open(DASHBOARD))
    variables = {}
    for var in dashboard["templating"]["list"]:
        series = query(populated, var["query"])
        variables[var["name"]] = [value for s in series for _, value in s["values"]]
    assert variables == {"run": ["r1", "r2"], "host": ["gpu1"]}
    answers = {}
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            if "expr" in target:  # a Prometheus panel
                answers[panel["title"]] = prom_range(populated, expand(target["expr"], variables))
                assert answers[panel["title"]], (panel["title"], target["expr"])
                continue
            series = query(populated, expand(target["query"], variables))
            assert series, (panel["title"], target["query"])
            assert any(v[1] is not None for s in series for v in s["values"]), panel["title"]
            answers[panel["title"]] = series
    # The loss panel: one series per run, 10 s buckets of the mean, exactly.
    loss_panel = {s["tags"]["run"]: s["values"] for s in answers["Loss"]}
    assert sorted(loss_panel) == ["r1", "r2"]
    bucket = dict(loss_panel["r2"])
    first = int(T0) // 10 * 10 * 1000
    assert bucket[first] == pytest.approx(sum(loss("r2", s) for s in range(10)) / 10)
    # The max panel shows r1's one-step spike at step 77 that a mean would flatten.
    spike = dict({s["tags"]["run"]: s["values"] for s in answers["Loss (max per interval: spikes)"]}["r1"])
    assert spike[first + 70000] == pytest.approx(loss("r1", 77))
    # Evaluation, learning rate and gradient norm panels pick their metrics by name.
    assert {s["tags"]["metric_name"] for s in answers["Evaluation"]} == {"eval/accuracy"}
    assert {s["tags"]["metric_name"] for s in answers["Learning rate"]} == {"lr"}
    assert {s["tags"]["metric_name"] for s in answers["Gradient norm"]} == {"grad_norm"}
    gpus = {(s["tags"]["host"], s["tags"]["index"]) for s in answers["GPU utilisation (Telegraf nvidia_smi)"]}
    assert gpus == {("gpu1", "0"), ("gpu1", "1")}
    steps = dict({s["tags"]["run"]: s["values"] for s in answers["Steps"]}["r2"])
    assert max(v for v in steps.values() if v is not None) == STEPS - 1
    # The PromQL panel: each run's loss as the HighLoss rule sees it, the latest sample at each step.
    prom = {s["metric"]["run"]: dict(s["values"]) for s in answers["Loss (PromQL: the HighLoss rule's series)"]}
    assert sorted(prom) == ["r1", "r2"]
    assert float(prom["r2"][T0 + 10]) == pytest.approx(loss("r2", 10))
    assert float(prom["r1"][T0 + 80]) == pytest.approx(loss("r1", 80))


def test_alerts_are_the_dashboards_annotations(populated):
    wait_until(lambda: populated.get_json("/api/v1/alerts", {"project": "default", "kind": "nan"})["alerts"],
               "the nan alert")
    dashboard = json.load(open(DASHBOARD))
    (annotation,) = [a for a in dashboard["annotations"]["list"] if a["datasource"]["type"] == "influxdb"]
    assert annotation["datasource"]["uid"] == "trainwatch-influx" and annotation["enable"]
    for variables, runs in (({"run": ["r1", "r2"]}, {"r1"}), ({"run": ["r2"]}, set())):
        series = query(populated, expand(annotation["query"], variables))
        rows = [dict(zip(s["columns"], v)) for s in series for v in s["values"]]
        nan = [r for r in rows if r["kind"] == "nan"]
        assert {r["run"] for r in nan} == runs, rows
    series = query(populated, expand(annotation["query"], {"run": ["r1", "r2"]}))
    (s,) = series
    assert s["name"] == "trainwatch_alerts"
    # Every column the annotation maps is answered.
    for column in [annotation["textColumn"], annotation["titleColumn"], annotation["timeEndColumn"]] + \
            annotation["tagsColumn"].split(","):
        assert column in s["columns"], (column, s["columns"])
    (nan,) = [dict(zip(s["columns"], v)) for v in s["values"] if dict(zip(s["columns"], v))["kind"] == "nan"]
    assert nan["time"] == int((T0 + NAN_STEP) * 1000)  # at the step's time, on the panels' time axis
    assert nan["severity"] == "critical" and nan["run"] == "r1"
    assert "probe" in nan["text"] and nan["title"] == "nan on r1"
    assert nan["time_end"] is None  # still open
    # Outside the dashboard's time range there is nothing.
    assert query(populated, 'SELECT "text" FROM "trainwatch_alerts" WHERE time < %dms' % (T0 * 1000 - 1)) == []
    # Raw selects only: an aggregate is a clear error.
    r = http("GET", populated.url + "/query?db=default&q=" + _quote('SELECT count("value") FROM "trainwatch_alerts"'))
    assert "raw SELECTs only" in r.json()["results"][0]["error"]
