"""A real torch.distributed job for the tests (test_distributed.py) and the benchmark
(bench/ddp_sdk_cost_bench.py): WORLD ranks started by torch.multiprocessing.spawn, the gloo backend on
the CPU, a small MLP under DistributedDataParallel, trainwatch in every rank with tw.watch.

    python3 ddp_job.py --server URL --project P --steps 60 [--world 4] [--fault ...]

Faults, each in one rank from one step on (the failures the tests expect trainwatch to catch):
    --slow-rank R --slow-from N --slow-work K      rank R's data loader does K rounds of costly
                                                   preprocessing per batch from step N (a straggler)
    --nan-rank R --nan-step N                      rank R's loss is NaN at step N
    --kill-rank R --kill-step N                    rank R SIGKILLs itself at step N; the others then
                                                   block in their collective as NCCL's would (gloo
                                                   raises on a dead peer: they catch that and wait,
                                                   heartbeats going, until the test ends the job)

Each rank writes <out>/rank<R>.json when done: its run id, the steps it trained, its RankInfo.
The parent exits once every rank has (without mp.spawn's join, which would end the other ranks
as soon as one dies). Without --server it trains without trainwatch (the benchmark's baseline).
"""
import argparse
import json
import os
import signal
import sys
import tempfile
import threading
import time
import warnings

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel

FEATURES = 16
BATCH = 32


def slow_preprocessing(rounds):
    """A costly augmentation of a batch: `rounds` 256x256 matrix products (~15 ms each here, one
    thread). Work, not a timer, so the straggler is slow the way a real one is."""
    a = torch.ones(256, 256) / 256
    for _ in range(rounds):
        a = torch.tanh(a @ a)
    return a


def loader(args, rank):
    """Batches of a fixed regression task, one per step; the slow rank's is slow from --slow-from.
    Yields (step, x, y)."""
    generator = torch.Generator().manual_seed(1000 + rank)
    target = torch.randn(FEATURES, 1, generator=torch.Generator().manual_seed(7))
    for step in range(args.steps):
        x = torch.randn(BATCH, FEATURES, generator=generator)
        if rank == args.slow_rank and step >= args.slow_from:
            slow_preprocessing(args.slow_work)
        yield step, x, x @ target


def worker(rank, args):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    dist.init_process_group("gloo", init_method="file://" + args.rendezvous, rank=rank,
                            world_size=args.world)
    run = None
    if args.server:
        import trainwatch as tw
        # After init_process_group: the ranks agree on the run id through its store.
        run = tw.init(project=args.project, name="ddp", config={"world": args.world, "lr": 0.05},
                      server=args.server, system_metrics=args.system_metrics,
                      heartbeat_interval_seconds=args.heartbeat, batch_max_delay_seconds=0.05,
                      flush_timeout_seconds=30)
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64),
                                torch.nn.ReLU(), torch.nn.Linear(64, 1))
    ddp = DistributedDataParallel(model)
    watch_warnings = []
    if run is not None and args.watch:
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        hook = {"": None, "fp16": default_hooks.fp16_compress_hook,
                "registered": default_hooks.fp16_compress_hook}[args.comm_hook]
        if args.comm_hook == "registered":  # the job's own hook, registered before watch()
            ddp.register_comm_hook(None, hook)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tw.watch(ddp, hist_every=0, log_every=args.grad_every,
                     comm_hook=hook if args.comm_hook == "fp16" else None)
        watch_warnings = [str(w.message) for w in caught]
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    steps = 0
    step_times = []  # seconds per loop iteration (data, forward, backward, optimizer, run.log)
    began = time.perf_counter()
    for step, x, y in loader(args, rank):
        if rank == args.kill_rank and step == args.kill_step:
            os.kill(os.getpid(), signal.SIGKILL)
        try:
            loss = torch.nn.functional.mse_loss(ddp(x), y)
            if rank == args.nan_rank and step == args.nan_step:
                loss = loss * float("nan")
            opt.zero_grad()
            loss.backward()
            opt.step()
        except RuntimeError:
            if args.kill_rank < 0:
                raise
            # A peer died mid-collective. NCCL would block here; gloo raised: block as NCCL does.
            threading.Event().wait()
        if run is not None:
            run.log({"loss": loss.item()}, step=step)
        now = time.perf_counter()
        step_times.append(now - began)
        began = now
        steps += 1
    result = {"rank": rank, "steps": steps, "step_times": step_times, "watch_warnings": watch_warnings}
    if run is not None:
        result.update(run=run.id, rank_info=run.rank_info.__dict__, stats=run.stats())
        run.finish()
    with open(os.path.join(args.out, "rank%d.json" % rank), "w") as f:
        json.dump(result, f)
    dist.destroy_process_group()


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--server", default="")
    p.add_argument("--project", default="ddp")
    p.add_argument("--world", type=int, default=4)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--out", required=True)
    p.add_argument("--watch", type=int, default=1)
    p.add_argument("--grad-every", type=int, default=1)
    p.add_argument("--comm-hook", default="", choices=["", "fp16", "registered"],
                   help="fp16: watch(comm_hook=fp16_compress_hook); registered: the job registers "
                        "it itself before watch()")
    p.add_argument("--system-metrics", type=float, default=0)
    p.add_argument("--heartbeat", type=float, default=0.5)
    p.add_argument("--slow-rank", type=int, default=-1)
    p.add_argument("--slow-from", type=int, default=0)
    p.add_argument("--slow-work", type=int, default=0)
    p.add_argument("--nan-rank", type=int, default=-1)
    p.add_argument("--nan-step", type=int, default=-1)
    p.add_argument("--kill-rank", type=int, default=-1)
    p.add_argument("--kill-step", type=int, default=-1)
    args = p.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    fd, args.rendezvous = tempfile.mkstemp(prefix="rendezvous-", dir=args.out)
    os.close(fd)
    os.unlink(args.rendezvous)  # the file store creates it
    context = mp.spawn(worker, args=(args,), nprocs=args.world, join=False)
    status = 0
    for process in context.processes:
        process.join()
        if process.exitcode != 0:
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
