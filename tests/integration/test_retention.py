"""Retention and the disk guard, on a real server process and the real data volume."""
import time

from harness import wait_until

OLD = 1577836800.0  # 2020-01-01: far beyond any maximum age used here


def lines(project, run, n, t0, finished=False):
    out = [{"project": project, "run": run, "step": s, "time": t0 + s, "metrics": {"loss": 1.0 / (s + 1)}}
           for s in range(n)]
    if finished:
        out.append({"project": project, "run": run, "status": "finished"})
    return out


def visible_count(server, project, run):
    r = server.get("/api/v1/metrics", {"project": project, "run": run})
    if r.status == 404:
        return None
    return sum(m["count"] for m in r.json())


def wait_for(predicate, seconds=20):
    return wait_until(predicate, "the retention pass", timeout=seconds)


def test_max_age_deletes_old_sealed_data_of_that_project_only(server_factory):
    server = server_factory("--retention", "short=1d", "--retention-interval", "1s")
    server.write_ok(lines("short", "old", 3000, OLD))  # one batch past 1,024 points: all of it sealed
    server.write_ok(lines("short", "fresh", 3000, time.time() - 60))
    server.write_ok(lines("keep", "old", 3000, OLD))
    assert wait_for(lambda: visible_count(server, "short", "old") == 0), server.tail()
    assert visible_count(server, "short", "fresh") == 3000
    assert visible_count(server, "keep", "old") == 3000
    assert "retention deleted old points" in server.stderr_text()
    # Points still in memory are deleted once sealed: the checkpoint at shutdown seals them.
    server.write_ok([{"project": "short", "run": "old", "step": 5000, "time": OLD, "metrics": {"loss": 1}}])
    assert visible_count(server, "short", "old") == 1
    server.restart()
    assert wait_for(lambda: visible_count(server, "short", "old") == 0), server.tail()
    assert visible_count(server, "short", "fresh") == 3000


def test_disk_guard_refuses_writes_with_a_reason_when_nothing_may_be_deleted(server_factory):
    # The volume is surely more than 0.01% used, and no finished run is older than 7 days.
    server = server_factory("--disk-guard-percent", "0.01")
    r = server.write(lines("p", "r", 3, time.time()))
    assert r.status == 507, r
    assert "writes are refused" in r.json()["error"]
    assert server.get("/healthz").status == 200
    assert server.get("/api/v1/runs").status == 200  # reads go on


def test_disk_guard_deletes_old_finished_runs_first(server_factory, tmp_path):
    server = server_factory()
    server.write_ok(lines("p", "ancient", 10, OLD, finished=True))
    server.write_ok(lines("p", "running", 10, OLD))
    server.write_ok(lines("p", "recent", 10, time.time() - 60, finished=True))
    data_dir = server.data_dir
    server.terminate()
    guarded = server_factory("--disk-guard-percent", "0.01", "--retention-interval", "1s", data_dir=data_dir)
    stderr = guarded.stderr_text()
    assert "disk guard: deleting an old run" in stderr and "run=ancient status=finished" in stderr, guarded.tail()
    assert visible_count(guarded, "p", "ancient") is None
    assert visible_count(guarded, "p", "running") == 10   # running runs are never deleted
    assert visible_count(guarded, "p", "recent") == 10    # finished, but not 7 days ago
