"""trainwatch._distributed: which rank a process is and the run id a job's ranks share, from init()'s
arguments and the launchers' environments (torchrun, SLURM, mpirun, torch.multiprocessing.spawn)."""
import multiprocessing
import socket

import pytest

import trainwatch as tw
from trainwatch import _distributed as d

TORCHRUN = {"RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4",
            "MASTER_ADDR": "node-a", "MASTER_PORT": "29500", "TORCHELASTIC_RUN_ID": "b3f0c2"}
SLURM = {"SLURM_PROCID": "3", "SLURM_NTASKS": "4", "SLURM_LOCALID": "3", "SLURM_JOB_ID": "81234",
         "SLURM_STEP_ID": "0"}


def test_torchrun_environment():
    info = d.detect(environ=TORCHRUN)
    assert info == d.RankInfo(rank=5, world_size=8, local_rank=1, host=socket.gethostname(), gpu_index=1)
    assert d.shared_run_id(info, TORCHRUN) == "elastic-b3f0c2"


def test_slurm_environment():
    info = d.detect(environ=SLURM)
    assert (info.rank, info.world_size, info.local_rank) == (3, 4, 3)
    assert d.shared_run_id(info, SLURM) == "slurm-81234.0"
    assert d.shared_run_id(info, dict(SLURM, SLURM_STEP_ID="")) == "slurm-81234"


def test_torchrun_variables_win_over_slurm_ones_and_arguments_over_both():
    env = dict(SLURM, **TORCHRUN)
    assert d.detect(environ=env).rank == 5
    info = d.detect(rank=2, world_size=3, local_rank=0, host="h", gpu=7, environ=env)
    assert info == d.RankInfo(2, 3, 0, "h", 7)


def test_run_id_precedence():
    info = d.detect(environ=TORCHRUN)
    env = dict(SLURM, **TORCHRUN)
    assert d.shared_run_id(info, dict(env, TRAINWATCH_RUN_ID="mine")) == "mine"
    assert d.shared_run_id(info, env) == "elastic-b3f0c2"
    # torchrun without --rdzv-id: "none" is no job id; SLURM's is next
    assert d.shared_run_id(info, dict(env, TORCHELASTIC_RUN_ID="none")) == "slurm-81234.0"
    # TRAINWATCH_RUN_ID names the run of a process that is not distributed too; else a new id
    assert d.shared_run_id(None, {"TRAINWATCH_RUN_ID": "mine"}) == "mine"
    assert d.shared_run_id(None, TORCHRUN) is None


def test_one_rank_is_not_a_distributed_run_unless_a_rank_is_given():
    assert d.detect(environ={"RANK": "0", "WORLD_SIZE": "1"}) is None
    assert d.detect(environ={"SLURM_PROCID": "0", "SLURM_NTASKS": "1"}) is None
    assert d.detect(environ={}) is None
    assert d.detect(rank=0, world_size=1, environ={}).world_size == 1
    # a rank without a world size: distributed, size unknown (0)
    assert d.detect(environ={"RANK": "1"}) == d.RankInfo(1, 0, 1, socket.gethostname(), 1)


def test_local_rank_fallbacks():
    env = {"RANK": "6", "WORLD_SIZE": "8"}
    assert d.detect(environ=dict(env, LOCAL_WORLD_SIZE="4")).local_rank == 2
    assert d.detect(environ=env).local_rank == 6  # one host assumed


def test_gpu_index_follows_cuda_visible_devices():
    env = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1"}
    assert d.detect(environ=env).gpu_index == 1
    assert d.detect(environ=dict(env, CUDA_VISIBLE_DEVICES="4,6")).gpu_index == 6
    # UUIDs: the CUDA index is the best guess
    assert d.detect(environ=dict(env, CUDA_VISIBLE_DEVICES="GPU-aa,GPU-bb")).gpu_index == 1


@pytest.mark.parametrize("args, env, message", [
    (dict(rank=-1), {}, "rank must be at least 0"),
    (dict(rank="x"), {}, "rank must be an integer"),
    (dict(rank=4, world_size=4), {}, "rank 4 is not below the world size 4"),
    (dict(rank=0, world_size=0), {}, "world_size must be at least 1"),
    (dict(rank=0, local_rank=-2), {}, "local_rank must be at least 0"),
    ({}, {"RANK": "two", "WORLD_SIZE": "4"}, "environment variable RANK must be an integer"),
    ({}, {"RANK": "1", "WORLD_SIZE": "0"}, "environment variable WORLD_SIZE must be at least 1"),
])
def test_bad_values_are_refused_naming_them(args, env, message):
    with pytest.raises(ValueError, match=message):
        d.detect(environ=env, **args)


def test_derived_run_id_is_shared_by_ranks_of_one_spawn_and_differs_between_jobs():
    env = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:  # two ranks of one job: the same parent
        ids = pool.starmap(_derived_id_in_child, [(0, env), (1, env)])
    with ctx.Pool(1) as pool:  # the pool's workers share this process as their parent, as before
        again = pool.starmap(_derived_id_in_child, [(0, env)])
    assert ids[0] == ids[1] == again[0] and ids[0].startswith("job-")
    assert ids[0] != _derived_id_in_child(0, env)  # another parent: another job
    # a job of another size, or on another master address, is another run
    assert _derived_id_in_child(0, dict(env, MASTER_PORT="29501")) != _derived_id_in_child(0, env)


def _derived_id_in_child(rank, env):
    warnings = []
    info = d.detect(rank=rank, world_size=2, environ=env)
    run_id = d.shared_run_id(info, env, warn=warnings.append)
    # with a multiprocessing parent on one host the id cannot repeat in a later job: no warning
    assert bool(warnings) == (multiprocessing.parent_process() is None), warnings
    return run_id


def test_derived_run_id_without_a_shared_parent_warns_that_it_may_repeat():
    env = {"MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500", "WORLD_SIZE": "16", "RANK": "3"}
    warnings = []
    info = d.detect(environ=env)
    first = d.shared_run_id(info, env, warn=warnings.append)
    assert first == d.shared_run_id(d.detect(environ=dict(env, RANK="9")), env)
    assert len(warnings) == 1 and "TRAINWATCH_RUN_ID" in warnings[0]
    # mpirun's namespace tells jobs apart
    warnings.clear()
    assert d.shared_run_id(info, dict(env, PMIX_NAMESPACE="prterun-x-1234@1"),
                           warn=warnings.append) != first
    assert not warnings


def test_init_takes_the_rank_arguments_offline(monkeypatch, tmp_path):
    monkeypatch.setenv("TRAINWATCH_RUN_ID", "shared")
    run = tw.init(project="p", mode="offline", system_metrics=False, rank=2, world_size=4,
                  local_rank=0, host="node-b")
    assert run.id == "shared" and run.rank == 2
    assert run.rank_info == d.RankInfo(2, 4, 0, "node-b", 0)
    assert "rank=2" in repr(run)
    run.finish()
    plain = tw.init(project="p", mode="offline", system_metrics=False)
    assert plain.rank is None and plain.rank_info is None and plain.id == "shared"
    plain.finish()
    with pytest.raises(ValueError, match="rank 4 is not below the world size 4"):
        tw.init(project="p", mode="offline", rank=4, world_size=4)
