"""The package against a real server: logging, value types, run lifecycle, settings, failures."""
import math
import os
import struct
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

import trainwatch as tw
from harness import wait_until

FAST = dict(system_metrics=False, flush_timeout_seconds=15, batch_max_delay_seconds=0.02)


def bits(x):
    return struct.pack("<d", x)


def trainwatch_warnings(record):
    return [w for w in record if issubclass(w.category, tw.TrainwatchWarning)]


def test_log_finish_round_trip_is_bit_exact(server):
    rng = np.random.default_rng(7)
    values = [float(v) for v in rng.standard_normal(200) * 10.0 ** rng.integers(-30, 30, 200)]
    values[:6] = [1.0 / 3.0, -0.0, 5e-324, 1.7976931348623157e308, math.nan, -math.inf]
    run = tw.init(project="p", id="exact", server=server.url, **FAST)
    assert tw.run is run
    for step, v in enumerate(values):
        run.log({"x": v, "step_copy": step})
    run.finish()
    assert tw.run is None

    points = server.points("p", "exact", "x")
    assert [p[0] for p in points] == list(range(len(values)))
    for (step, _, got), want in zip(points, values):
        assert bits(got) == bits(want) or (math.isnan(got) and math.isnan(want)), (step, got, want)
    assert server.run_info("p", "exact")["status"] == "finished"


def test_step_defaults_to_last_step_plus_one(server):
    run = tw.init(project="p", id="steps", server=server.url, **FAST)
    run.log({"a": 1.0})              # 0
    run.log({"a": 2.0})              # 1
    run.log({"a": 3.0}, step=10)
    run.log({"a": 4.0})              # 11
    run.log({"a": 5.0}, step=np.int64(20), time=1767225600.5)
    assert run.step == 20
    run.finish()
    points = server.points("p", "steps", "a")
    assert [(s, v) for s, _, v in points] == [(0, 1.0), (1, 2.0), (10, 3.0), (11, 4.0), (20, 5.0)]
    assert points[-1][1] == 1767225600.5


def test_value_types_and_skipped_values_warn_once(server):
    run = tw.init(project="p", id="types", server=server.url, **FAST)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for step in range(3):
            run.log({
                "float": 0.25, "int": 7, "bool": True, "np_f32": np.float32(0.1),
                "np_i64": np.int64(-3), "tensor0d": torch.tensor(1.5),
                "tensor_grad": torch.tensor(2.5, requires_grad=True) * 1,
                "tensor2": torch.tensor([1.0, 2.0]), "text": "hello",
            }, step=step)
    run.finish()
    got = trainwatch_warnings(record)
    assert len(got) == 2, [str(w.message) for w in got]
    assert "'tensor2'" in str(got[0].message) + str(got[1].message)
    assert "'text'" in str(got[0].message) + str(got[1].message)
    # the warning points at the caller, not into the package
    assert all(w.filename == __file__ for w in got), [w.filename for w in got]

    expected = {"float": 0.25, "int": 7.0, "bool": 1.0, "np_f32": float(np.float32(0.1)),
                "np_i64": -3.0, "tensor0d": 1.5, "tensor_grad": 2.5}
    for name, want in expected.items():
        points = server.points("p", "types", name)
        assert [v for _, _, v in points] == [want] * 3, name
    names = server.metric_names("p", "types")
    assert "tensor2" not in names and "text" not in names


def test_bad_arguments_do_not_raise_in_the_loop(server):
    run = tw.init(project="p", id="bad", server=server.url, **FAST)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        run.log({"a": 1.0}, step=-1)
        run.log({"a": 1.0}, step="x")
        run.log([("a", 2.0)], step=0)   # pairs are accepted
        run.log(None, step=1)
        run.log({1: 2.0, "b": None}, step=2)
        run.log_histogram("h", ([0.0, 0.0], [1.0]))
    run.finish()
    assert len(trainwatch_warnings(record)) == 6
    assert [v for _, _, v in server.points("p", "bad", "a")] == [2.0]


def test_many_metrics_in_one_call(server):
    run = tw.init(project="p", id="wide", server=server.url, **FAST)
    run.log({"m%03d" % i: float(i) for i in range(300)}, step=0)
    run.finish()
    assert len(server.metric_names("p", "wide")) == 300
    assert server.points("p", "wide", "m299")[0][2] == 299.0


def test_config_tags_and_metadata(server):
    config = {"lr": np.float32(3e-4), "layers": (64, 32), "opt": {"name": "adam", "betas": [0.9, 0.99]},
              "device": torch.device("cpu"), "t": torch.tensor(4)}
    run = tw.init(project="p", id="cfg", name="my run", group="g1", tags=["a", "b"],
                  config=config, server=server.url, **FAST)
    run.config["batch"] = 128
    run.set_config({"opt": {"name": "sgd"}})
    run.set_tags(["c"])
    assert run.config["opt"] == {"name": "sgd", "betas": [0.9, 0.99]}
    run.log({"x": 1.0})
    run.finish()
    info = server.run_info("p", "cfg")
    assert info["name"] == "my run" and info["group"] == "g1"
    assert set(info["tags"]) == {"a", "b", "c"}
    assert info["config"] == {"lr": 3e-4, "layers": [64, 32], "device": "cpu", "t": 4, "batch": 128,
                              "opt": {"name": "sgd", "betas": [0.9, 0.99]}}


def test_env_vars(server, monkeypatch, tmp_path):
    monkeypatch.setenv("TRAINWATCH_SERVER", server.url)
    monkeypatch.setenv("TRAINWATCH_PROJECT", "envproj")
    run = tw.init(id="env", **FAST)
    run.log({"x": 1.0})
    run.finish()
    assert server.points("envproj", "env", "x")[0][2] == 1.0


def test_api_key_from_env(server_factory, monkeypatch):
    server = server_factory("--api-key", "s3cret")
    monkeypatch.setenv("TRAINWATCH_SERVER", server.url)
    monkeypatch.setenv("TRAINWATCH_API_KEY", "s3cret")
    run = tw.init(project="p", id="keyed", **FAST)
    run.log({"x": 2.0})
    assert run.flush(10)
    run.finish()
    server.api_key = "s3cret"
    assert server.points("p", "keyed", "x")[0][2] == 2.0


def test_offline_mode_writes_a_spool(monkeypatch, tmp_path, refusing_url):
    spool = tmp_path / "offline-spool"
    monkeypatch.setenv("TRAINWATCH_MODE", "offline")
    monkeypatch.setenv("TRAINWATCH_SPOOL_DIR", str(spool))
    # nothing listens here: offline mode must not try
    run = tw.init(project="p", id="off", server=refusing_url, **FAST)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for step in range(100):
            run.log({"x": float(step)})
        run.finish()
    assert trainwatch_warnings(record) == []
    assert run.spool_path.startswith(str(spool))
    files = [os.path.join(d, f) for d, _, fs in os.walk(spool) for f in fs]
    assert files and sum(os.path.getsize(f) for f in files) > 0
    stats = run.stats()
    assert stats["points_spooled"] >= 100 and stats["points_acked"] == 0


def test_context_manager_marks_crashed_on_exception(server):
    with pytest.raises(ZeroDivisionError):
        with tw.init(project="p", id="boom", server=server.url, **FAST) as run:
            run.log({"x": 1.0})
            1 / 0
    assert run.finished and tw.run is None
    assert server.run_info("p", "boom")["status"] == "crashed"

    with tw.init(project="p", id="fine", server=server.url, **FAST) as run:
        run.log({"x": 1.0})
    assert server.run_info("p", "fine")["status"] == "finished"


def test_module_level_functions(server):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        tw.log({"x": 1.0})  # no run: one warning, nothing raised
        tw.log({"x": 1.0})
    assert len(trainwatch_warnings(record)) <= 1
    tw.init(project="p", id="module", server=server.url, **FAST)
    tw.log({"x": 1.0})
    tw.log({"x": 2.0})
    tw.log_histogram("h", [1.0, 2.0, 3.0])
    tw.finish()
    assert tw.run is None
    assert [v for _, _, v in server.points("p", "module", "x")] == [1.0, 2.0]


def test_server_down_warns_once_and_never_raises(tmp_path, refusing_url):
    url = refusing_url
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        run = tw.init(project="p", id="down", server=url, system_metrics=False,
                      flush_timeout_seconds=1, backoff_max_seconds=0.2)
        for step in range(300):
            run.log({"loss": 1.0 / (step + 1), "acc": step / 300})
        run.log_histogram("h", np.arange(10.0))
        # Several connection attempts (backoff 0.2 s) while it waits for acknowledgements that never come.
        assert not run.flush(1)
        run.finish()
    got = trainwatch_warnings(record)
    assert len(got) == 1, [str(w.message) for w in got]
    assert url in str(got[0].message)
    stats = run.stats()
    assert stats["points_acked"] == 0 and not stats["connected"]


def test_server_down_then_up_delivers_everything(server_factory, tmp_path):
    # The spool keeps what the server could not take; a server that appears later gets it.
    from conftest import Server
    server = Server(tmp_path / "late").hold_ports()  # refusing connections until it starts
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = tw.init(project="p", id="late", server=server.url, system_metrics=False,
                      flush_timeout_seconds=20, backoff_max_seconds=0.2)
        for step in range(50):
            run.log({"x": float(step)})

        def refused_and_spooled():
            stats = run.stats()
            return stats["last_error"] and stats["points_spooled"] == 50 and not stats["connected"]
        wait_until(refused_and_spooled, "the client to be refused and spool all 50 points")
        server.start()
        try:
            assert run.flush(20)
            run.finish()
            assert len(server.points("p", "late", "x")) == 50
        finally:
            server.close()


def test_histogram_round_trip(server):
    run = tw.init(project="p", id="hist", server=server.url, **FAST)
    values = np.random.default_rng(1).standard_normal(1000)
    run.log({"x": 1.0}, step=3)
    run.log_histogram("acts", values, bins=16)                    # at the current step, 3
    run.log_histogram("given", ([0.0, 1.0, 2.5], [4, 6]), step=5)
    run.log_histogram("tensor", torch.tensor([[1.0, 2.0], [float("nan"), 4.0]]), step=6, bins=3)
    run.finish()
    acts = histograms(server, "p", "hist", "acts")
    assert [h["step"] for h in acts] == [3]
    counts, edges = np.histogram(values, bins=16)
    assert acts[0]["counts"] == counts.tolist() and np.allclose(acts[0]["edges"], edges, rtol=0)
    given = histograms(server, "p", "hist", "given")
    assert given[0]["step"] == 5 and given[0]["edges"] == [0.0, 1.0, 2.5] and given[0]["counts"] == [4, 6]
    tensor = histograms(server, "p", "hist", "tensor")
    assert tensor[0]["counts"] == [1, 1, 1]  # the NaN is left out


def histograms(server, project, run, metric):
    return server.get_json("/api/v1/histograms", {"project": project, "run": run, "metric": metric})[
        "histograms"]


def test_stats_and_flush(server):
    run = tw.init(project="p", id="stats", server=server.url, **FAST)
    for step in range(1000):
        run.log({"a": 1.0, "b": 2.0})
    assert run.flush(10)
    stats = run.stats()
    assert stats["points_logged"] == 2000 and stats["points_acked"] == 2000
    assert stats["connected"] and stats["transport"] in ("grpc", "http")
    run.finish()


def test_import_without_torch(tmp_path):
    code = "import sys; sys.modules['torch'] = None; import trainwatch; print(trainwatch.__version__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ)
    assert out.returncode == 0, out.stderr


def test_atexit_finishes_open_runs(server):
    code = ("import trainwatch as tw; r = tw.init(project='p', id='%s', server='%s', "
            "system_metrics=False); r.log({'x': 1.0}); %s")
    for run_id, tail, status in (("exit-ok", "pass", "finished"), ("exit-err", "1/0", "crashed")):
        out = subprocess.run([sys.executable, "-c", code % (run_id, server.url, tail)],
                             capture_output=True, text=True, env=os.environ, timeout=60)
        assert server.run_info("p", run_id)["status"] == status, out.stderr
        assert server.points("p", run_id, "x")[0][2] == 1.0


def test_secrets_in_the_config_never_leave_the_process(server):
    # `seed_phrase` is not a server pattern: finding it masked proves the SDK masked it itself.
    config = {"lr": 3e-4, "wandb_api_key": "sk-local-99", "seed_phrase": "correct horse", "max_tokens": 64}
    run = tw.init(project="p", id="secrets", server=server.url, config=config, tags=["token=t-42"],
                  secret_patterns=["seed_phrase"], **FAST)
    assert run.config["wandb_api_key"] == "sk-local-99"  # the training process keeps its own values
    run.config.update({"db_password": "pw-77"})
    run.log({"loss": 1.0})
    run.finish()
    stored = server.run_info("p", "secrets")
    assert stored["config"] == {"lr": 3e-4, "wandb_api_key": "***", "seed_phrase": "***", "max_tokens": 64,
                                "db_password": "***"}, stored["config"]
    assert stored["tags"] == ["token=***"], stored["tags"]
