"""trainwatch.integrations.skorch with Debian's skorch: a small classifier trained on sklearn's
digits logs its epochs and batches."""
import math

import numpy as np
import torch
from sklearn.datasets import load_digits
from skorch import NeuralNetClassifier

import trainwatch as tw
from trainwatch.integrations.skorch import TrainwatchCallback

FAST = dict(system_metrics=False, flush_timeout_seconds=15, batch_max_delay_seconds=0.02)
EPOCHS = 3
BATCH = 256


class Mlp(torch.nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(64, hidden), torch.nn.ReLU(),
                                       torch.nn.Linear(hidden, 10))

    def forward(self, x):
        return self.net(x)


def test_skorch_logs_epochs_and_batches(server):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    y = y.astype(np.int64)
    callback = TrainwatchCallback(project="p", id="skorch", server=server.url, **FAST)
    net = NeuralNetClassifier(Mlp, max_epochs=EPOCHS, batch_size=BATCH, lr=0.1,
                              criterion=torch.nn.CrossEntropyLoss, callbacks=[callback])
    net.fit(x, y)
    assert tw.run is None  # the callback started the run, so it finished it

    batches_per_epoch = [len([b for b in row["batches"] if "train_loss" in b]) for row in net.history]
    assert batches_per_epoch == [math.ceil(len(x) * 0.8 / BATCH)] * EPOCHS  # skorch's 80/20 split
    total = sum(batches_per_epoch)
    batch_losses = server.points("p", "skorch", "batch/train_loss")
    assert [s for s, _, _ in batch_losses] == list(range(total))
    expected = [b["train_loss"] for row in net.history for b in row["batches"] if "train_loss" in b]
    assert [v for _, _, v in batch_losses] == expected

    epoch_ends = [sum(batches_per_epoch[:i + 1]) - 1 for i in range(EPOCHS)]
    for name in ("train_loss", "valid_loss", "valid_acc", "dur", "epoch"):
        points = server.points("p", "skorch", name)
        assert [s for s, _, _ in points] == epoch_ends, name
        assert [v for _, _, v in points] == [float(row[name]) for row in net.history], name
    names = server.metric_names("p", "skorch")
    assert not any(n.endswith("_best") for n in names)
    info = server.run_info("p", "skorch")
    assert info["status"] == "finished"
    assert info["config"]["skorch"] == {"module": "Mlp", "criterion": "CrossEntropyLoss",
                                        "optimizer": "SGD", "lr": 0.1, "batch_size": BATCH,
                                        "max_epochs": EPOCHS, "train_split": "ValidSplit"}


def test_skorch_logs_to_the_current_run_and_leaves_it_open(server):
    x, y = load_digits(return_X_y=True)
    x = (x[:200] / 16.0).astype(np.float32)
    y = y[:200].astype(np.int64)
    run = tw.init(project="p", id="outer", server=server.url, **FAST)
    run.log({"setup": 1.0}, step=0)
    net = NeuralNetClassifier(Mlp, max_epochs=2, batch_size=100, train_split=None,
                              callbacks=[TrainwatchCallback(log_batches=False)])
    net.fit(x, y)
    assert tw.run is run and not run.finished
    run.finish()
    # steps continue after the run's own: batches 1-2, 3-4 (no validation split: no valid_*)
    assert [s for s, _, _ in server.points("p", "outer", "train_loss")] == [2, 4]
    assert server.points("p", "outer", "batch/train_loss") == []
    assert "valid_loss" not in server.metric_names("p", "outer")
