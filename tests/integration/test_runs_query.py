"""GET /api/v1/runs search, run metadata updates, and the ingest counters in /metrics."""
import json

import pytest

SERVER_ARGS = ()
P = "rq"
T0 = 1767225600


@pytest.fixture(scope="module")
def runs(module_server):
    s = module_server

    # Metadata through /runs/update ...
    def update(run, body, project=P):
        r = s.post("/api/v1/runs/update", json.dumps(body), params={"project": project, "run": run})
        assert r.status == 200, r
    s.write_ok([{"project": P, "run": "r_alpha", "step": 0, "time": T0 + 1, "metrics": {"loss": 0.9, "acc": 0.1}},
                {"project": P, "run": "r_alpha", "step": 10, "time": T0 + 2, "metrics": {"loss": 0.5, "acc": 0.4}}])
    update("r_alpha", {"name": "alpha-lr0.001", "tags": ["baseline", "gpu"], "group": "sweep1",
                       "config": {"lr": 0.001, "layers": 12, "optimizer": {"name": "adam", "betas": [0.9, 0.999]}}})
    # ... and through write lines.
    s.write_ok([{"project": P, "run": "r_beta", "name": "beta-lr0.01", "tags": ["gpu"], "status": "finished",
                 "config": {"lr": 0.01, "optimizer": {"name": "sgd"}}},
                {"project": P, "run": "r_beta", "step": 5, "time": T0 + 3, "metrics": {"loss": 0.3}}])
    s.write_ok([{"project": P, "run": "r_gamma", "name": "gamma", "status": "crashed", "config": {"lr": "0.001"},
                 "step": 7, "time": T0 + 4, "metrics": {"loss": 0.7, "acc": 0.2}},
                {"project": P, "run": "r_gamma", "step": 8, "time": T0 + 5, "metrics": {"loss": 0.95}}])
    s.write_ok([{"project": P, "run": "r_delta", "name": "delta-lr0.001", "step": 1, "time": T0 + 6,
                 "metrics": {"acc": 0.99}}])
    # Same names in another project must never show up in project-filtered searches.
    s.write_ok([{"project": "other", "run": "r_alpha", "name": "alpha-lr0.001", "tags": ["gpu"], "step": 1,
                 "time": T0 + 7, "metrics": {"loss": 0.01}}])
    return s


def search(server, expect=200, **params):
    q = [("project", P)] + [(k, v) for k, vs in params.items() for v in (vs if isinstance(vs, list) else [vs])]
    r = server.get("/api/v1/runs", q)
    assert r.status == expect, (params, r)
    return r.json()


def ids(body):
    return [run["id"] for run in body["runs"]]


def test_regex_on_display_name(runs):
    assert sorted(ids(search(runs, q=r"lr0\.001"))) == ["r_alpha", "r_delta"]
    assert ids(search(runs, q="^beta")) == ["r_beta"]
    assert sorted(ids(search(runs, q="a$"))) == ["r_gamma"]
    assert ids(search(runs, q="nothing-matches-this")) == []
    # The display name is searched, not the id.
    assert ids(search(runs, q="r_alpha")) == []


@pytest.mark.parametrize("regex", ["(", "[a-", "a{2,1}", "*x", "(?P<n>a"])
def test_invalid_regex_is_400_with_the_reason(runs, regex):
    body = search(runs, expect=400, q=regex)
    message = body["error"]
    assert "regular expression" in message and regex in message, message
    assert message.rstrip().split(":")[-1].strip(), message  # RE2's reason after the pattern


def test_tags_status_group_and_project(runs):
    assert sorted(ids(search(runs, tag="gpu"))) == ["r_alpha", "r_beta"]
    assert ids(search(runs, tag=["gpu", "baseline"])) == ["r_alpha"]
    assert ids(search(runs, tag="missing")) == []
    assert ids(search(runs, status="finished")) == ["r_beta"]
    assert ids(search(runs, status="crashed")) == ["r_gamma"]
    assert sorted(ids(search(runs, status="running"))) == ["r_alpha", "r_delta"]
    assert ids(search(runs, group="sweep1")) == ["r_alpha"]
    everywhere = runs.get_json("/api/v1/runs", {"q": "^alpha"})
    assert sorted((r["project"], r["id"]) for r in everywhere["runs"]) == [("other", "r_alpha"), (P, "r_alpha")]


def test_config_values(runs):
    # Numbers compare as numbers, strings as strings.
    assert sorted(ids(search(runs, **{"config.lr": "0.001"}))) == ["r_alpha", "r_gamma"]
    assert ids(search(runs, **{"config.lr": "1e-3"})) == ["r_alpha"]
    assert ids(search(runs, **{"config.lr": "0.01"})) == ["r_beta"]
    assert ids(search(runs, **{"config.layers": "12"})) == ["r_alpha"]
    # Nested paths.
    assert ids(search(runs, **{"config.optimizer.name": "adam"})) == ["r_alpha"]
    assert ids(search(runs, **{"config.optimizer.name": "sgd"})) == ["r_beta"]
    assert ids(search(runs, **{"config.optimizer.betas": "[0.9,0.999]"})) == ["r_alpha"]
    assert ids(search(runs, **{"config.optimizer.missing": "x"})) == []
    assert ids(search(runs, **{"config.lr.deeper": "1"})) == []
    # Several conditions all hold.
    assert ids(search(runs, **{"config.lr": "0.001", "config.optimizer.name": "adam", "tag": "gpu"})) == ["r_alpha"]
    assert ids(search(runs, **{"config.lr": "0.001", "status": "finished"})) == []


def test_sorting_and_paging(runs):
    by_name = search(runs, sort="name")
    assert [r["name"] for r in by_name["runs"]] == ["alpha-lr0.001", "beta-lr0.01", "delta-lr0.001", "gamma"]
    assert ids(search(runs, sort="-name")) == ["r_gamma", "r_delta", "r_beta", "r_alpha"]
    # By the latest value of a metric; runs without it go last, in either direction.
    assert ids(search(runs, sort="metric:loss")) == ["r_beta", "r_alpha", "r_gamma", "r_delta"]
    assert ids(search(runs, sort="-metric:loss")) == ["r_gamma", "r_alpha", "r_beta", "r_delta"]
    assert ids(search(runs, sort="-start_time")) == ["r_delta", "r_gamma", "r_beta", "r_alpha"]
    page = search(runs, sort="name", limit="2", offset="1")
    assert page["total"] == 4 and page["offset"] == 1 and page["limit"] == 2, page
    assert ids(page) == ["r_beta", "r_delta"]
    assert ids(search(runs, sort="name", limit="10", offset="3")) == ["r_gamma"]
    assert ids(search(runs, sort="name", offset="10")) == [] and search(runs, offset="10")["total"] == 4
    assert ids(search(runs, sort="name", limit="0")) == []
    for bad in ({"sort": "colour"}, {"limit": "-1"}, {"limit": "x"}, {"offset": "-2"}):
        assert "error" in search(runs, expect=400, **bad)


def test_latest_values(runs):
    body = search(runs, sort="name", latest="loss,acc")
    latest = {r["id"]: r["latest"] for r in body["runs"]}
    assert latest["r_alpha"] == {"loss": {"step": 10, "value": 0.5},
                                 "acc": {"step": 10, "value": 0.4}}
    assert latest["r_beta"] == {"loss": {"step": 5, "value": 0.3}}
    assert latest["r_gamma"] == {"loss": {"step": 8, "value": 0.95},
                                 "acc": {"step": 7, "value": 0.2}}
    assert latest["r_delta"] == {"acc": {"step": 1, "value": 0.99}}
    assert all(r["latest"] == {} for r in search(runs)["runs"])


def test_run_metadata_update(runs):
    s = runs
    run = s.get_json("/api/v1/run", {"project": P, "run": "r_alpha"})
    assert run["name"] == "alpha-lr0.001" and run["group"] == "sweep1" and run["status"] == "running"
    assert sorted(run["tags"]) == ["baseline", "gpu"]
    assert run["start_time"] == T0 + 1 and run["last_write_time"] == T0 + 2
    assert sorted(m["name"] for m in run["metrics"]) == ["acc", "loss"]

    def update(body, expect=200, run="r_update", project=P):
        r = s.post("/api/v1/runs/update", json.dumps(body) if not isinstance(body, str) else body,
                   params={"project": project, "run": run})
        assert r.status == expect, (body, r)
        return r.json()

    s.write_ok([{"project": P, "run": "r_update", "step": 1, "time": T0 + 10, "metrics": {"loss": 1}}])
    update({"name": "upd", "tags": ["a", "b"], "host": "node7", "status": "running",
            "config": {"opt": {"name": "adam", "lr": 0.1}, "seed": 1}})
    update({"tags": ["c"], "config": {"opt": {"lr": 0.2}}, "status": "finished", "end_time": T0 + 99})
    info = s.get_json("/api/v1/run", {"project": P, "run": "r_update"})
    assert info["name"] == "upd" and info["host"] == "node7" and info["status"] == "finished"
    assert info["end_time"] == T0 + 99
    assert sorted(info["tags"]) == ["a", "b", "c"]  # tags add up ...
    assert info["config"] == {"opt": {"name": "adam", "lr": 0.2}, "seed": 1}  # ... and config merges deeply
    update({"tags": ["only"], "replace_tags": True})
    assert s.get_json("/api/v1/run", {"project": P, "run": "r_update"})["tags"] == ["only"]

    for bad in ({"colour": "red"}, {"status": "sleeping"}, {"name": 5}, {"tags": "x"}, {"config": [1]},
                {"start_time": "yesterday"}, "not json", "[1,2]"):
        body = update(bad, expect=400)
        assert body.get("error") or body.get("errors"), (bad, body)
    r = s.post("/api/v1/runs/update", "{}", params={"project": P})
    assert r.status == 400 and "run" in r.json()["error"], r
    after = s.get_json("/api/v1/run", {"project": P, "run": "r_update"})
    assert after["status"] == "finished" and after["tags"] == ["only"] and after["name"] == "upd"

    # Metadata survives a restart.
    s.restart()
    again = s.get_json("/api/v1/run", {"project": P, "run": "r_update"})
    assert {k: again[k] for k in ("name", "host", "status", "tags", "config", "end_time")} == \
        {k: after[k] for k in ("name", "host", "status", "tags", "config", "end_time")}
    assert sorted(ids(search(s, q=r"lr0\.001"))) == ["r_alpha", "r_delta"]
    assert ids(search(s, **{"config.optimizer.name": "adam"})) == ["r_alpha"]


def test_unknown_run_is_404(runs):
    r = runs.get("/api/v1/run", {"project": P, "run": "no-such-run"})
    assert r.status == 404 and "no-such-run" in r.json()["error"], r
    assert runs.get("/api/v1/run", {"project": P}).status == 400
    assert runs.get("/api/v1/metrics", {"project": P, "run": "no-such-run"}).status == 404
    assert runs.get("/api/v1/export", {"project": P, "run": "no-such-run"}).status == 404


def test_ingest_counters_move(runs):
    s = runs
    points = s.metric_value("trainwatch_ingested_points_total")
    rejected = s.metric_value("trainwatch_rejected_lines_total")
    text = s.get("/metrics").text
    assert "# TYPE trainwatch_ingested_points_total counter" in text, text[:500]
    s.write_ok([{"project": P, "run": "counted", "step": i, "metrics": {"a": i, "b": -i}} for i in range(5)])
    assert s.metric_value("trainwatch_ingested_points_total") == points + 10
    assert s.metric_value("trainwatch_rejected_lines_total") == rejected
    r = s.write('{"project":"rq","run":"counted","step":9,"metrics":{"a":1}}\nbad\n{"run":1}\n')
    assert r.status == 400
    assert s.metric_value("trainwatch_ingested_points_total") == points + 11
    assert s.metric_value("trainwatch_rejected_lines_total") == rejected + 2
