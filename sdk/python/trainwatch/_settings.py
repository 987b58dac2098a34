"""From `trainwatch.init` arguments and the environment to the C++ client's option structs.

An argument given to init() wins over its environment variable, which wins over the default:

    TRAINWATCH_SERVER     server URL (default http://127.0.0.1:8080)
    TRAINWATCH_PROJECT    project (default "default")
    TRAINWATCH_API_KEY    API key, sent as `Authorization: Bearer <key>`
    TRAINWATCH_MODE       "online" (default) or "offline" (write the spool only)
    TRAINWATCH_SPOOL_DIR  where undelivered batches are kept (default ~/.cache/trainwatch/spool)
    TRAINWATCH_TLS_CA     PEM CA bundle that signed an https:// server's certificate (tls_ca_file)
    TRAINWATCH_TLS_CERT   PEM client certificate for mutual TLS (tls_cert_file)
    TRAINWATCH_TLS_KEY    its PEM private key (tls_key_file)
"""
import os

from . import _trainwatch

MODES = {"online": _trainwatch.Mode.ONLINE, "offline": _trainwatch.Mode.OFFLINE}
TRANSPORTS = {"auto": _trainwatch.Transport.AUTO, "grpc": _trainwatch.Transport.GRPC,
              "http": _trainwatch.Transport.HTTP}
OVERFLOW = {"drop_oldest": _trainwatch.OverflowPolicy.DROP_OLDEST,
            "drop_newest": _trainwatch.OverflowPolicy.DROP_NEWEST,
            "block": _trainwatch.OverflowPolicy.BLOCK}

# Extra keyword arguments of init() that set a field of ClientOptions / RunOptions (client.h).
CLIENT_FIELDS = ("grpc_target", "transport", "spool_max_bytes", "memory_max_bytes",
                 "buffer_records", "overflow", "batch_max_points", "batch_max_bytes", "batch_max_delay_seconds",
                 "heartbeat_interval_seconds", "backoff_initial_seconds", "backoff_max_seconds",
                 "ack_timeout_seconds", "flush_timeout_seconds", "secret_patterns",
                 "tls_ca_file", "tls_cert_file", "tls_key_file")
# TLS files: option -> environment variable.
TLS_FILES = {"tls_ca_file": "TRAINWATCH_TLS_CA", "tls_cert_file": "TRAINWATCH_TLS_CERT",
             "tls_key_file": "TRAINWATCH_TLS_KEY"}
RUN_FIELDS = ("nvml_library",)

DEFAULT_SYSTEM_METRICS_INTERVAL = 1.0


def _env(name):
    value = os.environ.get(name)
    return value if value else None


def _choice(table, value, what):
    if not isinstance(value, str):
        return value  # already the enum
    try:
        return table[value.lower()]
    except KeyError:
        raise ValueError("%s must be one of %s, got %r" % (what, ", ".join(sorted(table)), value))


def client_options(server=None, api_key=None, mode=None, spool_dir=None, **options):
    """ClientOptions for init()'s arguments. Raises ValueError/TypeError on a bad option.

    The C++ client's warnings are not printed by it: the binding queues them and the package
    re-issues them through the `warnings` module (Run._report_warnings)."""
    o = _trainwatch.ClientOptions()
    o.server = (server or _env("TRAINWATCH_SERVER") or o.server).rstrip("/")
    o.api_key = api_key or _env("TRAINWATCH_API_KEY") or ""
    o.mode = _choice(MODES, mode or _env("TRAINWATCH_MODE") or "online", "mode")
    o.spool_dir = spool_dir or _env("TRAINWATCH_SPOOL_DIR") or ""
    for key, variable in TLS_FILES.items():
        setattr(o, key, _env(variable) or "")
    for key, value in options.items():
        if key not in CLIENT_FIELDS:
            raise TypeError("init() got an unexpected keyword argument %r" % key)
        if key == "transport":
            value = _choice(TRANSPORTS, value, "transport")
        elif key == "overflow":
            value = _choice(OVERFLOW, value, "overflow")
        elif key == "secret_patterns":
            value = [str(p) for p in value]
        elif key in TLS_FILES:
            value = "" if value is None else os.fspath(value)
        setattr(o, key, value)
    _check_tls_files(o)
    return o


def _check_tls_files(o):
    """A TLS file that is not there is a bad argument, said now rather than at every connection."""
    for key, variable in TLS_FILES.items():
        path = getattr(o, key)
        if path and not os.path.isfile(path):
            raise ValueError("%s (or %s): no such file: %r" % (key, variable, path))
    if bool(o.tls_cert_file) != bool(o.tls_key_file):
        raise ValueError("tls_cert_file and tls_key_file go together: give both or neither")


def run_options(project=None, id=None, name=None, group=None, tags=None, config_json="",
                resume=False, system_metrics=True, rank_info=None, **options):
    """RunOptions for init()'s arguments. `system_metrics`: True (every second), False, or an
    interval in seconds. `rank_info`: a _distributed.RankInfo for a rank of a distributed job:
    its batches carry it, its host's local rank 0 samples the machine, each rank its own GPU."""
    o = _trainwatch.RunOptions()
    if rank_info is not None:
        o.rank.rank = rank_info.rank
        o.rank.world_size = rank_info.world_size
        o.rank.local_rank = rank_info.local_rank
        o.rank.host = rank_info.host
        o.machine_metrics = rank_info.local_rank == 0
        o.gpu_metrics = rank_info.gpu_index >= 0
        o.gpu_index = rank_info.gpu_index
    o.project = project or _env("TRAINWATCH_PROJECT") or ""
    o.id = "" if id is None else str(id)
    o.name = "" if name is None else str(name)
    o.group = "" if group is None else str(group)
    if isinstance(tags, str):
        tags = [tags]
    o.tags = [str(t) for t in (tags or ())]
    o.config_json = config_json
    o.resume = bool(resume)
    if system_metrics is True:
        o.system_metrics_interval_seconds = DEFAULT_SYSTEM_METRICS_INTERVAL
    elif not system_metrics:
        o.system_metrics_interval_seconds = 0.0
    else:
        o.system_metrics_interval_seconds = float(system_metrics)
    for key, value in options.items():
        if key not in RUN_FIELDS:
            raise TypeError("init() got an unexpected keyword argument %r" % key)
        setattr(o, key, value)
    return o


def split_options(options):
    """init()'s **options split into (client options, run options)."""
    client = {k: v for k, v in options.items() if k not in RUN_FIELDS}
    run = {k: v for k, v in options.items() if k in RUN_FIELDS}
    return client, run
