"""Detection across the ranks of a distributed run, on the real binary: simulated ranks write their
rows, heartbeats and RankInfo over HTTP (protobuf bodies, as the SDK's HTTP transport does) and the
alerts come back from /api/v1/alerts naming the rank and host: `straggler`, `nan` attributed to the
rank that showed it first, `rank_dead` and the `collective_hang` grouped under it, on the server's
clock. Other ranks' rows never reach the run-level detectors (four loss levels interleaved would
otherwise look like a loss jumping every record)."""
import math
import time

import pytest

from harness import ingest_pb, wait_until

WAIT = 20.0  # only guards against a hang


@pytest.fixture(scope="module")
def pb():
    return ingest_pb.load()


def alerting_server(server_factory, tmp_path, text):
    path = tmp_path / "alerting.yml"
    path.write_text(text)
    return server_factory("--alerting", str(path))


def alerts(server, **params):
    return server.get_json("/api/v1/alerts", dict(project="ddp", **params))["alerts"]


def wait_alert(server, predicate, what, timeout=WAIT, action=None, **params):
    """The first alert (GET /api/v1/alerts with params) that satisfies predicate; `action()` runs
    before each look (a heartbeat)."""
    def matching():
        if action:
            action()
        return next((a for a in alerts(server, **params) if predicate(a)), None)
    return wait_until(matching, what, timeout=timeout)


class Ranks:
    """`world` simulated ranks of run `run`, rank r on host node<r // 2>."""

    def __init__(self, server, pb, run, world):
        self.server, self.pb, self.run, self.world = server, pb, run, world
        self.t0 = time.time() - 3600  # the writers' clock: only differences matter

    def batch(self, rank, steps=(), metrics=None, heartbeat=0.0):
        """One batch of `rank`: rows at `steps` with metrics(rank, step) -> {name: value}."""
        req = self.pb.WriteRequest()
        b = req.runs.add(project="ddp", run=self.run)
        b.rank.rank = rank
        b.rank.world_size = self.world
        b.rank.local_rank = rank % 2
        b.rank.host = "node%d" % (rank // 2)
        columns = {}
        for i, step in enumerate(steps):
            b.steps.append(step)
            b.times.append(self.t0 + 0.1 * step)
            for name, value in metrics(rank, step).items():
                if name not in columns:
                    columns[name] = b.metrics.add(name=name)
                columns[name].rows.append(i)
                columns[name].values.append(value)
        if heartbeat:
            b.heartbeat.interval_seconds = heartbeat
        r = ingest_pb.post(self.server, req)
        assert r.status == 200 and r.json()["errors"] == [], r.text
        return r

    def steps(self, first, last, metrics, per_batch=10, heartbeat=0.0):
        """Steps first..last-1 of every rank, `per_batch` rows a batch, ranks taking turns in an
        order that changes each round (rows of one step arrive out of order across ranks)."""
        for lo in range(first, last, per_batch):
            order = list(range(self.world))
            k = (lo // per_batch) % self.world
            for rank in order[k:] + order[:k]:
                self.batch(rank, range(lo, min(lo + per_batch, last)), metrics, heartbeat)


def training(straggler=None, onset=None, nan_rank=None, nan_step=None):
    """Healthy DDP metrics: each rank's own loss level (its data), the same param norm everywhere,
    a time to the first collective of about 80 ms with jitter; optionally one rank's data loading
    150 ms slower from `onset`, and a NaN loss on `nan_rank` at `nan_step` spreading to every rank
    at the next step (the all-reduce)."""
    def metrics(rank, step):
        jitter = 1 + 0.2 * math.sin(1.7 * step + 2.3 * rank)
        ttc = 0.08 * jitter + (0.15 if rank == straggler and step >= onset else 0.0)
        loss = (1.0 + rank) * 2.0 / (1 + 0.01 * step)
        if nan_step is not None and ((rank == nan_rank and step == nan_step) or nan_step < step <= nan_step + 2):
            loss = float("nan")
        return {"loss": loss, "dist/time_to_collective": ttc, "param_norm": 100 + 0.01 * step}
    return metrics


def test_straggler_and_nan_name_the_rank_and_host(server_factory, tmp_path, pb):
    server = alerting_server(server_factory, tmp_path, "groups: []\n")
    ranks = Ranks(server, pb, "ddp-1", 4)
    ranks.steps(0, 100, training())
    ranks.steps(100, 200, training(straggler=3, onset=150))
    a = wait_alert(server, lambda a: a["kind"] == "straggler", "a straggler alert")
    assert a["rank"] == 3 and a["host"] == "node1", a
    assert a["metric"] == "dist/time_to_collective" and a["step"] == 150, a
    assert "rank 3 (node1)" in a["message"], a

    # Rank 2's batch is bad at step 230; every rank's loss is non-finite at the next two steps.
    ranks.steps(200, 260, training(straggler=3, onset=150, nan_rank=2, nan_step=230))
    n = wait_alert(server, lambda a: a["kind"] == "nan", "a nan alert")
    assert n["rank"] == 2 and n["host"] == "node1" and n["step"] == 230, n
    assert n["labels"]["ranks"] == "2", n

    # Four ranks' losses (levels 1x to 4x) interleaved: nothing at run level but what was caused.
    server.get_json("/api/v1/alerts", {})  # the API answers
    kinds = sorted(a["kind"] for a in alerts(server, run="ddp-1"))
    assert kinds == ["nan", "straggler"], alerts(server, run="ddp-1")
    # The straggler recovers: its incident resolves.
    ranks.steps(260, 300, training())
    wait_alert(server, lambda a: a["kind"] == "straggler" and a["status"] == "resolved", "the straggler resolved")


def test_rank_dead_then_the_collective_hang_it_caused(server_factory, tmp_path, pb):
    # Small thresholds so that the test takes seconds: heartbeats every 0.3 s (rank_dead after 3
    # intervals), a hang after 2 s without a step.
    server = alerting_server(server_factory, tmp_path, "detectors:\n  collective_hang: {hang_floor: 2s}\n")
    ranks = Ranks(server, pb, "ddp-2", 3)
    ranks.steps(0, 40, training(), heartbeat=0.3)

    def beat():  # ranks 0 and 1 are alive, hanging in the all-reduce; rank 2 is silent
        for rank in (0, 1):
            ranks.batch(rank, heartbeat=0.3)

    dead = wait_alert(server, lambda a: a["kind"] == "rank_dead", "rank_dead", action=beat)
    assert dead["rank"] == 2 and dead["host"] == "node1" and dead["step"] == 39, dead
    assert dead["severity"] == "critical" and dead["status"] == "firing", dead
    hang = wait_alert(server, lambda a: a["kind"] == "collective_hang", "collective_hang", action=beat)
    assert hang["step"] == 39 and "rank" not in hang, hang
    assert hang["labels"]["caused_by"] == "rank_dead" and hang["labels"]["cause_rank"] == "2", hang
    assert hang["labels"]["cause_host"] == "node1", hang

    # Rank 2 comes back and the ranks step again: both resolve.
    ranks.steps(40, 41, training(), heartbeat=0.3)
    for kind in ("rank_dead", "collective_hang"):
        a = wait_alert(server, lambda a: a["kind"] == kind and a["status"] == "resolved", kind + " resolved")
        assert a["resolved_step"] == 40, a
