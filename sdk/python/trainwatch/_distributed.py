"""Distributed jobs: which rank this process is, and the run id every rank of the job shares.

A torch.distributed job is one trainwatch run (docs/distributed.md). Every rank calls
`trainwatch.init()`; `detect()` says which rank it is and `shared_run_id()` which run it joins.

Rank, world size, local rank: init()'s arguments, else torch.distributed's (when the process group
is already initialised: get_rank(), get_world_size()), else the launchers' environment:

    rank         RANK, else SLURM_PROCID
    world size   WORLD_SIZE, else SLURM_NTASKS
    local rank   LOCAL_RANK, else SLURM_LOCALID, else rank % LOCAL_WORLD_SIZE, else the rank
                 itself: right on one host (torch.multiprocessing.spawn); on more hosts pass
                 local_rank= (only local rank 0 samples the machine's CPU, memory, disk, network)
    GPU          gpu=, else torch's current CUDA device once CUDA is initialised, else the local
                 rank; through CUDA_VISIBLE_DEVICES when it lists indices (_gpu_index)
    host         socket.gethostname()

A process is a rank of a distributed run when init() was given `rank=`, or the world size found is
larger than 1 (RANK=0 WORLD_SIZE=1 under torchrun is an ordinary run).

Run id, when init() was not given `id=`; the first that applies:

 1. TRAINWATCH_RUN_ID (for any run, distributed or not; a parent that starts the ranks itself,
    torch.multiprocessing.spawn for one, can set it before it spawns them);
 2. TORCHELASTIC_RUN_ID, the rendezvous id torchrun gives every agent (unless it is "none",
    torchrun's default without --rdzv-id and --standalone): "elastic-<id>";
 3. SLURM_JOB_ID, with SLURM_STEP_ID inside a job step: "slurm-<job>[.<step>]";
 4. torch.distributed's store, when the process group is initialised before init(): rank 0 draws a
    new id and sets it under "trainwatch/run_id/<n>" (n counts this process's distributed runs, the
    same on every rank when each starts its runs in the same order); the other ranks read it. It
    happens once, in init(): the training loop never waits on it;
 5. derived from what every rank of the job shares: MASTER_ADDR, MASTER_PORT, the world size,
    PMIX_NAMESPACE (mpirun's job), and, when the job runs on one host (_one_host: decided from
    values every rank sees alike) and a multiprocessing parent started the rank (mp.spawn), the
    parent's pid and start time with the host's boot id: "job-<12 hex digits of their SHA-256>".
    Limits: without such a parent or PMIX_NAMESPACE, a later job with the same master address,
    port and world size joins the same run (a warning says so); on several hosts each running
    mp.spawn with the rendezvous given in code (no MASTER_ADDR, no LOCAL_WORLD_SIZE), each host's
    ranks make a run of their own. Set TRAINWATCH_RUN_ID, or call init() after
    init_process_group(), to be sure.
"""
import hashlib
import multiprocessing
import os
import socket
import sys
import uuid
from dataclasses import dataclass

STORE_KEY = "trainwatch/run_id/%d"
LOOPBACK = ("localhost", "127.0.0.1", "::1")

_store_runs = 0  # distributed runs this process has started through the store (STORE_KEY's n)


@dataclass(frozen=True)
class RankInfo:
    """One rank of a distributed job. world_size 0: unknown. gpu_index: the NVML index of the
    rank's own GPU, -1 when it has none known."""
    rank: int
    world_size: int
    local_rank: int
    host: str
    gpu_index: int = -1


def _int(value, what, minimum=0):
    """`value` (an argument or an environment variable's text) as an int >= minimum; ValueError
    naming `what` otherwise."""
    if isinstance(value, bool):
        raise TypeError("%s must be an integer, got %r" % (what, value))
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValueError("%s must be an integer, got %r" % (what, value)) from None
    if number < minimum:
        raise ValueError("%s must be at least %d, got %d" % (what, minimum, number))
    return number


def _from_env(environ, names, minimum=0):
    """The first of `names` set in the environment, as an int; None when none is."""
    for name in names:
        value = environ.get(name)
        if value not in (None, ""):
            return _int(value, "environment variable " + name, minimum)
    return None


def _process_group():
    """torch.distributed when this process has imported it and initialised its process group, else
    None. Never imports torch (init() must stay cheap for jobs that do not use it)."""
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            return dist
    except Exception:  # a half-imported or unusual torch build: as if not initialised
        pass
    return None


def _one_host(environ, world_size):
    """Whether values every rank sees alike say the job runs on one host: LOCAL_WORLD_SIZE equals
    the world size, or MASTER_ADDR is a loopback address (no other host can reach it), or neither
    variable is set (the rendezvous was given in code: assumed one host, see the module doc)."""
    local_world = environ.get("LOCAL_WORLD_SIZE")
    if local_world:
        return local_world == str(world_size)
    addr = environ.get("MASTER_ADDR")
    if addr:
        return addr in LOOPBACK or addr.startswith("127.")
    return True


def detect(rank=None, world_size=None, local_rank=None, host=None, gpu=None, environ=None):
    """The RankInfo of this process, or None when it is not a rank of a distributed job (see the
    module doc). Raises ValueError/TypeError for a bad argument or environment variable, naming it."""
    environ = os.environ if environ is None else environ
    explicit = rank is not None
    dist = None if explicit and world_size is not None else _process_group()
    if rank is not None:
        rank = _int(rank, "rank")
    elif dist is not None:
        rank = dist.get_rank()
    else:
        rank = _from_env(environ, ("RANK", "SLURM_PROCID"))
    if world_size is not None:
        world_size = _int(world_size, "world_size", 1)
    elif dist is not None:
        world_size = dist.get_world_size()
    else:
        world_size = _from_env(environ, ("WORLD_SIZE", "SLURM_NTASKS"), 1) or 0
    if rank is None or not (explicit or world_size > 1 or world_size == 0):
        return None
    if world_size and rank >= world_size:
        raise ValueError("rank %d is not below the world size %d" % (rank, world_size))
    host = socket.gethostname() if host is None else str(host)
    if local_rank is not None:
        local_rank = _int(local_rank, "local_rank")
    else:
        local_rank = _from_env(environ, ("LOCAL_RANK", "SLURM_LOCALID"))
        if local_rank is None:
            per_host = _from_env(environ, ("LOCAL_WORLD_SIZE",), 1)
            local_rank = rank % per_host if per_host else rank
    return RankInfo(rank, world_size, local_rank, host, _gpu_index(gpu, local_rank, environ))


def _gpu_index(gpu, local_rank, environ):
    """The NVML index of the rank's GPU: `gpu` if given, else torch's current CUDA device when CUDA
    is initialised, else the local rank (the launchers' convention: device = LOCAL_RANK); a CUDA
    index goes through CUDA_VISIBLE_DEVICES when that lists indices. NVML numbers devices in PCI
    order: pass gpu= when CUDA_DEVICE_ORDER is not PCI_BUS_ID and the GPUs differ."""
    if gpu is not None:
        return _int(gpu, "gpu")
    device = local_rank
    cuda = sys.modules.get("torch.cuda")
    try:
        if cuda is not None and cuda.is_initialized():
            device = cuda.current_device()
    except Exception:
        pass
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    if visible:
        ids = [v.strip() for v in visible.split(",")]
        if device < len(ids) and ids[device].isdigit():
            return int(ids[device])
    return device


def shared_run_id(info, environ=None, warn=None):
    """The run id of a run without init(id=...), per the module doc: TRAINWATCH_RUN_ID for any run;
    for a rank (`info` not None) the launcher's job id, the process group's store or a derived id.
    None: the client draws a new id (a run that is not distributed). `warn(message)` is called when
    the id is derived from values a later job may repeat."""
    environ = os.environ if environ is None else environ
    if environ.get("TRAINWATCH_RUN_ID"):
        return environ["TRAINWATCH_RUN_ID"]
    if info is None:
        return None
    elastic = environ.get("TORCHELASTIC_RUN_ID")
    if elastic and elastic != "none":
        return "elastic-" + elastic
    job = environ.get("SLURM_JOB_ID")
    if job:
        step = environ.get("SLURM_STEP_ID")
        return "slurm-" + job + ("." + step if step else "")
    dist = _process_group()
    if dist is not None:
        published = _from_store(dist, info)
        if published is not None:
            return published
    facts, repeatable = _shared_facts(environ, info)
    if repeatable and warn is not None:
        warn("trainwatch: the ranks' run id was derived from MASTER_ADDR, MASTER_PORT and the world "
             "size only: a later job with the same values joins the same run. Set TRAINWATCH_RUN_ID "
             "(or call trainwatch.init() after torch.distributed.init_process_group())")
    return "job-" + hashlib.sha256("\n".join(facts).encode()).hexdigest()[:12]


def _from_store(dist, info):
    """Rank 0 sets a new id in the default process group's store, the others read it; None when the
    store cannot be used."""
    global _store_runs
    try:
        from torch.distributed import distributed_c10d
        store = distributed_c10d._get_default_store()
    except Exception:
        return None
    key = STORE_KEY % _store_runs
    _store_runs += 1
    try:
        if info.rank == 0:
            run_id = "ddp-" + uuid.uuid4().hex[:12]
            store.set(key, run_id)
            return run_id
        return store.get(key).decode()  # waits (at most the store's timeout) for rank 0's init()
    except Exception:
        return None


def _shared_facts(environ, info):
    """(the values every rank of the job shares, whether a later job may share them all)."""
    facts = ["MASTER_ADDR=" + environ.get("MASTER_ADDR", ""),
             "MASTER_PORT=" + environ.get("MASTER_PORT", ""),
             "WORLD_SIZE=%d" % info.world_size]
    repeatable = True
    if environ.get("PMIX_NAMESPACE"):
        facts.append("PMIX_NAMESPACE=" + environ["PMIX_NAMESPACE"])
        repeatable = False
    launcher = _multiprocessing_parent()
    if launcher is not None and _one_host(environ, info.world_size):
        facts.append("parent=" + launcher)
        repeatable = False
    return facts, repeatable


def _multiprocessing_parent():
    """"<boot id>/<pid>/<start time>" of the process that started this one through multiprocessing
    (torch.multiprocessing.spawn), which every rank it started shares; None otherwise or when /proc
    cannot tell."""
    parent = multiprocessing.parent_process()
    if parent is None or parent.pid is None:
        return None
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
        with open("/proc/%d/stat" % parent.pid) as f:
            stat = f.read()
        start = stat[stat.rindex(")") + 2:].split()[19]  # field 22, starttime, after comm
    except (OSError, ValueError, IndexError):
        return None
    return "%s/%d/%s" % (boot, parent.pid, start)
