"""The plain-PyTorch loop helpers: tw.log_step and the phase timers (run.timer, run.timed)."""
import torch

import trainwatch as tw
from trainwatch._loop import StepTimers

FAST = dict(system_metrics=False, flush_timeout_seconds=15, batch_max_delay_seconds=0.02)
PHASES = ("data", "forward", "backward", "optimizer")


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_step_timers_sum_each_phase_over_the_step():
    clock = FakeClock()
    timers = StepTimers(clock)

    def batches():  # each batch takes 0.5 s to come
        for i in range(2):
            clock.now += 0.5
            yield i
    taken = []
    for _ in timers.timed(batches()):
        with timers.timer("forward"):
            clock.now += 1.0
        with timers.timer("forward"):  # a phase entered twice in a step adds up
            clock.now += 0.25
        clock.now += 2.0                # untimed work still counts in time/step
        taken.append(timers.take())
    # the first step starts when its first timed phase does
    assert taken == [{"time/data": 0.5, "time/forward": 1.25, "time/step": 3.75}] * 2
    assert timers.take() == {"time/step": 0.0}  # an empty step


def test_a_timer_counts_the_phase_even_when_it_raises():
    clock = FakeClock()
    timers = StepTimers(clock)
    try:
        with timers.timer("backward"):
            clock.now += 3.0
            raise RuntimeError("oom")
    except RuntimeError:
        pass
    assert timers.take() == {"time/backward": 3.0, "time/step": 3.0}


def test_log_step_logs_a_real_torch_loop_with_phase_times(server):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    x, y = torch.randn(256, 8), torch.randn(256, 1)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=32)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    run = tw.init(project="p", id="loop", server=server.url, **FAST)
    losses = []
    for xb, yb in tw.timed(loader):
        with tw.timer("forward"):
            loss = torch.nn.functional.mse_loss(model(xb), yb)
        with tw.timer("backward"):
            opt.zero_grad()
            loss.backward()
        with tw.timer("optimizer"):
            opt.step()
        losses.append(loss.item())
        assert tw.log_step({"loss": loss}, lr=0.01) == len(losses) - 1
    run.finish()

    steps = list(range(len(loader)))
    assert [(s, v) for s, _, v in server.points("p", "loop", "loss")] == list(zip(steps, losses))
    assert [v for _, _, v in server.points("p", "loop", "lr")] == [0.01] * len(steps)
    step_times = [v for _, _, v in server.points("p", "loop", "time/step")]
    assert len(step_times) == len(steps)
    for phase in PHASES:
        points = server.points("p", "loop", "time/" + phase)
        assert [s for s, _, _ in points] == steps, phase
        assert all(v > 0 for _, _, v in points), phase
    for step in steps:  # the phases are parts of the step
        parts = sum(server.points("p", "loop", "time/" + p)[step][2] for p in PHASES)
        assert parts <= step_times[step]


def test_loop_helpers_without_a_run_do_nothing(recwarn):
    with tw.timer("forward"):
        pass
    assert list(tw.timed([1, 2])) == [1, 2]
    assert tw.log_step({"loss": 1.0}) is None
