"""trainwatch.watch on a real PyTorch training run (small MLP on sklearn's digits), checked
through the server's API."""
import json
import math
import os
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch
from sklearn.datasets import load_digits

import trainwatch as tw

FAST = dict(system_metrics=False, flush_timeout_seconds=15, batch_max_delay_seconds=0.02)
STEPS = 60


@pytest.fixture(scope="module")
def digits():
    x, y = load_digits(return_X_y=True)
    return torch.tensor(x / 16.0, dtype=torch.float32), torch.tensor(y)


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))


def train(model, digits, run, steps=STEPS, clip=None, accumulate=1):
    """Trains with SGD; returns the pre-clipping total norm clip_grad_norm_ reported per step."""
    x, y = digits
    torch.set_num_threads(1)
    generator = torch.Generator().manual_seed(1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    total_norms = []
    for step in range(steps):
        opt.zero_grad()
        for _ in range(accumulate):
            idx = torch.randint(0, len(x), (64,), generator=generator)
            loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx]) / accumulate
            loss.backward()
        if clip is not None:
            total_norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), clip)))
        opt.step()
        run.log({"loss": loss * accumulate})
    return total_norms


def values(server, run_id, metric):
    return {s: v for s, _, v in server.points("p", run_id, metric)}


def test_watch_logs_gradient_norms_before_clipping(module_server, digits):
    server = module_server
    model = make_model()
    run = tw.init(project="p", id="watch", server=server.url, **FAST)
    tw.watch(model, hist_every=20)
    total_norms = train(model, digits, run, clip=0.05)
    run.finish()

    grad_norm = values(server, "watch", "grad_norm")
    assert sorted(grad_norm) == list(range(STEPS))
    layers = {"0": values(server, "watch", "grad_norm/0"), "2": values(server, "watch", "grad_norm/2")}
    assert all(len(v) == STEPS for v in layers.values())
    names = server.metric_names("p", "watch")
    assert not [n for n in names if n.startswith("grad_norm/") and n[len("grad_norm/"):] not in layers]
    for step, g in grad_norm.items():
        assert math.isfinite(g) and g > 0
        per_layer_sq = sum(layer[step] ** 2 for layer in layers.values())
        assert per_layer_sq == pytest.approx(g * g, rel=1e-6)
        # the norm before clipping (clipping to 0.05 changes every gradient here)
        assert total_norms[step] > 0.05
        assert g == pytest.approx(total_norms[step], rel=1e-5)


def test_watch_param_norms_update_ratio_histograms_graph(module_server, digits):
    server = module_server
    model = make_model()
    run = tw.init(project="p", id="watch-all", server=server.url, **FAST)
    tw.watch(model, hist_every=20)
    train(model, digits, run)
    run.finish()

    measured = [0, 20, 40]
    for metric in ("param_norm", "param_norm/0", "param_norm/2", "update_ratio",
                   "update_ratio/0", "update_ratio/2"):
        points = values(server, "watch-all", metric)
        assert sorted(points) == measured, metric
        assert all(math.isfinite(v) and v > 0 for v in points.values()), (metric, points)
    # SGD with lr 0.1: a small step relative to the weights
    assert all(v < 0.5 for v in values(server, "watch-all", "update_ratio").values())

    for name in ("0.weight", "0.bias", "2.weight", "2.bias"):
        for kind in ("gradients", "weights"):
            hists = server.get_json("/api/v1/histograms", {"project": "p", "run": "watch-all",
                                                           "metric": kind + "/" + name})["histograms"]
            assert [h["step"] for h in hists] == measured, (kind, name)
            for h in hists:
                assert len(h["edges"]) == 65 and len(h["counts"]) == 64
                assert sum(h["counts"]) == dict(model.named_parameters())[name].numel()

    graph = server.get_json("/api/v1/graph", {"project": "p", "run": "watch-all"})
    graph = json.loads(graph) if isinstance(graph, str) else graph
    graph = graph.get("graph", graph)
    assert graph["type"] == "Sequential"
    assert [c["type"] for c in graph["children"]] == ["Linear", "ReLU", "Linear"]
    assert graph["children"][0]["params"] == [
        {"name": "weight", "shape": [32, 64], "numel": 2048},
        {"name": "bias", "shape": [32], "numel": 32}]


def test_watch_with_gradient_accumulation_logs_once_per_step(module_server, digits):
    server = module_server
    model = make_model()
    run = tw.init(project="p", id="accumulate", server=server.url, **FAST)
    tw.watch(model, hist_every=10)
    total_norms = train(model, digits, run, steps=20, clip=1e-3, accumulate=3)
    run.finish()
    grad_norm = values(server, "accumulate", "grad_norm")
    assert sorted(grad_norm) == list(range(20))
    # the norm of the accumulated gradient, as clipping saw it; no rewound (rewritten) steps
    for step, g in grad_norm.items():
        assert g == pytest.approx(total_norms[step], rel=1e-5)
    metrics = {m["name"]: m for m in server.metrics("p", "accumulate")}
    assert metrics["grad_norm"]["timelines"] == 1
    # measured every 10th backward pass: passes 0, 10, ..., 50 belong to steps 0, 3, 6, 10, 13, 16
    assert sorted(values(server, "accumulate", "update_ratio")) == [n // 3 for n in range(0, 60, 10)]


def test_watch_remove_and_options(module_server, digits):
    server = module_server
    model = make_model()
    run = tw.init(project="p", id="unwatch", server=server.url, **FAST)
    handle = tw.watch(model, log_every=5, hist_every=0, per_layer=False, graph=False)
    train(model, digits, run, steps=20)
    handle.remove()
    handle.remove()
    train(model, digits, run, steps=10)
    run.finish()
    assert sorted(values(server, "unwatch", "grad_norm")) == [0, 5, 10, 15]
    names = server.metric_names("p", "unwatch")
    assert not [n for n in names if "/" in n or n.startswith(("param_norm", "update_ratio"))]


def test_watch_survives_diverging_training(module_server, digits):
    server = module_server
    model = make_model()
    run = tw.init(project="p", id="diverge", server=server.url, **FAST)
    tw.watch(model, hist_every=5)
    x, y = digits
    opt = torch.optim.SGD(model.parameters(), lr=1e6)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for step in range(15):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x[:64]), y[:64])
            loss.backward()
            opt.step()
            run.log({"loss": loss})
        run.finish()
    assert not [w for w in record if issubclass(w.category, tw.TrainwatchWarning)]
    grad_norm = values(server, "diverge", "grad_norm")
    assert len(grad_norm) == 15
    assert any(not math.isfinite(v) or v > 1e3 for v in grad_norm.values())


def test_watch_when_the_models_forward_is_not_called(module_server, digits):
    # e.g. a LightningModule whose training_step calls its submodules directly
    server = module_server
    model = make_model()
    run = tw.init(project="p", id="submodules", server=server.url, **FAST)
    tw.watch(model, hist_every=0)
    x, y = digits
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        opt.zero_grad()
        hidden = model[1](model[0](x[:64]))
        torch.nn.functional.cross_entropy(model[2](hidden), y[:64]).backward()
        opt.step()
        run.log({"step": step})
    run.finish()
    assert sorted(values(server, "submodules", "grad_norm")) == list(range(10))


DDP_WORKER = textwrap.dedent("""
    import json, os, sys, torch
    import torch.distributed as dist
    from trainwatch.torch import Watch
    dist.init_process_group("gloo", init_method="file://" + sys.argv[2], rank=int(sys.argv[1]), world_size=2)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    ddp = torch.nn.parallel.DistributedDataParallel(model)

    class Run:  # what Watch uses of a trainwatch Run
        step = 0
        logged = None
        def _add_finish_hook(self, hook): pass
        def _remove_finish_hook(self, hook): pass
        def _log_at(self, metrics, step): self.logged = metrics

    run = Run()
    watch = Watch(model, run, 1, 0, True, True, True, False, 64)
    torch.manual_seed(1 + int(sys.argv[1]))  # different data on each rank
    x, y = torch.randn(32, 8), torch.randint(0, 2, (32,))
    torch.nn.functional.cross_entropy(ddp(x), y).backward()
    total = float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1e-3))
    watch.remove()
    print(json.dumps({"watch": run.logged["grad_norm"], "clip": total}))
    dist.destroy_process_group()
""")


def test_watch_under_ddp_sees_the_averaged_gradients(tmp_path):
    script = tmp_path / "ddp_worker.py"
    script.write_text(DDP_WORKER)
    rendezvous = tmp_path / "ddp_rendezvous"  # a file store: no port to agree on beforehand
    workers = [subprocess.Popen([sys.executable, str(script), str(rank), str(rendezvous)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for rank in (0, 1)]
    results = []
    for w in workers:
        out, err = w.communicate(timeout=120)
        assert w.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    # every rank reports the norm of the averaged gradient, which clipping sees too
    assert results[0]["clip"] == pytest.approx(results[1]["clip"], rel=1e-6)
    for r in results:
        assert r["watch"] == pytest.approx(r["clip"], rel=1e-5)
