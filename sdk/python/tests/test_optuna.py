"""trainwatch.integrations.optuna with Debian's Optuna: a real study of short real PyTorch trials,
some with learning rates that explode; those are pruned on trainwatch's alerts."""
import math

import optuna
import pytest
import torch

import trainwatch as tw
from harness import wait_until
from trainwatch.integrations import optuna as tw_optuna

FAST = dict(system_metrics=False, flush_timeout_seconds=15, batch_max_delay_seconds=0.02)
HEALTHY = [0.003, 0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.2]
EXPLODING = [5.0, 20.0, 100.0, 1000.0]
STEPS = 500


def train_trial(trial, steps_taken):
    """A small regression MLP with the trial's lr; reports the loss every step."""
    lr = trial.suggest_float("lr", 1e-3, 1e3, log=True)
    run = tw_optuna.run_of(trial)
    assert run is tw.run
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    target = torch.randn(8, 1, generator=torch.Generator().manual_seed(1))
    data = torch.Generator().manual_seed(2)
    loss = float("nan")
    for step in range(STEPS):
        x = torch.randn(32, 8, generator=data)
        out = torch.nn.functional.mse_loss(model(x), x @ target)
        opt.zero_grad()
        out.backward()
        opt.step()
        loss = out.item()
        run.log({"loss": loss})
        steps_taken[trial.number] = step + 1
        trial.report(loss if math.isfinite(loss) else 1e30, step)
        if trial.should_prune():
            raise optuna.TrialPruned()
    if not math.isfinite(loss):
        # A loaded machine may run the few steps before trainwatch's alert arrives: the test
        # waits for that verdict (the pruner's) rather than depend on timing.
        run.flush()
        wait_until(trial.should_prune, "trainwatch's alert on trial %d" % trial.number)
        raise optuna.TrialPruned()
    return loss


def test_a_study_prunes_exploding_trials_on_trainwatch_alerts(server):
    study = optuna.create_study(study_name="lr-sweep", pruner=tw_optuna.TrainwatchPruner())
    lrs = HEALTHY[:4] + EXPLODING[:2] + HEALTHY[4:] + EXPLODING[2:]  # 12 trials, mixed
    for lr in lrs:
        study.enqueue_trial({"lr": lr})
    steps_taken = {}
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study.optimize(tw_optuna.track(lambda t: train_trial(t, steps_taken), project="hpo",
                                   server=server.url, **FAST), n_trials=len(lrs))

    by_lr = {t.params["lr"]: t for t in study.trials}
    assert {lr for lr, t in by_lr.items() if t.state == optuna.trial.TrialState.PRUNED} == set(EXPLODING)
    assert {lr for lr, t in by_lr.items() if t.state == optuna.trial.TrialState.COMPLETE} == set(HEALTHY)
    for lr in EXPLODING:
        trial = by_lr[lr]
        run = server.run_info("hpo", trial.user_attrs["trainwatch_run"]["id"])
        assert run["group"] == "lr-sweep" and run["config"]["lr"] == lr
        assert run["config"]["optuna"]["state"] == "pruned"
        assert run["config"]["optuna"]["pruned_by"]["kind"] in tw_optuna.DEFAULT_KINDS
        assert "optuna:pruned" in run["tags"]

    # The study's best trial is the best run in trainwatch.
    best = server.get_json("/api/v1/runs", {"project": "hpo", "group": "lr-sweep",
                                            "config.optuna.state": "complete",
                                            "sort": "metric:objective", "limit": 1})["runs"][0]
    assert best["id"] == study.best_trial.user_attrs["trainwatch_run"]["id"]
    assert best["config"]["optuna"]["value"] == study.best_value
    assert best["config"]["lr"] == study.best_params["lr"]
    points = server.points("hpo", best["id"], "objective")
    assert [v for _, _, v in points] == [study.best_value]
    saved = sum(STEPS - steps_taken[by_lr[lr].number] for lr in EXPLODING)
    print("trial-steps: %d run, %d saved by pruning on alerts"
          % (sum(steps_taken.values()), saved))


def test_the_wrapped_pruner_still_prunes_without_alerts(server):
    pruner = tw_optuna.TrainwatchPruner(wrapped=optuna.pruners.ThresholdPruner(upper=0.5))
    study = optuna.create_study(study_name="wrapped", pruner=pruner)
    optuna.logging.set_verbosity(optuna.logging.WARNING)

    def objective(trial):
        run = tw_optuna.run_of(trial)
        for step in range(3):
            run.log({"loss": 1.0})
            trial.report(1.0, step)  # over the threshold, no alert: the wrapped pruner prunes
            if trial.should_prune():
                raise optuna.TrialPruned()
        return 1.0
    study.optimize(tw_optuna.track(objective, project="hpo", server=server.url, **FAST), n_trials=1)
    [trial] = study.trials
    assert trial.state == optuna.trial.TrialState.PRUNED
    run = server.run_info("hpo", trial.user_attrs["trainwatch_run"]["id"])
    assert run["config"]["optuna"]["state"] == "pruned"
    assert "pruned_by" not in run["config"]["optuna"]  # pruned by the wrapped pruner, not an alert


def test_a_failing_trial_is_a_crashed_run(server):
    study = optuna.create_study(study_name="failing")

    def objective(trial):
        raise ValueError("bad trial")
    with pytest.raises(ValueError):
        study.optimize(tw_optuna.track(objective, project="hpo", server=server.url, **FAST),
                       n_trials=1, catch=())
    run = server.run_info("hpo", study.trials[0].user_attrs["trainwatch_run"]["id"])
    assert run["status"] == "crashed" and run["config"]["optuna"]["state"] == "fail"
