"""oar.distributed's process group on the cpu device (Gloo): real processes through spawn, results against numpy.

The workers are module-level functions (spawn pickles them by name); each checks its own results and raises
on a mismatch, which spawn reports naming the rank.
"""
import numpy as np
import pytest

import oar
import oar.distributed as dist

_ENV = ["PADDLE_TRAINER_ID", "PADDLE_TRAINERS_NUM", "PADDLE_MASTER", "PADDLE_TRAINER_ENDPOINTS", "RANK",
        "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"]


@pytest.fixture(autouse=True)
def _cpu_and_clean_env(monkeypatch):
    for k in _ENV:
        monkeypatch.delenv(k, raising=False)
    prev = oar.get_device()
    oar.set_device("cpu")
    yield
    if dist.is_initialized():
        dist.destroy_process_group()
    oar.set_device(prev)


def _data(rank, shape=(2, 3), dtype="float32"):
    return (np.arange(np.prod(shape)).reshape(shape) + 10 * rank + 1).astype(dtype)


def _collectives_worker(world):
    dist.init_parallel_env()
    rank = dist.get_rank()
    assert dist.get_world_size() == world and dist.is_initialized()
    assert dist.get_backend() == "gloo"
    env = dist.ParallelEnv()
    assert (env.rank, env.world_size, env.device_id) == (rank, world, 0)
    ref = [_data(r) for r in range(world)]
    for op, fn in [(dist.ReduceOp.SUM, np.sum), (dist.ReduceOp.MAX, np.max), (dist.ReduceOp.MIN, np.min),
                   (dist.ReduceOp.PROD, np.prod), (dist.ReduceOp.AVG, np.mean)]:
        t = oar.to_tensor(_data(rank))
        assert dist.all_reduce(t, op=op) is None
        np.testing.assert_allclose(t.numpy(), fn(np.stack(ref), axis=0), rtol=1e-6, err_msg=f"op {op}")
    ti = oar.to_tensor(_data(rank, dtype="int64"))
    dist.all_reduce(ti)
    np.testing.assert_array_equal(ti.numpy(), np.sum([_data(r, dtype="int64") for r in range(world)], axis=0))
    for src in range(world):
        t = oar.to_tensor(_data(rank))
        dist.broadcast(t, src=src)
        np.testing.assert_array_equal(t.numpy(), ref[src])
    got = []
    dist.all_gather(got, oar.to_tensor(_data(rank)))
    assert len(got) == world
    for r in range(world):
        np.testing.assert_array_equal(got[r].numpy(), ref[r])
    # reduce_scatter: rank r gets block r of the sum of every rank's list.
    parts = [oar.to_tensor(_data(rank) * (i + 1)) for i in range(world)]
    out = oar.zeros([2, 3])
    dist.reduce_scatter(out, parts)
    np.testing.assert_allclose(out.numpy(), sum(_data(r) * (rank + 1) for r in range(world)), rtol=1e-6)
    t = oar.to_tensor(_data(rank))
    task = dist.all_reduce(t, sync_op=False)
    assert task.wait()
    np.testing.assert_allclose(t.numpy(), np.sum(ref, axis=0), rtol=1e-6)
    dist.barrier()
    # A tensor that is not on the group's device type is refused, naming both.
    with pytest.raises(ValueError, match="process group's device is cpu"):
        dist.all_reduce(oar.to_tensor([1.0], place="sim:0"))
    with pytest.raises(RuntimeError, match="already initialized"):
        dist.init_parallel_env()
    dist.destroy_process_group()
    assert not dist.is_initialized()


def test_collectives_two_ranks_against_numpy():
    dist.spawn(_collectives_worker, args=(2,), nprocs=2)


def _raising_worker():
    if dist.ParallelEnv().rank == 1:
        raise ValueError("rank one fails on purpose")


def test_raising_child_names_its_rank():
    with pytest.raises(RuntimeError, match=r"rank 1 raised:[\s\S]*rank one fails on purpose"):
        dist.spawn(_raising_worker, nprocs=2)


def test_single_process_defaults():
    assert not dist.is_initialized()
    assert dist.get_rank() == 0 and dist.get_world_size() == 1
    t = oar.to_tensor(_data(0))
    dist.all_reduce(t)  # identities without a group, as Paddle
    dist.broadcast(t, src=0)
    got = []
    dist.all_gather(got, t)
    np.testing.assert_array_equal(got[0].numpy(), _data(0))
    g = dist.init_parallel_env()
    assert dist.is_initialized() and g.nranks == 1 and dist.get_backend() == "gloo"
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    dist.barrier()
    np.testing.assert_array_equal(t.numpy(), _data(0))
    with pytest.raises(RuntimeError, match="already initialized"):
        dist.init_parallel_env()
    with pytest.raises(ValueError, match="op must be"):
        dist.all_reduce(t, op=7)
    with pytest.raises(TypeError, match="oar Tensor"):
        dist.all_reduce(np.ones(2))
    dist.destroy_process_group()
    assert not dist.is_initialized()


def test_bad_environment_is_named(monkeypatch):
    monkeypatch.setenv("PADDLE_TRAINERS_NUM", "two")
    with pytest.raises(ValueError, match="PADDLE_TRAINERS_NUM='two'"):
        dist.init_parallel_env()
    monkeypatch.setenv("PADDLE_TRAINERS_NUM", "2")
    monkeypatch.setenv("PADDLE_TRAINER_ID", "5")
    with pytest.raises(ValueError, match="rank 5 is out of range for world size 2"):
        dist.init_parallel_env()
    assert not dist.is_initialized()


def test_process_group_refuses_bad_arguments():
    store = dist.TCPStore("127.0.0.1", 0, True, 1, 10, wait_for_workers=False)
    with pytest.raises(ValueError, match="unknown or unavailable device type 'nope'"):
        oar._C._ProcessGroup("nope", 0, 2, 0, store, "k")
    with pytest.raises(ValueError, match="rank 2 of world size 2"):
        oar._C._ProcessGroup("cpu", 0, 2, 2, store, "k")


def _mismatch_worker():
    dist.init_parallel_env()
    rank = dist.get_rank()
    t = oar.to_tensor(np.ones(4 + 2 * rank, dtype="float32"))
    with pytest.raises(Exception, match=r"plugin cpu\b[\s\S]*all_reduce") as e:
        dist.all_reduce(t)  # the ranks disagree on the size: an error on both, naming plugin and collective
    print(f"rank {rank}: {type(e.value).__name__}: {e.value}")


def test_plugin_error_names_plugin_and_collective():
    dist.spawn(_mismatch_worker, nprocs=2)


def _dies_in_collective_worker():
    dist.init_parallel_env()
    if dist.get_rank() == 1:
        raise KeyError("rank one dies before its all_reduce")
    dist.all_reduce(oar.to_tensor([1.0]))  # waits for rank 1, which never comes


def test_child_dying_while_peer_waits_is_reported():
    with pytest.raises(RuntimeError, match=r"rank 1 raised:[\s\S]*rank one dies before its all_reduce"):
        dist.spawn(_dies_in_collective_worker, nprocs=2)
