"""Phase timers of a plain PyTorch training loop (Run.timer, Run.timed, Run.log_step):

    for x, y in run.timed(loader):                  # time/data: waiting for the batch
        with run.timer("forward"):
            loss = loss_fn(model(x), y)
        with run.timer("backward"):
            loss.backward()
        with run.timer("optimizer"):
            opt.step(); opt.zero_grad()
        run.log_step({"loss": loss})                # + time/data, time/forward, ..., time/step

Times are wall-clock seconds (time.perf_counter) summed per phase over the step. On a GPU the
kernels run asynchronously: a phase's time is what the Python thread spent in it (launches, and any
sync it waited for), not the kernels' time, unless the phase ends with torch.cuda.synchronize().
Not thread-safe: one training loop per Run.
"""
import time


class StepTimers:
    """Per-phase seconds of the current step, and the step's own length."""

    def __init__(self, clock=time.perf_counter):
        self._clock = clock
        self._phases = {}           # phase -> seconds this step
        self._step_start = None     # when the last take() happened (None before the first)

    def timer(self, phase):
        return _PhaseTimer(self, "time/" + str(phase))

    def timed(self, iterable, phase="data"):
        name = "time/" + str(phase)
        iterator = iter(iterable)
        while True:
            start = self._clock()
            try:
                item = next(iterator)
            except StopIteration:
                return
            self.add(name, self._clock() - start)
            yield item

    def add(self, name, seconds):
        if self._step_start is None:
            self._step_start = self._clock() - seconds  # the first step starts with its first phase
        self._phases[name] = self._phases.get(name, 0.0) + seconds

    def take(self):
        """The step's metrics (time/<phase>, and time/step from the second step on, or when a
        phase was timed); starts the next step."""
        now = self._clock()
        values = self._phases
        if self._step_start is not None:
            values["time/step"] = now - self._step_start
        self._phases = {}
        self._step_start = now
        return values


class _PhaseTimer:
    __slots__ = ("_timers", "_name", "_start")

    def __init__(self, timers, name):
        self._timers = timers
        self._name = name

    def __enter__(self):
        self._start = self._timers._clock()
        return self

    def __exit__(self, exc_type, exc, tb):
        self._timers.add(self._name, self._timers._clock() - self._start)
        return False
