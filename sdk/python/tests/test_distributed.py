"""A real torch.distributed job (ddp_job.py: 4 ranks, gloo on the CPU, torch.multiprocessing.spawn,
a small MLP under DistributedDataParallel, trainwatch and tw.watch in every rank) against a real
server: one run with 4 ranks, and the failures of issue 16 caught as alerts naming the rank."""
import glob
import json
import os
import signal
import socket
import subprocess
import sys

import pytest

from harness import wait_until

JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ddp_job.py")
WORLD = 4
NEW_KINDS = ("straggler", "rank_desync", "rank_dead", "collective_hang")
JOB_GUARD = 300  # seconds: only guards against a hung job


class Job:
    """ddp_job.py in a session of its own, so that the test can end every rank it started."""

    def __init__(self, server, tmp_path, *flags, project="ddp", world=WORLD):
        self.out = str(tmp_path / "job")
        self.project = project
        self.log_path = str(tmp_path / "job.log")
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [sys.executable, JOB, "--server", server.url, "--project", project, "--world", str(world),
             "--out", self.out] + [str(f) for f in flags],
            stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)

    def wait(self):
        try:
            code = self.proc.wait(timeout=JOB_GUARD)
        finally:
            self._log.close()
        assert code == 0, "the job failed:\n" + self.log()
        return self.results()

    def results(self):
        results = {}
        for path in glob.glob(os.path.join(self.out, "rank*.json")):
            with open(path) as f:
                r = json.load(f)
            results[r["rank"]] = r
        return results

    def log(self):
        with open(self.log_path) as f:
            return f.read()[-6000:]

    def kill(self):
        """Ends the job: its parent and every rank (one process group, the job's own)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self._log.close()


@pytest.fixture
def jobs():
    started = []
    yield started
    for job in started:
        job.kill()


def runs(server, project):
    body = server.get_json("/api/v1/runs", {"project": project})
    return body["runs"] if isinstance(body, dict) else body


def the_run(server, project):
    listed = runs(server, project)
    assert len(listed) == 1, listed
    return listed[0]["id"]


def alerts(server, project, run_id):
    return server.get_json("/api/v1/alerts", {"project": project, "run": run_id})["alerts"]


def wait_alert(server, project, run_id, kind):
    """The first alert of `kind` on the run once one is there (polled: harness.wait_until)."""
    listed = []

    def found():
        listed[:] = alerts(server, project, run_id)
        return next((a for a in listed if a.get("kind") == kind), None)
    try:
        return wait_until(found, "a %s alert on %s" % (kind, run_id))
    except AssertionError:
        raise AssertionError("no %s alert; listed: %s" % (kind, json.dumps(listed)[:3000]))


def rank_points(server, project, run_id, metric, rank):
    r = server.get("/api/v1/series", {"project": project, "run": run_id, "metric": metric,
                                      "rank": rank})
    assert r.status == 200, r
    series = r.json()["series"]
    return series[0]["points"] if series and "points" in series[0] else []


def test_a_healthy_ddp_job_is_one_run_with_four_ranks_and_raises_no_rank_alert(server, jobs, tmp_path):
    job = Job(server, tmp_path, "--steps", 40, "--system-metrics", 0.1)
    jobs.append(job)
    results = job.wait()
    assert sorted(results) == list(range(WORLD)), job.log()
    ids = {r["run"] for r in results.values()}
    assert len(ids) == 1, ids  # every rank joined one run
    run_id = ids.pop()
    assert run_id.startswith("ddp-")  # published by rank 0 through the process group's store
    host = socket.gethostname()
    for rank, r in results.items():
        assert r["steps"] == 40
        assert r["rank_info"] == {"rank": rank, "world_size": WORLD, "local_rank": rank, "host": host,
                                  "gpu_index": rank}
        assert r["stats"]["points_dropped"] == 0

    assert the_run(server, "ddp") == run_id
    info = server.run_info("ddp", run_id)
    assert info["name"] == "ddp" and info["config"]["world"] == WORLD  # rank 0's metadata
    names = server.metric_names("ddp", run_id)
    for name in ("loss", "grad_norm", "dist/step_time", "dist/time_to_collective"):
        assert names.count(name) == 1, names  # one name whatever the number of ranks

    table = server.get_json("/api/v1/ranks", {"project": "ddp", "run": run_id})
    ranks = table["ranks"] if isinstance(table, dict) else table
    assert sorted(r["rank"] for r in ranks) == list(range(WORLD)), ranks
    for r in ranks:
        assert r["host"] == host and r["local_rank"] == r["rank"], r
        assert r["last_step"] == 39 and r["status"] == "finished" and r["world_size"] == WORLD, r
    for rank in range(WORLD):
        steps = [p[0] for p in rank_points(server, "ddp", run_id, "dist/time_to_collective", rank)]
        assert steps == list(range(40)), (rank, steps)  # every step of every rank
        assert len(rank_points(server, "ddp", run_id, "loss", rank)) == 40
        # the machine's series from local rank 0 only; each rank its own process's
        assert bool(rank_points(server, "ddp", run_id, "system/memory_percent", rank)) == (rank == 0)
        assert rank_points(server, "ddp", run_id, "system/process_rss_bytes", rank)

    # Detection has seen the whole job once it has seen a later write: a NaN in another run.
    server.write_ok([json.dumps({"project": "sentinel", "run": "sentinel", "step": 0, "metrics": {"x": 1}}),
                     '{"project": "sentinel", "run": "sentinel", "step": 1, "metrics": {"x": NaN}}'])
    wait_alert(server, "sentinel", "sentinel", "nan")
    kinds = [(a["kind"], a.get("rank")) for a in alerts(server, "ddp", run_id)]
    assert not [k for k in kinds if k[0] in NEW_KINDS], kinds


def test_watch_wraps_the_jobs_own_communication_hook(server, jobs, tmp_path):
    job = Job(server, tmp_path, "--steps", 10, "--comm-hook", "fp16", project="hook", world=2)
    jobs.append(job)
    results = job.wait()
    run_id = results[0]["run"]
    assert all(not r["watch_warnings"] for r in results.values()), results
    assert "dist/time_to_collective" in server.metric_names("hook", run_id)


def test_a_hook_registered_before_watch_switches_the_timing_off_with_a_warning(server, jobs, tmp_path):
    job = Job(server, tmp_path, "--steps", 10, "--comm-hook", "registered", project="hook", world=2)
    jobs.append(job)
    results = job.wait()  # trains on: only the timing is off
    run_id = results[0]["run"]
    for r in results.values():
        assert len(r["watch_warnings"]) == 1 and "watch(comm_hook=...)" in r["watch_warnings"][0], r
    names = server.metric_names("hook", run_id)
    assert "grad_norm" in names and "dist/time_to_collective" not in names, names


# -- the failures of issue 16, caught as alerts naming the rank ------------------------------------

SLOW_FROM = 30


def test_a_slow_data_loader_in_rank_2_raises_straggler_naming_it(server, jobs, tmp_path):
    job = Job(server, tmp_path, "--steps", SLOW_FROM + 30, "--slow-rank", 2, "--slow-from", SLOW_FROM,
              "--slow-work", 8)
    jobs.append(job)
    results = job.wait()
    run_id = results[0]["run"]
    alert = wait_alert(server, "ddp", run_id, "straggler")
    assert alert["rank"] == 2 and alert["host"] == socket.gethostname(), alert
    assert SLOW_FROM <= alert["step"] < SLOW_FROM + 20, alert
    # nothing before the fault, and no other rank
    stragglers = [a for a in alerts(server, "ddp", run_id) if a["kind"] == "straggler"]
    assert all(a["rank"] == 2 and a["step"] >= SLOW_FROM for a in stragglers), stragglers


def test_sigkill_of_rank_3_raises_rank_dead_and_the_others_hang(server_factory, jobs, tmp_path):
    # rank_dead after 3 heartbeat intervals (the job's: 0.5 s); collective_hang after hang_floor
    # (default 120 s, here 3 s) once the live ranks stop at one step.
    rules = tmp_path / "alerting.yml"
    rules.write_text("detectors:\n  collective_hang: {hang_floor: 3s}\n")
    server = server_factory("--alerting", str(rules))
    job = Job(server, tmp_path, "--steps", 100000, "--kill-rank", 3, "--kill-step", 20)
    jobs.append(job)
    run_id = wait_until(lambda: len(runs(server, "ddp")) == 1 and the_run(server, "ddp"), "the run")
    dead = wait_alert(server, "ddp", run_id, "rank_dead")
    assert dead["rank"] == 3 and dead["host"] == socket.gethostname(), dead
    hang = wait_alert(server, "ddp", run_id, "collective_hang")
    assert hang["labels"].get("caused_by") == "rank_dead" and hang["labels"].get("cause_rank") == "3", hang
    assert job.proc.poll() is None  # the other ranks are still there, blocked in the collective
    # no other rank is called dead: their heartbeats go on
    assert all(a["rank"] == 3 for a in alerts(server, "ddp", run_id) if a["kind"] == "rank_dead")


def test_a_nan_in_rank_1s_loss_raises_nan_on_rank_1(server, jobs, tmp_path):
    # Without gradient norms: DDP averages rank 1's NaN gradient into every rank's at the same step,
    # so grad_norm cannot tell which rank it came from; the loss can (every rank's is NaN a step later).
    job = Job(server, tmp_path, "--steps", 25, "--nan-rank", 1, "--nan-step", 15, "--grad-every", 0)
    jobs.append(job)
    run_id = job.wait()[0]["run"]
    alert = wait_alert(server, "ddp", run_id, "nan")
    assert alert["rank"] == 1 and alert["step"] == 15 and alert.get("metric", "loss") == "loss", alert

