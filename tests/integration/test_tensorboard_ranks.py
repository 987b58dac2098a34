"""`trainwatch import` of a distributed job's TensorBoard logdir on the real binary: one event-file
directory per rank (rank_0/, rank-1/, rank2/, worker_3/ under one parent) becomes ONE run with
ranks, each rank's points under its rank and host (read back through /api/v1/series?rank=N and
/api/v1/ranks); `--ranks` makes every directory of the logdir a rank whatever its name; other runs
of the logdir stay runs of their own. Event files are written by the independent golden writer."""
import os
import struct
import sys

from conftest import BIN  # noqa: F401  (the binary the harness starts)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tfevents"))
import tfevents_writer as tw  # noqa: E402
from test_tensorboard import run_import, tool_env  # noqa: E402

T0 = 1767225600.0
STEPS = 20


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def value_of(rank, step):
    return f32((rank + 1) * 10.0 + step / 100.0)


def write_rank(directory, rank, host, steps=STEPS, restart_at=None):
    """One rank's event file, as torch's SummaryWriter names it (events.out.tfevents.<time>.<host>.<pid>...)."""
    os.makedirs(directory, exist_ok=True)
    w = tw.EventFileWriter(os.path.join(directory, "events.out.tfevents.%d.%s.%d.0" % (T0, host, 4000 + rank)), T0)
    for step in range(steps):
        t = T0 + 1 + step + 0.01 * rank
        w.add_event(tw.event(t, step, summary_values=[tw.value("loss", simple_value=value_of(rank, step)),
                                                       tw.value("dist/time_to_collective", simple_value=f32(0.08))]))
    if restart_at is not None:
        w.add_event(tw.event(T0 + 100, restart_at, session_status=1))  # SessionLog START
    w.close()


def series(server, project, run, metric, rank=None):
    params = {"project": project, "run": run, "metric": metric}
    if rank is not None:
        params["rank"] = rank
    doc = server.get_json("/api/v1/series", params)
    return {p[0]: p[2] for p in doc["series"][0]["points"]}


def test_rank_directories_import_as_one_run_with_ranks(module_server, tmp_path):
    logdir = tmp_path / "logs"
    names = {0: "rank_0", 1: "rank-1", 2: "rank2", 3: "worker_3"}
    for rank, name in names.items():
        write_rank(str(logdir / "exp" / name), rank, "node-a" if rank < 2 else "node-b.cluster")
    write_rank(str(logdir / "solo"), 0, "other")  # a plain run beside it
    code, report, err = run_import(module_server.url, logdir, "tbranks", tool_env(tmp_path))
    assert code == 0, err
    runs = {r["id"]: r for r in report["runs"]}
    assert sorted(runs) == ["exp", "solo"], report
    assert runs["exp"]["ranks"] == 4 and runs["exp"]["files"] == 4, runs["exp"]
    assert runs["exp"]["points"] == 4 * STEPS * 2, runs["exp"]
    assert "ranks" not in runs["solo"], runs["solo"]

    # Each rank's points are its own: rank=N reads rank N's series; without rank, rank 0's.
    for rank in names:
        got = series(module_server, "tbranks", "exp", "loss", rank)
        assert got == {s: value_of(rank, s) for s in range(STEPS)}, (rank, got)
    assert series(module_server, "tbranks", "exp", "loss") == {s: value_of(0, s) for s in range(STEPS)}

    table = module_server.get_json("/api/v1/ranks", {"project": "tbranks", "run": "exp"})
    ranks = {r["rank"]: r for r in table["ranks"]}
    assert sorted(ranks) == [0, 1, 2, 3], table
    assert [ranks[r]["host"] for r in range(4)] == ["node-a", "node-a", "node-b.cluster", "node-b.cluster"], table
    assert all(ranks[r]["last_step"] == STEPS - 1 for r in range(4)), table
    info = module_server.get_json("/api/v1/run", {"project": "tbranks", "run": "exp"})
    assert info["status"] == "finished" and info["start_time"] == T0, info
    # Importing again changes nothing.
    code, again, err = run_import(module_server.url, logdir, "tbranks", tool_env(tmp_path))
    assert code == 0, err
    assert series(module_server, "tbranks", "exp", "loss", 3) == {s: value_of(3, s) for s in range(STEPS)}


def test_the_ranks_flag_makes_every_directory_a_rank(module_server, tmp_path):
    logdir = tmp_path / "job"
    # Names that say no rank: numbered in name order.
    for rank, name in enumerate(["alpha", "beta", "gamma"]):
        write_rank(str(logdir / name), rank, "h%d" % rank)
    code, report, err = run_import(module_server.url, logdir, "tbranks2", tool_env(tmp_path))
    assert code == 0, err
    assert sorted(r["id"] for r in report["runs"]) == ["alpha", "beta", "gamma"], report  # by name: not ranks

    code, report, err = run_import(module_server.url, logdir, "tbranks3", tool_env(tmp_path), "--ranks")
    assert code == 0, err
    assert [(r["id"], r.get("ranks")) for r in report["runs"]] == [("job", 3)], report
    for rank in range(3):
        assert series(module_server, "tbranks3", "job", "loss", rank) == {s: value_of(rank, s) for s in range(STEPS)}
    table = module_server.get_json("/api/v1/ranks", {"project": "tbranks3", "run": "job"})
    assert sorted((r["rank"], r["host"]) for r in table["ranks"]) == [(0, "h0"), (1, "h1"), (2, "h2")], table


def test_two_directories_of_one_rank_are_refused(module_server, tmp_path):
    logdir = tmp_path / "dup"
    write_rank(str(logdir / "exp" / "rank_1"), 1, "a")
    write_rank(str(logdir / "exp" / "rank-1"), 1, "b")
    code, report, err = run_import(module_server.url, logdir, "tbranks4", tool_env(tmp_path))
    assert code == 2, (code, err)
    assert "both hold rank 1" in err, err


def test_another_ranks_restart_is_reported_not_rewound(module_server, tmp_path):
    logdir = tmp_path / "restart"
    write_rank(str(logdir / "rank_0"), 0, "a")
    write_rank(str(logdir / "rank_1"), 1, "a", restart_at=10)
    code, report, err = run_import(module_server.url, logdir, "tbranks5", tool_env(tmp_path), "--ranks")
    assert code == 0, err
    assert report["total"]["session_starts"] == 1, report
    assert any("rank_1: restart at step 10 not rewound" in m for m in report["messages"]), report["messages"]
    # Rank 0's points are all still visible.
    assert series(module_server, "tbranks5", "restart", "loss", 0) == {s: value_of(0, s) for s in range(STEPS)}
