"""Automatic reports (docs/reports.md, "Automatic reports") on the real binary: a project named in the
alerting file's `reports:` section gets its run's report stored when the run finishes or crashes, served
at GET /api/v1/report/stored, and a `run_report` notification linking it reaches a real webhook receiver
(receivers.py); a project not named gets none; the stored report survives a restart; a distributed run
gets one report, once every rank has finished."""
import html as htmllib
import json
import math
import os

import jsonschema
import pytest

from conftest import REPO
from harness import ingest_pb
from receivers import HttpReceiver

EXTERNAL_URL = "http://tw.example:8080"
T0 = 1767225600.0
WAIT = 20.0


@pytest.fixture
def hook():
    r = HttpReceiver("hook").start()
    yield r
    print("--- receiver hook\n%s" % r.log())
    r.close()


@pytest.fixture(scope="module")
def pb():
    return ingest_pb.load()


def alerting_yaml(hook, reports):
    return ("receivers:\n"
            "  - name: hook\n"
            "    webhook: {url: \"%s/hook\"}\n"
            "routes:\n"
            "  - {receiver: hook}\n"
            "reports:\n%s" % (hook.url, reports))


def start(server_factory, tmp_path, hook,
          reports="  - {projects: [\"auto-*\"], statuses: [finished, crashed]}\n"):
    path = tmp_path / "alerting.yml"
    path.write_text(alerting_yaml(hook, reports))
    return server_factory("--alerting", str(path), "--external-url", EXTERNAL_URL)


def training(project, run, steps=200, status="finished", name=None):
    """A run's records: a falling loss and an accuracy, `status` on the last line."""
    lines = []
    for step in range(steps):
        line = {"project": project, "run": run, "step": step, "time": T0 + 0.1 * step,
                "metrics": {"loss": round(2.0 * math.exp(-step / 80.0) + 0.1, 6),
                            "accuracy": round(min(0.99, 0.3 + step / 300.0), 6)}}
        if step == 0:
            line.update({"name": name or run, "config": {"optim": {"lr": 0.01}}})
        if step == steps - 1 and status:
            line["status"] = status
        lines.append(line)
    return lines


def report_bodies(hook, **fields):
    out = []
    for r in hook.received("/hook"):
        body = r.json()
        if body.get("kind") == "run_report" and all(body.get(k) == v for k, v in fields.items()):
            out.append(body)
    return out


def wait_report_notification(hook, project, run):
    return hook.wait_json(lambda b: b.get("kind") == "run_report" and b.get("project") == project
                          and b.get("run") == run, timeout=WAIT,
                          what="a run_report notification for %s/%s" % (project, run), path="/hook").json()


def stored(server, project, run):
    return server.get("/api/v1/report/stored", {"project": project, "run": run})


def stored_info(server, project, run, expect=200):
    info = server.get_json("/api/v1/report/stored/info", {"project": project, "run": run}, expect=expect)
    with open(os.path.join(REPO, "schema", "api.schema.json")) as f:
        schema = json.load(f)
    sub = {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": "#/$defs/StoredReport"}
    jsonschema.Draft202012Validator(sub).validate(info)  # the schema the dashboard's types come from
    return info


def stored_url(project, run):
    return "%s/api/v1/report/stored?project=%s&run=%s" % (EXTERNAL_URL, project, run)


def check_report_html(text, project, run, name, status, metrics=("loss", "accuracy")):
    assert text.startswith("<!DOCTYPE html>"), text[:200]
    assert "<title>Training report: %s/%s" % (htmllib.escape(project), htmllib.escape(name)) in text, text[:600]
    for section in ("summary", "charts", "alerts", "config", "system"):
        assert 'data-section="%s"' % section in text, section
    assert ">%s<" % status in text, "the summary does not say the run is %s" % status
    for metric in metrics:
        assert ">%s<" % metric in text, "no row of %s in the report" % metric


def heartbeat(server, pb, project, run, interval=0.5, step=None):
    req = pb.WriteRequest()
    batch = req.runs.add(project=project, run=run)
    batch.heartbeat.interval_seconds = interval
    if step is not None:
        batch.steps.append(step)
        batch.times.append(T0 + step)
        batch.metrics.add(name="loss", values=[1.0 / (step + 1)])
    r = ingest_pb.post(server, req)
    assert r.status == 200 and r.json()["errors"] == [], r


def test_finished_run_gets_a_stored_report_linked_in_its_notification(server_factory, tmp_path, hook):
    server = start(server_factory, tmp_path, hook)
    # A project no entry names ends first: had it been queued, its report would come before the
    # next one (one worker, in order).
    server.write_ok(training("other", "r-other"))
    server.write_ok(training("auto-a", "r1", name="first run"))
    body = wait_report_notification(hook, "auto-a", "r1")
    assert body["status"] == "firing" and body["severity"] == "info", body
    assert body["name"] == "run_report" and body["labels"] == {"run_status": "finished"}, body
    assert body["report_url"] == stored_url("auto-a", "r1"), body
    assert body["report_url"] in body["message"], body
    assert body["chart_url"] == EXTERNAL_URL + "/#/runs/auto-a/r1", body
    assert body["idempotency_key"].endswith("-firing"), body

    r = stored(server, "auto-a", "r1")
    assert r.status == 200, r
    assert r.headers["Content-Type"] == "text/html; charset=utf-8", r.headers
    text = r.body.decode()
    check_report_html(text, "auto-a", "r1", "first run (r1)", "finished")
    info = stored_info(server, "auto-a", "r1")
    assert info["stored"] and info["status"] == "finished" and info["bytes"] == len(r.body), info
    assert info["run_end_time"] == server.get_json("/api/v1/run", {"project": "auto-a", "run": "r1"})["end_time"]

    # The project that is not configured: no report, no notification.
    missing = stored(server, "other", "r-other")
    assert missing.status == 404, missing
    assert json.loads(missing.body)["error"] == "no stored report for run 'r-other' in project 'other'"
    assert stored_info(server, "other", "r-other") == {"project": "other", "run": "r-other", "stored": False}
    assert report_bodies(hook, project="other") == []
    # An unknown run is the run's 404, on both routes.
    assert stored(server, "auto-a", "nope").status == 404
    assert json.loads(stored(server, "auto-a", "nope").body)["error"] == "no run 'nope' in project 'auto-a'"
    info_missing = server.get("/api/v1/report/stored/info", {"project": "auto-a", "run": "nope"})
    assert info_missing.status == 404, info_missing
    assert stored(server, "auto-a", "").status == 400

    # The stored report survives a restart, byte for byte, and is not made again.
    server.restart()
    again = stored(server, "auto-a", "r1")
    assert again.status == 200 and again.body == r.body
    assert stored_info(server, "auto-a", "r1") == info
    assert len(report_bodies(hook, project="auto-a", run="r1")) == 1


def test_crashed_run_gets_a_report_and_a_warning(server_factory, tmp_path, hook, pb):
    server = start(server_factory, tmp_path, hook)
    for step in range(5):
        heartbeat(server, pb, "auto-b", "silent", step=step)
    # Silent from here: the liveness monitor declares the run crashed after 3 x 0.5 s.
    body = wait_report_notification(hook, "auto-b", "silent")
    assert body["severity"] == "warning" and body["labels"] == {"run_status": "crashed"}, body
    assert body["report_url"] == stored_url("auto-b", "silent"), body
    run = server.get_json("/api/v1/run", {"project": "auto-b", "run": "silent"})
    assert run["status"] == "crashed", run
    info = stored_info(server, "auto-b", "silent")
    assert info["status"] == "crashed" and info["run_end_time"] == run["end_time"], info
    r = stored(server, "auto-b", "silent")
    assert r.status == 200
    check_report_html(r.body.decode(), "auto-b", "silent", "silent", "crashed", metrics=("loss",))


def test_statuses_filter_and_a_reload_turns_reports_on(server_factory, tmp_path, hook):
    # Only crashed runs of auto-c get reports: a finished one does not.
    server = start(server_factory, tmp_path, hook,
                   reports="  - {projects: [auto-c], statuses: [crashed]}\n"
                           "  - {projects: [auto-d]}\n")
    server.write_ok(training("auto-c", "fin"))
    server.write_ok(training("auto-d", "marker"))  # ends after: its report comes after fin's would
    wait_report_notification(hook, "auto-d", "marker")
    assert stored(server, "auto-c", "fin").status == 404
    assert report_bodies(hook, project="auto-c") == []
    # A reload that names auto-c for finished runs: the next run to finish gets one.
    (tmp_path / "alerting.yml").write_text(alerting_yaml(hook, "  - {projects: [auto-c]}\n"))
    r = server.post("/api/v1/rules/reload", b"")
    assert r.status == 200, r
    server.write_ok(training("auto-c", "fin2"))
    wait_report_notification(hook, "auto-c", "fin2")
    assert stored(server, "auto-c", "fin2").status == 200
    assert stored(server, "auto-c", "fin").status == 404


def test_invalid_reports_section_refuses_to_start(server_factory, tmp_path, hook):
    path = tmp_path / "alerting.yml"
    path.write_text(alerting_yaml(hook, "  - {projects: [a], statuses: [done]}\n"))
    server = server_factory("--alerting", str(path), start=False)
    rc = server.spawn().wait(timeout=30)  # hang guard only
    assert rc != 0
    err = server.stderr_text()
    assert "%s:7: reports[0].statuses: unknown status 'done' (finished or crashed)" % path in err, err


def test_distributed_run_gets_one_report_once_every_rank_finished(server_factory, tmp_path, hook):
    server = start(server_factory, tmp_path, hook)

    def rank_lines(rank, status=None):
        lines = []
        for step in range(50):
            line = {"project": "auto-e", "run": "ddp", "rank": rank, "world_size": 2, "step": step,
                    "time": T0 + step, "metrics": {"loss": 1.0 / (step + 1)}}
            if step == 49 and status:
                line["status"] = status
            lines.append(line)
        return lines
    server.write_ok(rank_lines(0) + rank_lines(1))
    server.write_ok([{"project": "auto-e", "run": "ddp", "rank": 0, "world_size": 2, "step": 50,
                      "time": T0 + 50, "metrics": {"loss": 0.01}, "status": "finished"}])
    assert server.get_json("/api/v1/run", {"project": "auto-e", "run": "ddp"})["status"] == "running"
    server.write_ok([{"project": "auto-e", "run": "ddp", "rank": 1, "world_size": 2, "step": 50,
                      "time": T0 + 50, "metrics": {"loss": 0.01}, "status": "finished"}])
    wait_report_notification(hook, "auto-e", "ddp")
    # A marker run ending after it: any second report of ddp would come before the marker's.
    server.write_ok(training("auto-e", "marker"))
    wait_report_notification(hook, "auto-e", "marker")
    assert len(report_bodies(hook, project="auto-e", run="ddp")) == 1
    text = stored(server, "auto-e", "ddp").body.decode()
    assert 'data-section="ranks"' in text
