"""Makes TensorBoard logs with TensorBoard's own writer and records what TensorBoard's own reader
sees in them, so that `trainwatch import` can be checked against the real thing.

    python3 make_real_logs.py OUT_DIR

writes OUT_DIR/logs/ (three runs written by `torch.utils.tensorboard.SummaryWriter` during a small
real training, on the GPU when there is one) and OUT_DIR/manifest.json: every scalar, histogram,
image, text and graph node as TensorBoard's `EventAccumulator` reads them back — after its purge of
the steps a `SessionLog.START` superseded. It needs torch and tensorboard, which Debian 12 does not
package (the build machines have no `tensorboard`): run it where both are installed, and commit its
output as a fixture for a test that imports the logs and compares with the manifest. Not done yet:
the one attempt (on a lent GPU machine that has both) found no machine lent at the time.

Runs:
  mlp/baseline  simple_value scalars, new-style float and double scalar tensors, weight histograms,
                images, text, the model graph;
  mlp/diverged  the learning rate multiplied by 1000 at step 150: the loss goes to inf and NaN;
  mlp/resumed   steps 0..199, then a second writer with purge_step=120 (TensorBoard's resume: a
                SessionLog START at step 120) writes steps 120..239 with other values.
"""
import hashlib
import json
import math
import os
import sys

import numpy as np
import torch
from torch.utils.tensorboard import SummaryWriter
from tensorboard.backend.event_processing import event_accumulator
from tensorboard.util import tensor_util

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)
    ).to(DEVICE)


def batches(steps):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(steps, 64, 16, generator=g)
    y = torch.randint(0, 4, (steps, 64), generator=g)
    return x.to(DEVICE), y.to(DEVICE)


def image_of(step):
    """A 3x24x32 (CHW) float image that changes with the step."""
    yy, xx = np.mgrid[0:24, 0:32]
    r = (xx / 31.0 + step / 300.0) % 1.0
    g = yy / 23.0
    b = np.full_like(r, (step % 100) / 100.0)
    return np.stack([r, g, b]).astype(np.float32)


def train(writer, model, first_step, last_step, lr, lr_jump_at=None, details=True):
    x, y = batches(last_step + 1)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for step in range(first_step, last_step + 1):
        if lr_jump_at is not None and step == lr_jump_at:
            for group in opt.param_groups:
                group["lr"] *= 1000
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x[step]), y[step])
        loss.backward()
        opt.step()
        value = loss.item()
        writer.add_scalar("train/loss", value, step)  # simple_value
        if details:
            writer.add_scalar("train/lr", opt.param_groups[0]["lr"], step, new_style=True)  # float_val
            writer.add_scalar("train/loss_f64", value, step, new_style=True, double_precision=True)
            if step % 50 == 0:
                writer.add_histogram("weights/fc1", model[0].weight.detach().cpu(), step)
                writer.add_histogram("weights/fc2", model[2].weight.detach().cpu(), step)
            if step % 100 == 0:
                writer.add_image("samples/input", image_of(step), step)
                writer.add_text("notes", f"step **{step}**: loss `{value:.4f}`", step)


def write_logs(logs):
    model = make_model()
    with SummaryWriter(os.path.join(logs, "mlp", "baseline")) as w:
        w.add_graph(model, torch.randn(2, 16, device=DEVICE))
        train(w, model, 0, 299, lr=0.1)
    with SummaryWriter(os.path.join(logs, "mlp", "diverged")) as w:
        train(w, make_model(), 0, 299, lr=0.1, lr_jump_at=150, details=False)
    resumed = os.path.join(logs, "mlp", "resumed")
    model = make_model()
    with SummaryWriter(resumed, filename_suffix=".a") as w:
        train(w, model, 0, 199, lr=0.1, details=False)
    with SummaryWriter(resumed, purge_step=120, filename_suffix=".b") as w:
        train(w, make_model(), 120, 239, lr=0.05, details=False)


def number(v):
    """JSON has no NaN/inf: they travel as strings."""
    v = float(v)
    return v if math.isfinite(v) else str(v)


def read_back(run_dir):
    acc = event_accumulator.EventAccumulator(run_dir, size_guidance={k: 0 for k in (
        event_accumulator.SCALARS, event_accumulator.HISTOGRAMS, event_accumulator.IMAGES,
        event_accumulator.TENSORS, event_accumulator.GRAPH)})
    acc.Reload()
    tags = acc.Tags()
    out = {"scalars": {}, "histograms": {}, "images": {}, "texts": {}, "graph_nodes": []}
    for tag in tags["scalars"]:
        out["scalars"][tag] = [[e.step, e.wall_time, number(e.value)] for e in acc.Scalars(tag)]
    for tag in tags["tensors"]:
        plugin = acc.SummaryMetadata(tag).plugin_data.plugin_name
        for e in acc.Tensors(tag):
            value = tensor_util.make_ndarray(e.tensor_proto)
            if plugin == "scalars":
                out["scalars"].setdefault(tag, []).append([e.step, e.wall_time, number(value.item())])
            elif plugin == "text":
                cells = [c.decode() if isinstance(c, bytes) else c for c in value.reshape(-1).tolist()]
                text = cells[0] if value.ndim == 0 else {"shape": list(value.shape), "cells": cells}
                out["texts"].setdefault(tag, []).append([e.step, e.wall_time, text])
    for tag in tags["histograms"]:
        out["histograms"][tag] = [
            {"step": e.step, "wall_time": e.wall_time, "min": e.histogram_value.min,
             "max": e.histogram_value.max, "num": e.histogram_value.num, "sum": e.histogram_value.sum,
             "bucket_limit": [number(b) for b in e.histogram_value.bucket_limit],
             "bucket": list(e.histogram_value.bucket)}
            for e in acc.Histograms(tag)]
    for tag in tags["images"]:
        out["images"][tag] = [
            {"step": e.step, "wall_time": e.wall_time, "width": e.width, "height": e.height,
             "sha256": hashlib.sha256(e.encoded_image_string).hexdigest()}
            for e in acc.Images(tag)]
    if tags["graph"]:
        out["graph_nodes"] = [{"name": n.name, "op": n.op, "input": list(n.input)}
                              for n in acc.Graph().node]
    return out


def main():
    out_dir = sys.argv[1]
    logs = os.path.join(out_dir, "logs")
    write_logs(logs)
    manifest = {"writer": f"torch {torch.__version__} SummaryWriter on {DEVICE}",
                "reader": "tensorboard EventAccumulator", "runs": {}}
    for run in ("mlp/baseline", "mlp/diverged", "mlp/resumed"):
        manifest["runs"][run] = read_back(os.path.join(logs, run))
    import tensorboard
    manifest["reader"] += f" (tensorboard {tensorboard.__version__})"
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
    for run, seen in manifest["runs"].items():
        print(run, {kind: len(v) for kind, v in seen.items()},
              {tag: len(points) for tag, points in seen["scalars"].items()})


if __name__ == "__main__":
    main()
