"""skorch: a callback that logs a net's epochs and batches to a trainwatch run.

    from trainwatch.integrations.skorch import TrainwatchCallback

    net = NeuralNetClassifier(Module, max_epochs=10, callbacks=[TrainwatchCallback(project="digits")])
    net.fit(X, y)

Steps are training batches (the run's step clock counts every training batch of the fit). After
each training batch: `batch/train_loss` (and every other number skorch records for the batch,
as `batch/<key>`). After each epoch, at the step of its last batch: the epoch row of
`net.history` — `train_loss`, `valid_loss`, `valid_acc`, `dur`, scores of other callbacks, and
`epoch` — except keys ending in `_best`, `event_*` and `keys_ignored`. `train_loss` is a name
the anomaly detectors bind as the training loss, and `valid_loss` as an eval loss. The net's
settings (module, criterion, optimizer, lr, batch_size, max_epochs) go into the run's config.
"""
import numbers

import skorch.callbacks
from skorch.callbacks.logging import filter_log_keys

import trainwatch

_CONFIG_PARAMS = ("lr", "batch_size", "max_epochs", "train_split")


class TrainwatchCallback(skorch.callbacks.Callback):
    """Logs to `run` (default: the current run when training begins, else a new run started with
    trainwatch.init(**init_kwargs)). `log_batches`: also per-batch values. `finish`: finish the
    run when training ends (default: only a run this callback started)."""

    def __init__(self, run=None, log_batches=True, keys_ignored=None, finish=None, **init_kwargs):
        self.run = run
        self.log_batches = log_batches
        self.keys_ignored = keys_ignored
        self.finish = finish
        self.init_kwargs = init_kwargs

    def initialize(self):
        self.run_ = None
        self.started_run_ = False
        self.step_ = -1  # training batches seen, less one: the step of the last one
        keys = self.keys_ignored
        self.keys_ignored_ = set([keys] if isinstance(keys, str) else keys or ())
        return self

    def on_train_begin(self, net, X=None, y=None, **kwargs):
        run = self.run or self.run_ or trainwatch.run
        if run is None:
            run = trainwatch.init(**self.init_kwargs)
            self.started_run_ = True
        self.run_ = run
        self.step_ = max(run.step, -1)
        run.set_config({"skorch": _net_config(net)})

    def on_batch_end(self, net, batch=None, training=None, **kwargs):
        if not training:
            return
        self.step_ += 1
        if self.log_batches:
            row = net.history[-1, "batches", -1]
            values = {"batch/" + k: row[k] for k in filter_log_keys(row.keys(), self.keys_ignored_)
                      if _is_number(row[k])}
            self.run_.log(values, step=self.step_)

    def on_epoch_end(self, net, dataset_train=None, dataset_valid=None, **kwargs):
        row = net.history[-1]
        values = {k: row[k] for k in filter_log_keys(row.keys(), self.keys_ignored_ | {"batches"})
                  if _is_number(row[k])}
        values["epoch"] = row["epoch"]
        self.run_.log(values, step=max(self.step_, 0))

    def on_train_end(self, net, X=None, y=None, **kwargs):
        if self.finish or (self.finish is None and self.started_run_):
            self.run_.finish()
            self.run_ = None


def _is_number(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _net_config(net):
    config = {"module": _name(net.module), "criterion": _name(net.criterion),
              "optimizer": _name(net.optimizer)}
    for key in _CONFIG_PARAMS:
        value = getattr(net, key, None)
        if value is not None:
            config[key] = value if _is_number(value) or isinstance(value, (str, bool)) else _name(value)
    return config


def _name(obj):
    return obj.__name__ if isinstance(obj, type) else type(obj).__name__
