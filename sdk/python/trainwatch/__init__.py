"""trainwatch: log training metrics to a trainwatch server.

    import trainwatch as tw

    with tw.init(project="mnist", name="mlp", config={"lr": 1e-3}) as run:
        tw.watch(model)                      # gradient/weight health (trainwatch.torch)
        for step, batch in enumerate(loader):
            ...
            run.log({"loss": loss, "lr": lr})

`log()` hands the values to the C++ client and returns: batching, delivery (gRPC, HTTP as a
fallback), retries and spooling to disk while the server is unreachable happen on its threads.
Nothing in the training loop raises: problems are reported once each as a `TrainwatchWarning`
(the `warnings` module; filter or escalate them with `warnings.filterwarnings`).

Settings come from init()'s arguments, else the environment (TRAINWATCH_SERVER, TRAINWATCH_PROJECT,
TRAINWATCH_API_KEY, TRAINWATCH_MODE=offline, TRAINWATCH_SPOOL_DIR, TRAINWATCH_TLS_CA/_CERT/_KEY);
see sdk/python/README.md.
"""
from . import _jsonable, _session, _settings, _trainwatch
from ._run import Config, Run, TrainwatchWarning

__all__ = ["init", "log", "log_histogram", "log_image", "log_text", "finish", "watch", "log_step",
           "timer", "timed", "Run", "Config", "TrainwatchWarning", "run"]
__version__ = "0.1.0"


def init(project=None, name=None, id=None, group=None, tags=None, config=None, server=None,
         api_key=None, mode=None, resume=False, system_metrics=True, **options):
    """Starts a run and makes it the current one (`trainwatch.run`); returns the Run. A run
    started earlier stays open (and current again once this one finishes).

    project, name, id, group, tags: the run's identity (id: default a new unique one; name: the
        display name, default the id). resume=True continues an existing run with this id.
    config: a dict, argparse.Namespace or dataclass; numpy/torch values become numbers, other
        values that are not JSON their str().
    server, api_key, mode ("online" or "offline"): default from the environment (module doc).
    system_metrics: True (CPU/memory/GPU/... every second), False, or an interval in seconds.
    options: fields of the C++ ClientOptions (flush_timeout_seconds, transport="http", spool_dir,
        batch_max_delay_seconds, tls_ca_file, tls_cert_file, tls_key_file, ...) and RunOptions
        (nvml_library); see client.h. An https:// server is spoken to over TLS only; an API key is
        never sent in clear text to another machine (docs/sdk.md, "TLS").

    Raises ValueError/TypeError for bad arguments; an unreachable server is not an error (the
    data is spooled and one warning says so). Runs still open at interpreter exit are finished
    ("crashed" if an uncaught exception ended the program), waiting at most the client's flush
    timeout (flush_timeout_seconds, default 30 s).
    """
    client_kw, run_kw = _settings.split_options(options)
    client_options = _settings.client_options(server=server, api_key=api_key, mode=mode,
                                              **client_kw)
    config_object = _jsonable.to_json_object(config)
    run_options = _settings.run_options(
        project=project, id=id, name=name, group=group, tags=tags,
        config_json=_jsonable.dumps(config_object) if config_object else "", resume=resume,
        system_metrics=system_metrics, **run_kw)
    client = _trainwatch.Client(client_options)
    native = client.start_run(run_options)
    run = Run(client, native, client_options, config_object, on_finish=_session.forget)
    _session.adopt(run)
    run._report_warnings()
    return run


def log(metrics, step=None, time=None):
    """`trainwatch.run.log(...)` for the current run (see Run.log)."""
    current = _session.current_run()
    if current is not None:
        current.log(metrics, step=step, time=time)


def log_histogram(name, values, step=None, bins=64):
    """`trainwatch.run.log_histogram(...)` for the current run (see Run.log_histogram)."""
    current = _session.current_run()
    if current is not None:
        current.log_histogram(name, values, step=step, bins=bins)


def log_image(name, image, step=None, caption=None, dataformats=None):
    """`trainwatch.run.log_image(...)` for the current run (see Run.log_image)."""
    current = _session.current_run()
    if current is not None:
        current.log_image(name, image, step=step, caption=caption, dataformats=dataformats)


def log_text(name, text, step=None):
    """`trainwatch.run.log_text(...)` for the current run (see Run.log_text)."""
    current = _session.current_run()
    if current is not None:
        current.log_text(name, text, step=step)


def finish(status="finished"):
    """Finishes the current run (see Run.finish); does nothing without one."""
    current = _session.current_run(warn=False)
    if current is not None:
        current.finish(status)


def watch(model, run=None, log_every=1, hist_every=100, per_layer=True, params=True,
          update_ratio=True, graph=True, bins=64, stop_on=()):
    """Watches a torch.nn.Module's gradients and weights; see trainwatch.torch.watch and the
    metric names in sdk/python/README.md. Imports torch (only this function needs it).
    stop_on: alert kinds (e.g. ["nan", "divergence", "grad_explosion"]) that make the run's
    should_stop() true once one fires (Run.stop_on)."""
    from . import torch as _torch
    return _torch.watch(model, run=run, log_every=log_every, hist_every=hist_every,
                        per_layer=per_layer, params=params, update_ratio=update_ratio,
                        graph=graph, bins=bins, stop_on=stop_on)


def log_step(metrics=None, step=None, **more):
    """`trainwatch.run.log_step(...)` for the current run (see Run.log_step)."""
    current = _session.current_run()
    if current is not None:
        return current.log_step(metrics, step=step, **more)
    return None


def timer(phase):
    """`trainwatch.run.timer(phase)` for the current run (see Run.timer); without a run, a timer
    that measures nothing."""
    current = _session.current_run()
    if current is None:
        import contextlib
        return contextlib.nullcontext()
    return current.timer(phase)


def timed(iterable, phase="data"):
    """`trainwatch.run.timed(...)` for the current run (see Run.timed); without a run, `iterable`."""
    current = _session.current_run()
    return iterable if current is None else current.timed(iterable, phase)


def __getattr__(name):
    if name == "run":  # the current run, or None: always read as trainwatch.run
        return _session.current_run(warn=False)
    raise AttributeError("module 'trainwatch' has no attribute %r" % name)
