"""A real training run to watch: an MLP learning sklearn's digits on the CPU, logged with trainwatch.

    PYTHONPATH=build/python python3 sdk/python/examples/demo.py --server http://127.0.0.1:8080

It logs train loss, validation loss and accuracy, the learning rate and samples per second, every
500 steps eight validation digits (images, the model's guess beside the truth in each caption) and
a per-class accuracy table (text), and watches the model (gradient norms per layer,
weight/gradient histograms, update ratios, graph).
It trains for about --seconds (default 120) over --steps steps (pacing with short sleeps), and at
--blowup-at (a fraction of the steps) multiplies the learning rate by --blowup-factor: the loss
spikes and the gradient norms explode, which is what trainwatch is for. `make run` starts it.
"""
import argparse
import os
import sys
import time

import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import trainwatch as tw


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--server", default=os.environ.get("TRAINWATCH_SERVER", "http://127.0.0.1:8080"))
    p.add_argument("--project", default="demo")
    p.add_argument("--name", default=None, help="run name (default: mlp-digits-<time>)")
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--seconds", type=float, default=120.0, help="target duration (0: no pacing)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--blowup-at", type=float, default=0.8, help="fraction of the steps (0: never)")
    p.add_argument("--blowup-factor", type=float, default=100.0)
    p.add_argument("--eval-every", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args()


def main():
    args = parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)

    x, y = load_digits(return_X_y=True)
    x_train, x_val, y_train, y_val = train_test_split(
        x / 16.0, y, test_size=0.2, random_state=args.seed, stratify=y)
    x_train, x_val = (torch.tensor(a, dtype=torch.float32) for a in (x_train, x_val))
    y_train, y_val = (torch.tensor(a) for a in (y_train, y_val))

    model = torch.nn.Sequential(
        torch.nn.Linear(64, args.hidden), torch.nn.ReLU(),
        torch.nn.Linear(args.hidden, args.hidden), torch.nn.ReLU(),
        torch.nn.Linear(args.hidden, 10))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    blowup_step = int(args.steps * args.blowup_at) if args.blowup_at > 0 else -1
    warmup = max(1, args.steps // 30)

    run = tw.init(project=args.project, server=args.server,
                  name=args.name or time.strftime("mlp-digits-%Y%m%d-%H%M%S"),
                  group="demo", tags=["demo", "digits", "mlp"],
                  config={**vars(args), "blowup_step": blowup_step, "optimizer": "sgd",
                          "momentum": 0.9, "train_size": len(x_train)})
    tw.watch(model, log_every=1, hist_every=100)
    print("trainwatch demo: run %s/%s on %s, %d steps in ~%.0f s, lr x%g at step %d"
          % (run.project, run.id, args.server, args.steps, args.seconds, args.blowup_factor,
             blowup_step), flush=True)

    generator = torch.Generator().manual_seed(args.seed)
    step_budget = args.seconds / args.steps if args.seconds > 0 else 0.0
    start = time.perf_counter()
    window_start, window_samples = start, 0
    samples_per_sec = 0.0
    with run:
        for step in range(args.steps):
            lr = args.lr * min(1.0, (step + 1) / warmup)
            if 0 <= blowup_step <= step:
                lr *= args.blowup_factor
            for group in opt.param_groups:
                group["lr"] = lr

            model.train()
            idx = torch.randint(0, len(x_train), (args.batch_size,), generator=generator)
            loss = loss_fn(model(x_train[idx]), y_train[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()

            window_samples += args.batch_size
            now = time.perf_counter()
            if now - window_start >= 1.0:
                samples_per_sec = window_samples / (now - window_start)
                window_start, window_samples = now, 0
            metrics = {"train/loss": loss, "lr": lr, "samples_per_sec": samples_per_sec}
            if step % args.eval_every == 0 or step == args.steps - 1:
                metrics.update(evaluate(model, loss_fn, x_val, y_val))
            run.log(metrics, step=step)

            if step % 500 == 0 or step == args.steps - 1:
                log_samples(run, model, x_val, y_val, step)
            if step % 500 == 0:
                print("step %5d  loss %.4f  lr %.4g" % (step, float(loss), lr), flush=True)
            # pace the run so that it lasts about --seconds
            ahead = start + (step + 1) * step_budget - time.perf_counter()
            if ahead > 0:
                time.sleep(ahead)
    print("trainwatch demo: done in %.0f s" % (time.perf_counter() - start), flush=True)
    return 0


def evaluate(model, loss_fn, x_val, y_val):
    model.eval()
    with torch.no_grad():
        logits = model(x_val)
        loss = loss_fn(logits, y_val)
        accuracy = (logits.argmax(dim=1) == y_val).float().mean()
    return {"val/loss": loss, "val/accuracy": accuracy}


def log_samples(run, model, x_val, y_val, step, count=8):
    """The first `count` validation digits (8x8, drawn 4x larger) with the model's guess beside the
    truth in each caption, and a per-class accuracy table as text."""
    model.eval()
    with torch.no_grad():
        predicted = model(x_val).argmax(dim=1)
    digits = [np.kron(x_val[i].reshape(8, 8).numpy(), np.ones((4, 4))) for i in range(count)]
    run.log_image("samples/digits", digits, step=step,
                  caption=["predicted %d, true %d" % (predicted[i], y_val[i]) for i in range(count)])
    rows = ["| digit | accuracy |", "|---|---|"]
    for digit in range(10):
        mask = y_val == digit
        rows.append("| %d | %.1f%% |" % (digit, 100 * float((predicted[mask] == digit).float().mean())))
    run.log_text("samples/per_class_accuracy", "\n".join(rows), step=step)


if __name__ == "__main__":
    sys.exit(main())
