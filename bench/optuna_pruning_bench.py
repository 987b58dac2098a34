#!/usr/bin/python3
"""Trial-steps (GPU-hours, here) saved by pruning on trainwatch's alerts, as figures (no pass/fail;
see bench/README.md).

The study of sdk/python/tests/test_optuna.py, run twice against a real `trainwatch serve`: 12 short
real PyTorch trials (a small regression MLP, SGD) whose learning rates are enqueued — 8 healthy,
4 that explode — once with trainwatch.integrations.optuna.TrainwatchPruner and once without a pruner
(Optuna's NopPruner; every trial still a trainwatch run). Printed: the training steps each study ran,
the steps the pruned trials ran after their loss went non-finite, the wall time, and the best trial
of each (the same: the pruner only cuts trials that diverged).

    PYTHONPATH=build/python /usr/bin/python3 bench/optuna_pruning_bench.py --build-dir build
"""
import argparse
import math
import os
import time

import optuna
import torch

import benchlib

from trainwatch.integrations import optuna as tw_optuna

HEALTHY = [0.003, 0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.2]
EXPLODING = [5.0, 20.0, 100.0, 1000.0]


def objective(trial, steps, taken, first_bad):
    lr = trial.suggest_float("lr", 1e-3, 1e3, log=True)
    run = tw_optuna.run_of(trial)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    target = torch.randn(8, 1, generator=torch.Generator().manual_seed(1))
    data = torch.Generator().manual_seed(2)
    loss = float("nan")
    for step in range(steps):
        x = torch.randn(32, 8, generator=data)
        out = torch.nn.functional.mse_loss(model(x), x @ target)
        opt.zero_grad()
        out.backward()
        opt.step()
        loss = out.item()
        run.log({"loss": loss})
        taken[trial.number] = step + 1
        if not math.isfinite(loss):
            first_bad.setdefault(trial.number, step)
        trial.report(loss if math.isfinite(loss) else 1e30, step)
        if trial.should_prune():
            raise optuna.TrialPruned()
    return loss


def run_study(url, name, pruner, steps, batch_delay):
    study = optuna.create_study(study_name=name, pruner=pruner)
    for lr in HEALTHY[:4] + EXPLODING[:2] + HEALTHY[4:] + EXPLODING[2:]:
        study.enqueue_trial({"lr": lr})
    taken, first_bad = {}, {}
    t0 = time.monotonic()
    study.optimize(tw_optuna.track(lambda t: objective(t, steps, taken, first_bad), project="hpo-bench",
                                   server=url, system_metrics=False, batch_max_delay_seconds=batch_delay),
                   n_trials=len(HEALTHY) + len(EXPLODING), catch=())
    seconds = time.monotonic() - t0
    pruned = [t for t in study.trials if t.state == optuna.trial.TrialState.PRUNED]
    after_bad = [taken[t.number] - 1 - first_bad[t.number] for t in pruned if t.number in first_bad]
    return study, sum(taken.values()), pruned, after_bad, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    benchlib.add_common_args(parser)
    parser.add_argument("--steps", type=int, default=2000, help="steps per trial")
    parser.add_argument("--batch-delay", type=float, default=0.2,
                        help="batch_max_delay_seconds of the SDK (default: the SDK's own, 0.2)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    data_dir = benchlib.scratch_dir(args, "optuna-pruning")
    with benchlib.Server(args, os.path.join(data_dir, "data")) as server:
        url = "http://" + server.http
        with_pruner = run_study(url, "with-pruner", tw_optuna.TrainwatchPruner(), args.steps, args.batch_delay)
        without = run_study(url, "without-pruner", optuna.pruners.NopPruner(), args.steps, args.batch_delay)
    (study_p, steps_p, pruned, after_bad, secs_p), (study_n, steps_n, _, _, secs_n) = with_pruner, without
    print("optuna study: %d trials x %d steps (%d with exploding learning rates), batch_max_delay_seconds %g"
          % (len(study_p.trials), args.steps, len(EXPLODING), args.batch_delay))
    print("  without pruner:          %6d trial-steps  %6.1f s" % (steps_n, secs_n))
    print("  with TrainwatchPruner:   %6d trial-steps  %6.1f s  (%d trials pruned)"
          % (steps_p, secs_p, len(pruned)))
    print("  saved:                   %6d trial-steps (%.1f%%)" % (steps_n - steps_p, 100.0 * (steps_n - steps_p) / steps_n))
    if after_bad:
        print("  steps a pruned trial ran after its first non-finite loss: " + benchlib.percentiles(after_bad)
              .replace(" ms", ""))
    print("  best trial: lr %g (with pruner), lr %g (without)" % (study_p.best_params["lr"], study_n.best_params["lr"]))


if __name__ == "__main__":
    main()
