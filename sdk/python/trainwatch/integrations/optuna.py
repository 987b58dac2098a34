"""Optuna: every trial is a trainwatch run, and a pruner that prunes a trial as soon as
trainwatch raises one of a set of alerts on its run.

    import optuna
    from trainwatch.integrations import optuna as tw_optuna

    def objective(trial):
        lr = trial.suggest_float("lr", 1e-4, 1.0, log=True)
        run = tw_optuna.run_of(trial)               # (with n_jobs=1 also trainwatch.run)
        for step in range(steps):
            ...
            run.log({"loss": loss})
            trial.report(loss, step)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return val_loss

    study = optuna.create_study(study_name="lr-sweep",
                                pruner=tw_optuna.TrainwatchPruner(wrapped=optuna.pruners.MedianPruner()))
    study.optimize(tw_optuna.track(objective, project="sweeps"), n_trials=20)

The run of a trial: name "<study> #<number>", group = the study's name, config = the trial's
parameters plus {"optuna": {"study", "trial", "state", "value", "pruned_by"}}, and the metric
`objective` (the trial's value, at its last step) — so `GET /api/v1/runs?group=<study>&
config.optuna.state=complete&sort=metric:objective` lists the trials best first. The run id is in
the trial's user attribute `trainwatch_run` ({"project", "id"}).

The pruner sees the alerts of runs started in its own process (each run's alert feed, _alerts.py);
a trial whose run is elsewhere is left to the wrapped pruner.
"""
import threading

import optuna

import trainwatch

DEFAULT_KINDS = ("nan", "divergence", "grad_explosion", "plateau")
USER_ATTR = "trainwatch_run"

_lock = threading.Lock()
_runs = {}       # (study name, trial number) -> Run, for the trials running in this process
_pruned_by = {}  # (study name, trial number) -> the alert the pruner pruned on


def start_trial_run(trial, project=None, **init_kwargs):
    """Starts the run of `trial` (an optuna.Trial) with trainwatch.init(project, **init_kwargs)
    and starts receiving its alerts. track() calls it; call it yourself to manage runs by hand."""
    study = trial.study.study_name
    run = trainwatch.init(project=project, name="%s #%d" % (study, trial.number), group=study,
                          config={"optuna": {"study": study, "trial": trial.number}}, **init_kwargs)
    trial.set_user_attr(USER_ATTR, {"project": run.project, "id": run.id})
    with _lock:
        _runs[(study, trial.number)] = run
    run.alerts  # starts the alert feed: it connects while the trial sets up
    return run


def finish_trial_run(trial, state, value=None):
    """Records the trial's outcome on its run (state: "complete", "pruned" or "fail"; value: the
    objective) and finishes it. track() calls it."""
    key = (trial.study.study_name, trial.number)
    with _lock:
        run = _runs.pop(key, None)
        alert = _pruned_by.pop(key, None)
    if run is None:
        return
    outcome = {"state": state}
    if value is not None:
        outcome["value"] = value
        values = value if isinstance(value, (list, tuple)) else [value]
        step = max(run.step, 0)
        run.log({"objective" if len(values) == 1 else "objective/%d" % i: float(v)
                 for i, v in enumerate(values)}, step=step)
    if alert is not None:
        outcome["pruned_by"] = {"alert_id": alert.get("id"), "kind": alert.get("kind"),
                                "name": alert.get("name"), "step": alert.get("step")}
    run.set_config(dict(trial.params, optuna=outcome))
    run.set_tags(["optuna:" + state])
    run.finish("crashed" if state == "fail" else "finished")


def run_of(trial):
    """The run of a trial (an optuna.Trial) started in this process, or None."""
    with _lock:
        return _runs.get((trial.study.study_name, trial.number))


def track(objective, project=None, **init_kwargs):
    """Wraps `objective(trial)` so that each trial is a run (module doc); init_kwargs go to
    trainwatch.init (server, api_key, system_metrics, ...)."""
    def tracked(trial):
        start_trial_run(trial, project, **init_kwargs)
        try:
            value = objective(trial)
        except optuna.TrialPruned:
            finish_trial_run(trial, "pruned")
            raise
        except BaseException:
            finish_trial_run(trial, "fail")
            raise
        finish_trial_run(trial, "complete", value)
        return value
    return tracked


class TrainwatchPruner(optuna.pruners.BasePruner):
    """Prunes a trial once trainwatch has raised an alert of one of `kinds` (detector kinds or
    rule names; default nan, divergence, grad_explosion, plateau) on its run; otherwise asks
    `wrapped` (another Optuna pruner, e.g. MedianPruner), if any. Cheap enough to ask every step:
    it reads the alerts the run's feed already received."""

    def __init__(self, kinds=DEFAULT_KINDS, wrapped=None):
        self._kinds = frozenset([kinds] if isinstance(kinds, str) else kinds)
        self._wrapped = wrapped

    def prune(self, study, trial):
        key = (study.study_name, trial.number)
        with _lock:
            run = _runs.get(key)
        if run is not None:
            for alert in run.alerts:
                if alert.get("fired_at") and (alert.get("kind") in self._kinds
                                              or alert.get("name") in self._kinds):
                    with _lock:
                        _pruned_by.setdefault(key, alert)
                    return True
        return self._wrapped is not None and self._wrapped.prune(study, trial)
