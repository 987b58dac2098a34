"""PyTorch integration: `watch(model)` logs the health of a model's gradients and weights.

What it logs, and under which names (grad_norm, grad_norm/<layer>, param_norm/...,
update_ratio/..., histograms gradients/<param> and weights/<param>, the model graph): the table
in sdk/python/README.md, the one place the names are listed. <layer> is the qualified name of
the module owning a parameter (ROOT_LAYER for the model's own parameters), <param> the
parameter's qualified name.

How it works. Torch 1.13 has no post-accumulate-grad or optimizer hooks, so:
  * every parameter gets a tensor hook whose only job is to queue a callback for the end of the
    backward pass (autograd's final callbacks; with torch.distributed initialised, re-queued
    once so that it runs after DistributedDataParallel's, which write the averaged gradients);
  * that callback runs once every gradient of the pass is accumulated and before the training
    loop can clip them; on the passes it measures it computes the per-parameter norms with one
    `torch._foreach_norm` (a fused kernel on CUDA). On the CPU it reads them back at once (no
    sync to wait for) and sums squares per layer into the metrics; on a device it keeps them as
    one stacked tensor (no device sync inside backward);
  * a forward pre-hook on the model logs them before its next forward pass (on a GPU after one
    `.tolist()` and the per-layer sums) at the run's current step: the step of the last
    `run.log`. (When the model's own forward() is not called, e.g. a training step that calls
    submodules, the next measured backward pass logs them instead.) Nothing is logged before
    the run's first log() (if there never is one, finish() logs what is pending at step 0).
Reading a CUDA tensor's value waits for the GPU to finish its queued work: once per logged step.
With gradient accumulation the norms are those of the accumulated gradient; a step is logged at
most once (while the run's step has not advanced, the newest values stay pending).

The update ratio copies the weights only on measured passes (every hist_every) and compares them
at the first forward after the optimizer changed them (the parameters' version counters tell).
Histograms (torch.histc) read each tensor's range back from the device on those passes only.

What it costs is measured by bench/sdk_python_bench.py; see sdk/python/README.md.

Under DistributedDataParallel (watch the DDP wrapper) it also logs, per rank and step,
dist/step_time and dist/time_to_collective (CollectiveTimer, docs/distributed.md): a DDP
communication hook that wraps the default all-reduce (or the hook given as comm_hook) notes when
the rank's first gradient bucket reaches it; no sync is added and nothing waits.
"""
import json
import math
import operator
import time
import warnings

import torch
import torch.distributed
from torch.autograd import Variable

from ._run import TrainwatchWarning

ROOT_LAYER = "_root"


def watch(model, run=None, log_every=1, hist_every=100, per_layer=True, params=True,
          update_ratio=True, graph=True, bins=64, stop_on=(), comm_hook=None, comm_state=None):
    """Watches `model` (a torch.nn.Module) and logs to `run` (default: the current run).

    log_every: gradient norms every this many backward passes (0: never).
    hist_every: histograms, parameter norms and update ratios every this many backward passes
        (0: never). per_layer: also per-layer norms. params: parameter norms and weight
        histograms. update_ratio: ||dw||/||w||. graph: send the module tree once.
    stop_on: alert kinds or rule names after which run.should_stop() is true (Run.stop_on).
    Under DistributedDataParallel (pass the DDP wrapper; names are those of its .module):
    dist/step_time and dist/time_to_collective per rank and step, timed by a communication hook
    registered on it that wraps `comm_hook(comm_state, bucket)` (default: DDP's all-reduce; pass
    yours here instead of registering it, DDP takes one hook).
    Returns a Watch; `.remove()` stops watching (the run's finish() does too). Never raises
    from inside the training loop: a failing measurement warns once and is switched off."""
    if run is None:
        from . import _session
        run = _session.current_run(warn=False)
    if run is None:
        warnings.warn("trainwatch.watch: no run; call trainwatch.init() first (not watching)",
                      TrainwatchWarning, stacklevel=2)
        return Watch(model, None, 0, 0, per_layer, params, update_ratio, False, bins)
    if stop_on:
        run.stop_on(stop_on)
    return Watch(model, run, log_every, hist_every, per_layer, params, update_ratio, graph, bins,
                 comm_hook, comm_state)


def _ddp_class():
    try:
        from torch.nn.parallel import DistributedDataParallel
        return DistributedDataParallel
    except ImportError:  # a torch without distributed support
        return None


def module_graph(model):
    """The module tree of `model` as a JSON-serialisable dict (see the module doc)."""
    def node(name, path, module):
        return {
            "name": name,
            "path": path,
            "type": type(module).__name__,
            "params": [{"name": n, "shape": list(p.shape), "numel": p.numel()}
                       for n, p in module.named_parameters(recurse=False)],
            "children": [node(n, path + "." + n if path else n, child)
                         for n, child in module.named_children()],
        }
    return node("", "", model)


class Watch:
    """The hooks of one watch() call. Not thread-safe beyond what autograd guarantees: the hooks of
    one backward pass run before the next forward pass."""

    def __init__(self, model, run, log_every, hist_every, per_layer, params, update_ratio, graph,
                 bins, comm_hook=None, comm_state=None):
        self._run = run
        self._collective = None     # CollectiveTimer under DistributedDataParallel
        ddp = _ddp_class()
        wrapper = model if ddp is not None and isinstance(model, ddp) else None
        if wrapper is not None:
            model = wrapper.module  # names without DDP's "module." prefix
        self._log_every = int(log_every or 0)
        self._hist_every = int(hist_every or 0)
        self._per_layer = per_layer
        self._params_on = params
        self._update_on = update_ratio
        self._bins = int(bins)
        self._handles = []
        self._broken = False

        named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        self._names = [n for n, _ in named]
        self._params = [p for _, p in named]
        layers = {}
        self._layer_of = []
        for n in self._names:
            layer = n.rpartition(".")[0] or ROOT_LAYER
            self._layer_of.append(layers.setdefault(layer, len(layers)))
        self._layers = list(layers)
        self._metric_names = {prefix: [prefix + "/" + layer for layer in self._layers]
                              for prefix in ("grad_norm", "param_norm", "update_ratio")}
        # When every layer's parameters are adjacent (as named_parameters() lists them), a
        # layer's squares are one slice of the per-parameter list: (metric name, slice) per layer
        # and prefix, for the passes where every parameter has a value.
        self._layer_slices = None
        starts = {}
        for i, layer in enumerate(self._layer_of):
            starts.setdefault(layer, i)
        if all(self._layer_of[i] == self._layer_of[i - 1]
               for i in range(1, len(self._layer_of)) if starts[self._layer_of[i]] != i):
            bounds = sorted(starts.values()) + [len(self._layer_of)]
            self._layer_slices = {
                prefix: [(names[self._layer_of[a]], slice(a, b))
                         for a, b in zip(bounds, bounds[1:])]
                for prefix, names in self._metric_names.items()}
        # torch._foreach_norm keeps the tensors' dtype: right for float32/64, not for float16
        self._foreach_ok = all(p.dtype in (torch.float32, torch.float64) for p in self._params)

        self._backward_count = 0
        self._queued = False
        self._pending = False       # anything below waiting for a flush
        self._grad_norms = None     # (indices into _params, norms), or on the CPU the metrics
        self._param_norms = None    # norms, one per parameter
        self._hists = None          # histogram name -> (edges, counts)
        self._snapshot = None       # (versions, weight copies) until the next optimizer step
        self._update = None         # (delta norms, weight norms)
        self._last_step = -1        # the step this watch last logged at

        if run is None:
            return
        if graph:
            try:
                run.set_graph(json.dumps(module_graph(model), separators=(",", ":")))
            except Exception as e:
                self._warn("graph not sent", e)
        if wrapper is not None:
            self._collective = CollectiveTimer(wrapper, run, comm_hook, comm_state)
        if self._log_every or self._hist_every:
            for p in self._params:
                self._handles.append(p.register_hook(self._on_grad))
            hooked = wrapper if wrapper is not None else model
            self._handles.append(hooked.register_forward_pre_hook(self._on_forward))
        run._add_finish_hook(self.remove)

    # -- hooks ------------------------------------------------------------------------------------

    def _on_forward(self, module, inputs):
        # Before each forward pass of the model: log what the last backward pass measured (the
        # optimizer has stepped since).
        self._queued = False  # no backward pass is running (one that raised left it set)
        if self._snapshot is not None:
            self._measure_update()
        if self._pending:
            self._flush()

    def _on_grad(self, grad):
        # Inside backward, once per parameter: run _on_backward_end once this backward pass is
        # complete (autograd's final callbacks).
        if not self._queued and not self._broken:
            self._queued = True
            distributed = torch.distributed.is_available() and torch.distributed.is_initialized()
            self._queue_callback(self._requeue if distributed else self._on_backward_end)

    def _requeue(self):
        # Final callbacks queued later during the pass (DistributedDataParallel's, which write
        # the averaged gradients) run after this one; going to the back of the queue makes the
        # measurement see their result.
        self._queue_callback(self._on_backward_end)

    def _queue_callback(self, callback):
        try:
            Variable._execution_engine.queue_callback(callback)
        except Exception as e:  # never into loss.backward()
            self._broken = True
            self._warn("gradient statistics switched off", e)

    def _on_backward_end(self):
        self._queued = False
        n = self._backward_count
        self._backward_count = n + 1
        if self._broken:
            return
        grads_due = self._log_every and n % self._log_every == 0
        hist_due = self._hist_every and n % self._hist_every == 0
        if not (grads_due or hist_due):
            return
        try:  # an exception here would surface from loss.backward()
            if self._pending:
                self._flush()  # the model's forward() was not called since (see _on_forward)
            if torch.is_grad_enabled():  # backward(create_graph=True); otherwise already off
                with torch.no_grad():
                    self._measure(grads_due, hist_due)
            else:
                self._measure(grads_due, hist_due)
        except Exception as e:
            self._broken = True
            self._warn("gradient statistics switched off", e)

    def _measure(self, grads_due, hist_due):
        # runs with grad mode off: the parameters need no detach()
        grads = [p.grad for p in self._params]
        indices = None  # None: every parameter has a gradient (the usual case)
        for g in grads:
            if g is None:
                indices = [i for i, g in enumerate(grads) if g is not None]
                grads = [grads[i] for i in indices]
                break
        if grads_due and grads:
            norms = self._norms(grads)
            if not isinstance(norms, torch.Tensor) and norms[0].is_cpu:
                # reading CPU tensors costs no sync: the metrics now, while they are hot
                metrics = {}
                self._add_norms(metrics, "grad_norm", indices, [n.tolist() for n in norms])
                self._grad_norms = metrics
            else:
                self._grad_norms = (indices, norms)
            self._pending = True
        if not hist_due:
            return
        weights = self._params
        if self._params_on:
            self._param_norms = self._norms(weights)
        if self._update_on and self._snapshot is None:
            self._snapshot = ([p._version for p in self._params], [w.clone() for w in weights])
        hists = {}
        for i, g in zip(range(len(grads)) if indices is None else indices, grads):
            h = histogram(g, self._bins)
            if h is not None:
                hists["gradients/" + self._names[i]] = h
        if self._params_on:
            for name, w in zip(self._names, weights):
                h = histogram(w, self._bins)
                if h is not None:
                    hists["weights/" + name] = h
        self._hists = hists
        self._pending = True

    def _norms(self, tensors):
        """The L2 norm of each tensor, without a device sync: on the CPU a sequence of 0-d tensors
        (each read back cheaply), elsewhere one stacked tensor (read back with one sync)."""
        norms = None
        if self._foreach_ok:
            try:
                norms = torch._foreach_norm(tensors)
            except RuntimeError:  # e.g. sparse gradients
                pass
        if norms is None:
            norms = [_norm(t) for t in tensors]
        if norms and not norms[0].is_cpu:
            try:
                return torch.stack([n.float() for n in norms])
            except RuntimeError:  # on several devices
                pass
        return norms

    def _measure_update(self):
        versions, before = self._snapshot
        if all(p._version == v for p, v in zip(self._params, versions)):
            return  # the optimizer has not stepped yet (e.g. gradient accumulation)
        self._snapshot = None
        try:
            with torch.no_grad():
                after = [p.detach() for p in self._params]
                self._update = (self._norms(torch._foreach_sub(after, before)),
                                self._norms(before))
            self._pending = True
        except Exception as e:
            self._warn("update ratio switched off", e)
            self._update_on = False

    # -- logging ----------------------------------------------------------------------------------

    def _flush(self, final=False):
        run = self._run
        step = run.step
        if step < 0 and final:
            step = 0
        if step <= self._last_step:
            # no step yet (-1), or this step is logged already: keep the newest values for the next
            return
        self._last_step = step
        self._pending = False
        grad_norms, param_norms, update, hists = (
            self._grad_norms, self._param_norms, self._update, self._hists)
        self._grad_norms = self._param_norms = self._update = self._hists = None
        try:
            metrics = {}
            if type(grad_norms) is dict:
                metrics = grad_norms
            elif grad_norms is not None:
                self._add_norms(metrics, "grad_norm", grad_norms[0], _values(grad_norms[1]))
            if param_norms is not None:
                self._add_norms(metrics, "param_norm", None, _values(param_norms))
            if update is not None:
                self._add_ratios(metrics, *update)
            if metrics:
                run._log_at(metrics, step)
            if hists:
                for name, (edges, counts) in hists.items():
                    run._log_histogram_at(name, edges, counts, step)
        except Exception as e:
            self._broken = True
            self._warn("gradient statistics switched off", e)

    def _layer_squares(self, indices, values):
        """The sum of squares of `values` (per parameter; indices: theirs in _params, None for
        all), in total and per layer: {layer index: sum}."""
        if indices is None:
            indices = range(len(values))
        total = 0.0
        per_layer = {}
        layer_of = self._layer_of
        for i, v in zip(indices, values):
            sq = v * v
            total += sq
            layer = layer_of[i]
            per_layer[layer] = per_layer.get(layer, 0.0) + sq
        return total, per_layer

    def _add_norms(self, metrics, prefix, indices, values):
        slices = self._layer_slices
        if indices is None and slices is not None:  # the fast path: slices of one list
            squares = list(map(operator.mul, values, values))
            metrics[prefix] = math.sqrt(sum(squares))
            if self._per_layer:
                sqrt = math.sqrt
                for name, part in slices[prefix]:
                    metrics[name] = sqrt(sum(squares[part]))
            return
        total, per_layer = self._layer_squares(indices, values)
        metrics[prefix] = math.sqrt(total)
        if self._per_layer:
            names = self._metric_names[prefix]
            for layer, sq in per_layer.items():
                metrics[names[layer]] = math.sqrt(sq)

    def _add_ratios(self, metrics, delta_norms, weight_norms):
        d_total, d_layer = self._layer_squares(None, _values(delta_norms))
        w_total, w_layer = self._layer_squares(None, _values(weight_norms))
        metrics["update_ratio"] = _ratio(d_total, w_total)
        if self._per_layer:
            names = self._metric_names["update_ratio"]
            for layer, dsq in d_layer.items():
                metrics[names[layer]] = _ratio(dsq, w_layer[layer])

    # -- lifetime ---------------------------------------------------------------------------------

    def remove(self):
        """Stops watching: removes the hooks and logs what is pending. Idempotent."""
        for handle in self._handles:
            handle.remove()
        self._handles = []
        if self._collective is not None:
            self._collective.remove()
            self._collective = None
        run = self._run
        if run is None:
            return
        if self._pending and not self._broken:
            self._flush(final=True)
        run._remove_finish_hook(self.remove)
        self._run = None
        self._snapshot = None

    def _warn(self, what, error):
        warnings.warn("trainwatch.watch: %s: %s: %s" % (what, type(error).__name__, error),
                      TrainwatchWarning, stacklevel=2)


class CollectiveTimer:
    """dist/step_time and dist/time_to_collective of one rank under DistributedDataParallel.

    A step starts when the rank's previous step finished synchronising its gradients (the
    all-reduce of its last bucket completed: the ranks leave it together), or at the forward pass
    of the first step (and of the first after a forward without gradients, an evaluation). Its
    time to collective ends when the rank's first gradient bucket of the step reaches the
    all-reduce: optimizer step, data loading, forward and the rank's share of backward, the work a
    rank does alone; a slow rank has a large value, the ranks that wait for it normal ones and the
    same long step time. Passes under no_sync() reach no collective and belong to the step of the
    next one that does. On GPUs the times are those of the host (when the rank queued the work).

    The values are logged at the run's current step by the next forward pass (or remove()), like
    Watch's. The hook only reads a clock and wraps the all-reduce future: no sync, no wait.
    DDP has no way to remove a communication hook: after remove() it only forwards to the inner
    hook."""

    def __init__(self, ddp_model, run, comm_hook=None, comm_state=None):
        self._run = run
        self._start = None       # perf_counter() when the current step started
        self._first = None       # ... when its first bucket reached the all-reduce
        self._pending = None     # (step_time, time_to_collective) not logged yet
        self._last_step = -1
        if comm_hook is None:
            from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
            comm_hook, comm_state = default_hooks.allreduce_hook, ddp_model.process_group
        self._inner = comm_hook
        self._handle = ddp_model.register_forward_pre_hook(self._on_forward)
        try:
            ddp_model.register_comm_hook(comm_state, self._comm_hook)
        except Exception as e:  # e.g. a hook registered already: step times only
            self._inner = None
            warnings.warn("trainwatch.watch: dist/time_to_collective and dist/step_time are off "
                          "(%s: %s); pass your communication hook as watch(comm_hook=...) instead "
                          "of registering it" % (type(e).__name__, e), TrainwatchWarning, stacklevel=4)
            self.remove()

    def _on_forward(self, module, inputs):
        if not torch.is_grad_enabled():
            self._start = None  # evaluation: the next training step starts at its forward
            return
        if self._start is None:
            self._start = time.perf_counter()
        if self._pending is not None:
            self._flush()

    def _comm_hook(self, state, bucket):
        if self._first is None:
            self._first = time.perf_counter()
        future = self._inner(state, bucket)
        if self._run is not None and bucket.is_last():
            return future.then(self._on_synchronised)
        return future

    def _on_synchronised(self, future):
        # On the thread that completed the all-reduce; the training thread waits for this future
        # (DDP's end of backward) before it reads what is set here.
        end = time.perf_counter()
        start, first = self._start, self._first
        if start is not None and first is not None:
            self._pending = (end - start, max(first - start, 0.0))
        self._start, self._first = end, None
        return future.value()

    def _flush(self, final=False):
        run = self._run
        step = run.step
        if step < 0 and final:
            step = 0
        if step <= self._last_step:
            return  # keep the newest values for the run's next step
        step_time, to_collective = self._pending
        self._pending = None
        self._last_step = step
        run._log_at({"dist/step_time": step_time, "dist/time_to_collective": to_collective}, step)

    def remove(self):
        """Stops timing; logs what is pending. Idempotent."""
        if self._handle is not None:
            self._handle.remove()
            self._handle = None
        if self._run is not None and self._pending is not None:
            self._flush(final=True)
        self._run = None


def histogram(t, bins):
    """(edges, counts), lists of floats, of the finite values of tensor `t` in `bins`
    equal-width bins over their range (a constant tensor: [v - 0.5, v + 0.5]); None when no
    value is finite. Reads the range back from the device (a sync)."""
    t = _dense(t)
    if t.requires_grad:
        t = t.detach()
    if t.dtype not in (torch.float32, torch.float64):
        t = t.float()  # histc has no half-precision CPU kernel
    if t.numel() == 0:
        return None
    # aminmax and histc take any shape: no reshape (one op fewer)
    lo, hi = (v.item() for v in torch.aminmax(t))
    if not (math.isfinite(lo) and math.isfinite(hi)):
        t = t[torch.isfinite(t)]
        if t.numel() == 0:
            return None
        lo, hi = (v.item() for v in torch.aminmax(t))
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    counts = torch.histc(t, bins=bins, min=lo, max=hi).tolist()
    width = (hi - lo) / bins
    edges = [lo + i * width for i in range(bins)] + [hi]
    return edges, counts


def _dense(t):
    return t.coalesce().values() if t.is_sparse else t


def _norm(t):
    """L2 norm, accumulated in float32 at least (half precision would overflow)."""
    t = _dense(t)
    return torch.linalg.vector_norm(t, dtype=torch.promote_types(t.dtype, torch.float32))


def _values(norms):
    """Python floats of a stacked tensor or of a list of 0-d tensors (tolist(): cheaper than
    item() for a 0-d CPU tensor)."""
    if isinstance(norms, torch.Tensor):
        return norms.tolist()
    return [n.tolist() for n in norms]


def _ratio(delta_sq, weight_sq):
    if weight_sq == 0.0:
        return math.inf if delta_sq > 0.0 else 0.0
    return math.sqrt(delta_sq / weight_sq)
