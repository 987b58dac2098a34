"""Heartbeats and crash detection on the real binary: a run that stops sending heartbeats is marked
`crashed` (durably, through the write-ahead log); a heartbeat brings it back; finished runs and runs
written without heartbeats are left alone."""
import time

import pytest

from harness import ingest_pb, wait_until

T0 = 1767225600.0


@pytest.fixture(scope="module")
def pb():
    return ingest_pb.load()


def heartbeat(server, pb, run, interval=0.5, project="live", status=None, step=None):
    req = pb.WriteRequest()
    batch = req.runs.add(project=project, run=run)
    batch.heartbeat.interval_seconds = interval
    if status:
        batch.metadata.status = status
    if step is not None:
        batch.steps.append(step)
        batch.metrics.add(name="loss", values=[1.0])
    r = ingest_pb.post(server, req)
    assert r.status == 200 and r.json()["errors"] == [], r
    return r


def run_info(server, run, project="live"):
    return server.get_json("/api/v1/run", {"project": project, "run": run})


def wait_for_status(server, run, status, seconds):
    """The run's info once its status is `status` (`seconds` only guards against a hang)."""
    def reached():
        info = run_info(server, run)
        return info if info["status"] == status else None

    return wait_until(reached, "run %s to be %s" % (run, status), timeout=seconds)


def test_silent_run_turns_crashed_and_a_heartbeat_revives_it(server, pb):
    before = time.time()
    heartbeat(server, pb, "r", step=1)
    heartbeat(server, pb, "r")
    info = run_info(server, "r")
    assert info["status"] == "running" and info["heartbeat_interval"] == 0.5, info
    assert before - 1 <= info["last_heartbeat"] <= time.time() + 1, info
    last = info["last_heartbeat"]
    # Silent from here: crashed after 3 x 0.5 s (the monitor sweeps about once a second).
    info = wait_for_status(server, "r", "crashed", 6)
    # sleep-ok: a lower bound on the server's real-time threshold (3 x 0.5 s); a slow machine cannot fail it
    assert time.time() - last >= 1.5
    assert info["end_time"] == last, info
    # Still alive after all (a long network partition): running again, no end time.
    heartbeat(server, pb, "r")
    info = run_info(server, "r")
    assert info["status"] == "running" and info["end_time"] == 0, info
    assert info["last_heartbeat"] > last
    # The crash is a write like any other: it survives a kill -9.
    wait_for_status(server, "r", "crashed", 6)
    server.restart(kill=True)
    info = run_info(server, "r")
    assert info["status"] == "crashed", info
    assert "liveness: run stopped sending heartbeats" in server.stderr_text(-2)


def test_finished_and_heartbeatless_runs_are_never_crashed(server, pb):
    heartbeat(server, pb, "done")
    heartbeat(server, pb, "done", status="finished")
    server.write_ok([{"project": "live", "run": "plain", "step": 1, "metrics": {"loss": 0.5}}])
    heartbeat(server, pb, "beating")
    # A silent run with the same interval, last heard after the others: the sweep that declares it
    # crashed has looked at "done" and "plain" too, which would have been overdue before it.
    heartbeat(server, pb, "control")

    def control_crashed():
        heartbeat(server, pb, "beating")  # keeps beating: stays running
        return run_info(server, "control")["status"] == "crashed"
    wait_until(control_crashed, "the silent control run to be declared crashed", timeout=30)
    assert run_info(server, "done")["status"] == "finished"
    assert run_info(server, "plain")["status"] == "running"
    assert run_info(server, "plain")["heartbeat_interval"] == 0
    assert run_info(server, "beating")["status"] == "running"
    # A heartbeat for a finished run changes nothing.
    heartbeat(server, pb, "done")
    info = run_info(server, "done")
    assert info["status"] == "finished", info


def test_restart_gives_a_fresh_grace_period(server, server_factory, pb):
    # A witness server keeps the time while "server" is down, by the same rule: its run "w", with
    # the same 1 s interval and heard after "r", is declared crashed only once it has been silent
    # for longer than 3 x 1 s; "r" has then been silent longer still.
    witness = server_factory()
    heartbeat(server, pb, "r", interval=1)
    heartbeat(witness, pb, "w", interval=1)
    server.terminate()
    wait_for_status(witness, "w", "crashed", 30)  # "r" is overdue by now, while the server is down
    witness.stop()
    server.start()
    assert run_info(server, "r")["status"] == "running"
    # A control run silent from now on, overdue after 3 x 0.2 s: the sweep that declares it crashed
    # would have declared "r" (overdue since before the restart) too, were there no grace period.
    heartbeat(server, pb, "control", interval=0.2)

    def statuses_once_control_crashed():
        body = server.get_json("/api/v1/runs", {"project": "live"})
        seen = {run["id"]: run["status"] for run in body["runs"]}
        return seen if seen["control"] == "crashed" else None
    seen = wait_until(statuses_once_control_crashed, "the silent control run to be declared crashed", timeout=30)
    assert seen["r"] == "running", seen  # one listing: the same sweep saw both
    wait_for_status(server, "r", "crashed", 8)


def test_heartbeat_interval_is_validated(server, pb):
    for bad in (0.0, -1.0, float("nan"), 3601.0):
        req = pb.WriteRequest()
        req.runs.add(project="live", run="bad").heartbeat.interval_seconds = bad
        r = ingest_pb.post(server, req)
        assert r.status == 400, (bad, r)
        assert "heartbeat.interval_seconds must be in (0, 3600]" in r.json()["errors"][0]["error"], r
    assert server.get("/api/v1/run", {"project": "live", "run": "bad"}).status == 404
