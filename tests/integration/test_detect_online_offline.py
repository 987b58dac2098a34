"""One detection path online and offline: the real training logs of the anomaly kit, written to a real
server through /api/v1/write, raise the same (run, kind, step) incidents as `trainwatch detect` on the
same lines; and the offline command refuses what /write refuses, naming the line.
"""
import json
import os
import subprocess

import pytest
import websocket

from conftest import BIN, REPO, loads

WAIT = 120.0


def real_kit():
    """The real-log kit: the shared copy beside the checkout, else the snapshot the build extracted."""
    candidates = [os.path.join(REPO, "..", "shared", "anomaly-real-dev"),
                  os.path.join(os.path.dirname(os.path.dirname(BIN)), "anomaly-real-dev")]
    for c in candidates:
        if os.path.isfile(os.path.join(c, "labels.json")):
            return os.path.join(c, "runs")
    pytest.fail("no real-log kit at %s" % " or ".join(candidates))


def offline_incidents(files):
    """(run, kind, step) of every incident start `trainwatch detect --resolved` reports."""
    out = subprocess.run([BIN, "detect", "--resolved"] + files, stdout=subprocess.PIPE, check=True,
                         universal_newlines=True).stdout
    open_kinds, starts = set(), set()
    for line in out.splitlines():
        a = json.loads(line)
        key = (a["run"], a["kind"])
        if a.get("state") == "resolved":
            open_kinds.discard(key)
        elif key not in open_kinds:
            open_kinds.add(key)
            starts.add((a["run"], a["kind"], a["step"]))
    return starts


def listed_alerts(server):
    return server.get_json("/api/v1/alerts", {"project": "default", "limit": 10000})["alerts"]


def online_alerts(server):
    return {(a["run"], a["kind"], a["step"]) for a in listed_alerts(server)}


def test_real_logs_raise_the_same_incidents_online_and_offline(server_factory):
    runs = real_kit()
    files = sorted(os.path.join(runs, f) for f in os.listdir(runs) if f.endswith(".jsonl"))
    expected = offline_incidents(files)
    assert len(expected) > 30, expected  # the kit's anomalies are there to be found

    # Cooldown 0: every incident start is its own alert, as the offline command prints it.
    server = server_factory("--alert-cooldown", "0s")
    records = 0
    for path in files:
        with open(path, "rb") as f:
            body = f.read()
        records += body.count(b"\n")
        ack = server.write_ok(body)
        assert not ack.get("errors"), (path, ack)

    # A barrier: detection and the alert store take writes in order, so once the live channel
    # pushes the nan of a run written last, every alert of the kit's runs is stored too.
    ws = websocket.create_connection(server.ws_url + "/api/v1/live", timeout=WAIT)
    ws.send(json.dumps({"subscribe": {"project": "default", "runs": ["zz-barrier"]}}))
    assert loads(ws.recv()) == {"type": "subscribed"}
    server.write_ok([{"run": "zz-barrier", "step": 0, "time": 1767225600, "metrics": {"loss": float("nan")}}])
    while True:
        message = loads(ws.recv())  # times out (and fails) after WAIT without one
        if message["type"] == "alert" and message["alert"]["kind"] == "nan":
            break
    ws.close()
    assert server.metric_value("trainwatch_detector_records_total") == records + 1
    got = {a for a in online_alerts(server) if a[0] != "zz-barrier"}
    assert got == expected, ("only online: %s\nonly offline: %s" % (sorted(got - expected), sorted(expected - got)))

    # Alerts explain themselves: what was judged, against what, the ratio and how many records.
    explosions = [a for a in listed_alerts(server) if a["kind"] == "grad_explosion"]
    assert explosions
    for a in explosions:
        notes = a["annotations"]
        observed, baseline, ratio = (float(notes[k]) for k in ("observed", "baseline", "ratio"))
        assert ratio == pytest.approx(observed / baseline, rel=1e-3), notes
        assert ratio >= 10 and int(notes["judged_on_records"]) >= 2, notes
        assert "median" in a["message"] or "baseline" in a["message"], a["message"]


def test_offline_refuses_what_write_refuses_and_keeps_the_rest(server, tmp_path):
    lines = [
        '{"run": "r", "step": 0, "time": 1767225600, "metrics": {"loss": 1.0}}',
        '{"run": "r", "step": "one", "metrics": {"loss": 1.0}}',  # a step must be an integer
        '{"run": "r", "step": 1, "time": 1767225601, "metrics": {"loss": NaN}}',
    ]
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(lines) + "\n")
    offline = subprocess.run([BIN, "detect", str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             universal_newlines=True)
    assert offline.returncode == 1
    assert "mixed.jsonl:2:" in offline.stderr and "step" in offline.stderr, offline.stderr
    kinds = [json.loads(l)["kind"] for l in offline.stdout.splitlines()]
    assert kinds == ["nan"], offline.stdout

    online = server.write("\n".join(lines) + "\n").json()
    assert [e["line"] for e in online["errors"]] == [2], online
    assert "step" in online["errors"][0]["error"] and "step" in offline.stderr, (online, offline.stderr)


def test_offline_never_reports_stalled_at_the_end_of_a_finished_file(tmp_path):
    path = tmp_path / "short.jsonl"
    path.write_text("".join(json.dumps({"run": "r", "step": s, "time": 1767225600 + s, "metrics": {"loss": 1.0}}) + "\n"
                            for s in range(100)))
    out = subprocess.run([BIN, "detect", str(path)], stdout=subprocess.PIPE, check=True,
                         universal_newlines=True).stdout
    assert out == ""
