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
from . import _distributed, _jsonable, _session, _settings, _trainwatch
from ._run import Config, Run, TrainwatchWarning

__all__ = ["init", "log", "log_histogram", "log_image", "log_text", "finish", "watch", "log_step",
           "timer", "timed", "Run", "Config", "TrainwatchWarning", "run"]
__version__ = "0.1.0"


def init(project=None, name=None, id=None, group=None, tags=None, config=None, server=None,
         api_key=None, mode=None, resume=False, system_metrics=True, rank=None, world_size=None,
         local_rank=None, host=None, gpu=None, **options):
    """Starts a run and makes it the current one (`trainwatch.run`); returns the Run. A run
    started earlier stays open (and current again once this one finishes).

    project, name, id, group, tags: the run's identity (id: default a new unique one; name: the
        display name, default the id). resume=True continues an existing run with this id.
    config: a dict, argparse.Namespace or dataclass; numpy/torch values become numbers, other
        values that are not JSON their str().
    server, api_key, mode ("online" or "offline"): default from the environment (module doc).
    system_metrics: True (CPU/memory/GPU/... every second), False, or an interval in seconds.
    rank, world_size, local_rank, host, gpu: this process's place in a distributed job, default
        from torch.distributed (once initialised) or the launcher's environment (RANK, WORLD_SIZE,
        LOCAL_RANK, SLURM_PROCID, ...). Every rank of a job joins one run: the id defaults to
        TRAINWATCH_RUN_ID, else the launcher's job id, else one the ranks agree on at init (see
        trainwatch._distributed and docs/distributed.md). Rank 0 sends the run's name, config,
        tags and graph; every rank its own points, heartbeats and status. gpu: the NVML index of
        the rank's GPU (default: its CUDA device); local rank 0 samples the host's CPU and memory.
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
    rank_info = _distributed.detect(rank=rank, world_size=world_size, local_rank=local_rank,
                                    host=host, gpu=gpu)
    if id is None:
        from ._run import _warn
        id = _distributed.shared_run_id(rank_info, warn=lambda message: _warn(message, 5))
    run_options = _settings.run_options(
        project=project, id=id, name=name, group=group, tags=tags,
        config_json=_jsonable.dumps(config_object) if config_object else "", resume=resume,
        system_metrics=system_metrics, rank_info=rank_info, **run_kw)
    client = _trainwatch.Client(client_options)
    native = client.start_run(run_options)
    run = Run(client, native, client_options, config_object, on_finish=_session.forget,
              rank_info=rank_info)
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
          update_ratio=True, graph=True, bins=64, stop_on=(), comm_hook=None, comm_state=None):
    """Watches a torch.nn.Module's gradients and weights; see trainwatch.torch.watch and the
    metric names in sdk/python/README.md. Imports torch (only this function needs it).
    stop_on: alert kinds (e.g. ["nan", "divergence", "grad_explosion"]) that make the run's
    should_stop() true once one fires (Run.stop_on). Under DistributedDataParallel (pass the
    wrapper) also dist/step_time and dist/time_to_collective per rank; comm_hook, comm_state: a
    DDP communication hook to wrap instead of the default all-reduce."""
    from . import torch as _torch
    return _torch.watch(model, run=run, log_every=log_every, hist_every=hist_every,
                        per_layer=per_layer, params=params, update_ratio=update_ratio,
                        graph=graph, bins=bins, stop_on=stop_on, comm_hook=comm_hook,
                        comm_state=comm_state)


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
