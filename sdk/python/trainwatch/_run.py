"""`Run`: one training run, logged through the C++ client.

Nothing a Run does in the training loop raises: values that cannot be logged are skipped with a
warning (once per metric name), and a server that cannot be reached is reported once per run with
a `TrainwatchWarning` while the client keeps the data in its spool.
"""
import operator
import queue
import threading
import time as _time
import warnings
from collections.abc import MutableMapping

from . import _jsonable, _trainwatch

# How often Run.log passes on the C++ client's warnings (they are queued until then).
_WARNING_CHECK_INTERVAL_SECONDS = 1.0
# The starts of two of the C++ client's warnings (sdk/cpp/src/sender.cc, client_core.cc).


class TrainwatchWarning(UserWarning):
    """Everything the SDK warns about: an unreachable server, dropped points, skipped values."""


def _warn(message, stacklevel=3):
    """Warns as if from the caller of the public method (stacklevel counts from here)."""
    warnings.warn(message, TrainwatchWarning, stacklevel=stacklevel)


class Config(MutableMapping):
    """The run's config as a dict; every change is sent to the server (merged into its config).

    Keys cannot be removed: the server merges configs and has no deletion."""

    def __init__(self, run, initial):
        self._run = run
        self._data = initial

    def __getitem__(self, key):
        return self._data[key]

    def __setitem__(self, key, value):
        self._run.set_config({key: value})

    def __delitem__(self, key):
        raise TypeError("config keys cannot be removed")

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)

    def update(self, *args, **kwargs):
        self._run.set_config(dict(*args, **kwargs))

    def __repr__(self):
        return "Config(%r)" % (self._data,)


class Run:
    """A run started by `trainwatch.init()`. Thread-safe as far as the C++ client is; the step
    counter is a plain attribute (updated under the GIL).

    A Run is a context manager: leaving the `with` block finishes it, as "crashed" when an
    exception is leaving the block, else "finished".
    """

    def __init__(self, client, native, options, config, on_finish=None, rank_info=None):
        self._client = client  # _trainwatch.Client, owned by this run (closed by finish())
        self._native = native  # _trainwatch.Run
        self._native_log = native.log
        self._flush_timeout_seconds = options.flush_timeout_seconds
        self._step = -1
        self._config = Config(self, config)
        self._finished = False
        self._rejected = set()     # metric names already warned about
        self._warned_unreachable = False
        self._next_check = _time.monotonic() + _WARNING_CHECK_INTERVAL_SECONDS
        self._finish_hooks = []    # callables run at the start of finish() (trainwatch.watch)
        self._on_finish = on_finish
        self._options = options    # the ClientOptions: where the alert feed connects
        self._feed = None          # _alerts.AlertFeed, started by the first use of the alerts API
        self._feed_lock = threading.Lock()
        # [(callback, {(alert id, fired_at) handed to it})]: each firing reaches each callback once,
        # whether the feed's thread or on_alert's replay of earlier alerts queued it first.
        self._alert_callbacks = []
        self._callbacks_lock = threading.Lock()
        # The callbacks run on a thread of their own, in the order queued: what the feed hands on
        # and on_alert's replay of earlier alerts alike (never the training thread, and a slow
        # callback never holds up the feed). (entry, alert) items; None ends it.
        self._callback_queue = queue.SimpleQueue()
        self._callback_thread = None
        self._stop_on = set()      # alert kinds or names that make should_stop() true
        self._stop_alert = None    # the alert that asked the job to stop
        self._stop_step = None     # the step at which should_stop() first answered True
        self._stop_recorded = False
        self._timers = None        # _loop.StepTimers, made by the first timer()
        self._rank_info = rank_info  # _distributed.RankInfo of a distributed job's rank, or None

    # -- identity ---------------------------------------------------------------------------------

    @property
    def project(self):
        return self._native.project

    @property
    def id(self):
        return self._native.id

    @property
    def rank_info(self):
        """This process's RankInfo (rank, world_size, local_rank, host, gpu_index) when it is a
        rank of a distributed job, else None."""
        return self._rank_info

    @property
    def rank(self):
        """This process's rank in a distributed job, else None."""
        return None if self._rank_info is None else self._rank_info.rank

    @property
    def step(self):
        """The step of the last `log()` call; -1 before the first."""
        return self._step

    @property
    def config(self):
        return self._config

    @property
    def finished(self):
        return self._finished

    @property
    def spool_path(self):
        return self._client.spool_path

    def stats(self):
        """The client's counters (ClientStats in client.h) as a dict."""
        return self._client.stats()

    # -- logging ----------------------------------------------------------------------------------

    def log(self, metrics, step=None, time=None):
        """Logs `metrics` (name -> number) at `step`, by default the last step + 1 (0 first).

        Values may be float, int, bool, numpy scalars or one-element tensors (reading a CUDA
        tensor waits for the GPU). Others (strings, multi-element tensors, ...) are skipped with
        one warning per name. `time`: unix seconds, default now. Never raises."""
        if step is None:
            step = self._step + 1
        elif type(step) is not int:
            try:
                step = operator.index(step)
            except TypeError:
                _warn("trainwatch: step must be an integer, got %r; not logged" % (step,))
                return
        if step < 0:
            _warn("trainwatch: step must not be negative, got %d; not logged" % step)
            return
        self._step = step
        if type(metrics) is not dict or (time is not None and type(time) is not float):
            metrics, time = self._coerce(metrics, time)
            if metrics is None:
                return
        try:
            rejected = self._native_log(metrics, step, time)
        except TypeError:  # a step beyond int64
            _warn("trainwatch: step %d is out of range; not logged" % step)
            return
        if rejected is not None:
            self._warn_rejected(rejected, metrics)
        now = _time.monotonic()
        if now >= self._next_check:
            self._next_check = now + _WARNING_CHECK_INTERVAL_SECONDS
            self._report_warnings()

    def _log_at(self, metrics, step):
        """Logs `metrics` (a dict of floats) at `step` without moving the step counter: the
        measurements of trainwatch.watch, which follow the user's steps."""
        if not self._finished:
            self._native_log(metrics, step, None)

    def _log_histogram_at(self, name, edges, counts, step):
        """Logs a histogram known to be well formed (trainwatch.watch) without checks."""
        if not self._finished:
            self._native.log_histogram(step, name, edges, counts)

    def _coerce(self, metrics, time):
        try:
            metrics = dict(metrics)
        except (TypeError, ValueError):
            _warn("trainwatch: log() takes a dict of metrics, got %s; not logged"
                  % type(metrics).__name__)
            return None, None
        if time is not None:
            try:
                time = float(time)
            except (TypeError, ValueError):
                _warn("trainwatch: time must be unix seconds, got %r; logged with the current "
                      "time" % (time,))
                time = None
        return metrics, time

    def _warn_rejected(self, keys, metrics):
        for key in keys:
            if key in self._rejected:
                continue
            self._rejected.add(key)
            value = metrics.get(key)
            if not isinstance(key, str):
                why = "metric names must be str, got %s" % type(key).__name__
            else:
                why = "value is not one number: %s" % _describe(value)
            _warn("trainwatch: metric %r skipped (%s); later values of it are skipped without "
                  "a warning" % (key, why), stacklevel=4)

    def log_histogram(self, name, values, step=None, bins=64):
        """Logs a histogram named `name` at `step` (default: the current step, see `step`).

        `values`: raw values (list, numpy array, tensor; non-finite ones are left out) binned into
        `bins` equal-width bins, or a pair (edges, counts) with len(edges) == len(counts) + 1.
        A bad histogram is skipped with a warning."""
        from . import _histogram
        if step is None:
            step = max(self._step, 0)
        try:
            if isinstance(values, tuple) and len(values) == 2:
                edges, counts = _histogram.check(*values)
            else:
                computed = _histogram.from_values(values, bins)
                if computed is None:
                    return  # nothing finite to count
                edges, counts = computed
            self._native.log_histogram(operator.index(step), str(name), edges, counts)
        except Exception as e:  # never into the training loop
            _warn("trainwatch: histogram %r skipped: %s" % (name, e))

    def log_image(self, name, image, step=None, caption=None, dataformats=None):
        """Logs an image (or several) of tag `name` at `step` (default: the current step, see `step`).

        `image`: encoded bytes (PNG, JPEG, GIF or WebP, sent as they are); a numpy array, torch
        tensor or PIL image, encoded here as PNG; or a list of these, logged as indices 0..n-1 of
        the tag and step. Arrays are channels-last unless `dataformats` says otherwise: H x W,
        H x W x C (C = 1, 3 or 4), N x H x W x C for N images; "CHW" and "NCHW" for channels-first
        tensors. uint8 values are used as they are, floats in [0, 1] are scaled by 255 (details in
        sdk/python/README.md). `caption`: a str, or one per image of a list.
        A bad image is skipped with a warning; the others are logged."""
        from . import _image
        if step is None:
            step = max(self._step, 0)
        try:
            step = operator.index(step)
            name = str(name)
            if step < 0:
                raise ValueError("step must not be negative, got %d" % step)
            items = list(image) if isinstance(image, (list, tuple)) else [image]
            captions = list(caption) if isinstance(caption, (list, tuple)) else None
        except Exception as e:  # never into the training loop
            _warn("trainwatch: image %r skipped: %s" % (name, e))
            return
        index = 0  # of the next image: a batch array holds several
        for item in items:
            try:
                encoded = _image.encode(item, dataformats)
            except Exception as e:
                _warn("trainwatch: image %r at step %d (index %d) skipped: %s" % (name, step, index, e))
                index += 1
                continue
            for data in encoded:
                text = caption if captions is None else (captions[index] if index < len(captions) else None)
                try:
                    self._native.log_image(step, name, data, "" if text is None else str(text), index)
                except Exception as e:
                    _warn("trainwatch: image %r at step %d (index %d) skipped: %s"
                          % (name, step, index, e))
                index += 1

    def log_text(self, name, text, step=None):
        """Logs `text` (a str, Markdown as TensorBoard's text plugin shows it) of tag `name` at `step`
        (default: the current step). Logging the same tag and step again replaces it."""
        if step is None:
            step = max(self._step, 0)
        try:
            step = operator.index(step)
            if step < 0:
                raise ValueError("step must not be negative, got %d" % step)
            self._native.log_text(step, str(name), str(text))
        except Exception as e:  # never into the training loop
            _warn("trainwatch: text %r skipped: %s" % (name, e))

    def set_config(self, config):
        """Merges `config` (a dict, argparse.Namespace or dataclass) into the run's config.
        Values that are not JSON become numbers, lists or their str()."""
        update = _jsonable.to_json_object(config)
        _jsonable.merge(self._config._data, update)
        self._native.set_config(_jsonable.dumps(update))

    def set_tags(self, tags, replace=False):
        """Adds `tags` to the run's tags (replaces them with replace=True)."""
        if isinstance(tags, str):
            tags = [tags]
        self._native.set_tags([str(t) for t in tags], bool(replace))

    def set_graph(self, graph):
        """Sets the run's model graph: a JSON string or a JSON-serialisable dict."""
        if not isinstance(graph, str):
            graph = _jsonable.dumps(_jsonable.to_jsonable(graph))
        self._native.set_graph(graph)

    # -- alerts: the loop back to the training job (_alerts.py, docs/sdk.md "Alerts") -----------

    @property
    def alerts(self):
        """The run's alerts received so far (dicts as GET /api/v1/alerts shows them, newest state
        of each, in order of arrival). The first use starts receiving them."""
        feed = self._alert_feed()
        return feed.alerts() if feed is not None else []

    def on_alert(self, callback):
        """Calls `callback(alert)` on the SDK's alert callback thread (never the training thread)
        once per firing of each of the run's alerts, including those raised before this call, in
        the order they arrived. Keep it short; an exception it raises is a warning. Returns
        `callback`."""
        entry = (callback, set())
        with self._callbacks_lock:
            self._alert_callbacks.append(entry)
            if self._callback_thread is None:
                self._callback_thread = threading.Thread(
                    target=self._callback_loop, name="trainwatch-alert-callbacks", daemon=True)
                self._callback_thread.start()
        feed = self._alert_feed()
        if feed is not None:
            for alert in feed.alerts():
                if alert.get("fired_at"):
                    self._callback_queue.put((entry, alert))
        return callback

    def stop_on(self, kinds):
        """Makes should_stop() true once an alert of one of `kinds` (detector kinds such as
        "divergence", "nan", or rule names) fires on this run. Rules and detectors whose
        alerting-file entry says `action: stop` need no listing."""
        if isinstance(kinds, str):
            kinds = [kinds]
        self._stop_on.update(str(k) for k in kinds)
        feed = self._alert_feed()
        if feed is not None:
            for alert in feed.alerts():
                if alert.get("fired_at"):
                    self._check_stop(alert)

    def should_stop(self):
        """True once an alert that asks the job to stop has fired (action: stop, or a kind given
        to stop_on / watch(stop_on=...)): checkpoint, then finish. Costs an attribute read; the
        first call starts receiving alerts. finish() records on the run that the job stopped."""
        if self._stop_alert is None:
            if self._feed is None:
                self._alert_feed()
            return False
        if self._stop_step is None:
            self._stop_step = max(self._step, 0)
        return True

    @property
    def stop_reason(self):
        """The alert that made should_stop() true, or None."""
        return self._stop_alert

    def record_stop(self, checkpoint=None):
        """Records on the run that the job stopped because of stop_reason: the config key
        `stopped_by_alert` ({step, alert_id, alert_kind, alert_name, alert_step, message,
        checkpoint}), a text `trainwatch/stopped` at the step and the tag `stopped_by_alert`.
        `checkpoint`: where the final checkpoint went. finish() calls it when should_stop()
        answered True and it was not called. Does nothing without a stop_reason."""
        alert = self._stop_alert
        if alert is None or self._finished:
            return
        self._stop_recorded = True
        step = max(self._step, 0)
        record = {"step": step, "alert_id": alert.get("id"), "alert_kind": alert.get("kind"),
                  "alert_name": alert.get("name"), "alert_step": alert.get("step"),
                  "message": alert.get("message", "")}
        if checkpoint is not None:
            record["checkpoint"] = str(checkpoint)
        self.set_config({"stopped_by_alert": record})
        self.set_tags(["stopped_by_alert"])
        self.log_text("trainwatch/stopped", "stopped at step %d because of alert %s (%s, %s) at "
                      "step %s: %s%s" % (step, alert.get("id"), alert.get("kind"), alert.get("name"),
                                         alert.get("step"), alert.get("message", ""),
                                         "; checkpoint " + str(checkpoint) if checkpoint else ""),
                      step=step)

    def _alert_feed(self):
        """The run's AlertFeed, started on first use; None offline or once finished."""
        if self._feed is not None or self._finished:
            return self._feed
        if self._options.mode == _trainwatch.Mode.OFFLINE:
            return None
        from . import _alerts
        with self._feed_lock:
            if self._feed is None:
                o = self._options
                tls = (_alerts.ssl_context(o.tls_ca_file, o.tls_cert_file, o.tls_key_file)
                       if o.server.startswith("https://") else None)
                feed = _alerts.AlertFeed(o.server, self.project, self.id, self._on_firing,
                                         api_key=o.api_key, tls_context=tls)
                feed.start()
                self._feed = feed
        return self._feed

    def _on_firing(self, alert):
        # On the feed's thread: should_stop() sees it at once; the callbacks on their thread.
        self._check_stop(alert)
        with self._callbacks_lock:
            entries = list(self._alert_callbacks)
        for entry in entries:
            self._callback_queue.put((entry, alert))

    def _stop_callbacks(self):
        # The callbacks already queued run first, within the flush timeout (unless finish() was
        # called from a callback: its own thread then ends after it).
        self._callback_queue.put(None)
        thread = self._callback_thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(self._flush_timeout_seconds)

    def _callback_loop(self):
        while True:
            item = self._callback_queue.get()
            if item is None:
                return
            self._call_once(*item)

    def _call_once(self, entry, alert):
        callback, handed = entry
        key = (alert["id"], alert.get("fired_at") or 0)
        with self._callbacks_lock:
            if key in handed:
                return
            handed.add(key)
        self._call(callback, alert)

    def _check_stop(self, alert):
        if self._stop_alert is not None:
            return
        if ((alert.get("labels") or {}).get("action") == "stop" or alert.get("kind") in self._stop_on
                or alert.get("name") in self._stop_on):
            self._stop_alert = alert

    @staticmethod
    def _call(callback, alert):
        try:
            callback(alert)
        except Exception as e:  # the user's callback must not end the feed
            _warn("trainwatch: on_alert callback raised %s: %s" % (type(e).__name__, e), stacklevel=2)

    # -- training-loop helpers (_loop.py) -----------------------------------------------------------

    def timer(self, phase):
        """A context manager that adds the time spent inside it to `phase` ("data", "forward",
        "backward", "optimizer", ...) of the current step; log_step() logs it as time/<phase>."""
        return self._step_timers().timer(phase)

    def timed(self, iterable, phase="data"):
        """Iterates `iterable` (a DataLoader), timing each next() as `phase`."""
        return self._step_timers().timed(iterable, phase)

    def log_step(self, metrics=None, step=None, **more):
        """Logs one training step: `metrics` (and keyword metrics), the phase times measured since
        the last log_step as time/<phase> (seconds), and time/step, the time since the last
        log_step (the whole step). Returns the step logged."""
        values = dict(metrics or {}, **more)
        values.update(self._step_timers().take())
        self.log(values, step=step)
        return self._step

    def _step_timers(self):
        if self._timers is None:
            from . import _loop
            self._timers = _loop.StepTimers()
        return self._timers

    # -- delivery ---------------------------------------------------------------------------------

    def flush(self, timeout=None):
        """Waits until everything logged so far is acknowledged by the server (or spooled, in
        offline mode), at most `timeout` seconds (default: the client's flush timeout).
        Returns True if everything was delivered."""
        if self._finished:
            return True
        delivered = self._client.flush(self._flush_timeout_seconds if timeout is None
                                       else float(timeout))
        self._report_warnings()
        return delivered

    def finish(self, status="finished"):
        """Marks the run finished ("finished" or "crashed"), delivers what is left within the
        client's flush timeout and closes the client; what could not be delivered stays in the
        spool (one warning says where). Idempotent; later log() calls are ignored. When
        should_stop() answered True, records the stop first (record_stop) unless the loop did;
        stops receiving alerts."""
        if self._finished:
            return
        if self._stop_step is not None and not self._stop_recorded:
            self.record_stop()
        if self._feed is not None:
            self._feed.stop()
        self._stop_callbacks()
        for hook in list(self._finish_hooks):
            try:
                hook()
            except Exception as e:  # a watch hook must not keep the run from finishing
                _warn("trainwatch: %s while finishing: %s" % (type(e).__name__, e))
        self._finished = True
        self._native.finish(status)
        self._client.close()
        self._report_warnings()
        if self._on_finish is not None:
            self._on_finish(self)

    def _add_finish_hook(self, hook):
        self._finish_hooks.append(hook)

    def _remove_finish_hook(self, hook):
        if hook in self._finish_hooks:
            self._finish_hooks.remove(hook)

    def _report_warnings(self):
        """Re-issues the C++ client's queued warnings as TrainwatchWarnings. An unreachable
        server is reported once: after "cannot reach the server" the exit-time note that data
        was left in the spool (the same directory) is not repeated."""
        for kind, message in self._client.take_warnings():
            if kind == _trainwatch.WarningKind.SERVER_UNREACHABLE:
                self._warned_unreachable = True
            elif kind == _trainwatch.WarningKind.LEFT_IN_SPOOL and self._warned_unreachable:
                continue
            _warn("trainwatch: " + message, stacklevel=4)

    # -- context manager --------------------------------------------------------------------------

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.finish("crashed" if exc_type is not None else "finished")
        return False

    def __repr__(self):
        return "<trainwatch.Run %s/%s%s step=%d%s>" % (
            self.project, self.id, "" if self._rank_info is None else " rank=%d" % self.rank,
            self._step, " finished" if self._finished else "")


def _describe(value):
    shape = getattr(value, "shape", None)
    if shape is not None:
        return "%s of shape %s" % (type(value).__name__, tuple(shape))
    text = repr(value)
    return "%s %s" % (type(value).__name__, text if len(text) <= 40 else text[:37] + "...")
