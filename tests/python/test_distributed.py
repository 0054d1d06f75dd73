"""oar.distributed's process groups on the cpu device (Gloo), and once on the sim device: real processes
through spawn, results against numpy; sub-groups, every call, bad input and a dead peer.

The workers are module-level functions (spawn pickles them by name); each checks its own results and raises
on a mismatch, which spawn reports naming the rank.
"""
import os
import time
import warnings

import numpy as np
import pytest

import oar
import oar.distributed as dist
from _util import clean_job


@pytest.fixture(autouse=True)
def _cpu_and_clean_env(monkeypatch):
    with clean_job(monkeypatch):
        yield


def _data(rank, shape=(2, 3), dtype="float32"):
    return (np.arange(np.prod(shape)).reshape(shape) + 10 * rank + 1).astype(dtype)


def _collectives_worker(world):
    dist.init_parallel_env()
    rank = dist.get_rank()
    assert dist.get_world_size() == world and dist.is_initialized()
    assert dist.get_backend() == "GLOO"
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
    # Again in the same processes (the store is kept; the new groups' keys are the new init's own).
    g = dist.init_parallel_env()
    sub = dist.new_group([0, 1])
    t = oar.to_tensor(_data(rank))
    dist.all_reduce(t, group=sub)
    np.testing.assert_allclose(t.numpy(), np.sum(ref, axis=0), rtol=1e-6)
    dist.destroy_process_group(g)


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
    assert dist.is_initialized() and g.nranks == 1 and dist.get_backend() == "GLOO"
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


def test_launcher_device_selection_is_honoured(monkeypatch):
    # The launcher gives each rank its device in FLAGS_selected_<type>s (Paddle's FLAGS_selected_gpus);
    # init_parallel_env moves the process onto it.
    prev = oar.get_device()
    oar.set_device("sim:0")
    try:
        monkeypatch.setenv("FLAGS_selected_sims", "1,0")
        assert dist.ParallelEnv().device_id == 1
        dist.init_parallel_env()
        assert oar.get_device() == "sim:1"
        dist.destroy_process_group()
        monkeypatch.setenv("FLAGS_selected_sims", "x")
        with pytest.raises(ValueError, match="FLAGS_selected_sims='x'"):
            dist.init_parallel_env()
    finally:
        oar.set_device(prev)


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


def test_plugin_error_names_plugin_and_collective(monkeypatch):
    monkeypatch.setenv("OAR_DISTRIBUTED_CHECK", "0")  # no store check: the plugin's own descriptor finds it
    dist.spawn(_mismatch_worker, nprocs=2)


def _dies_in_collective_worker():
    dist.init_parallel_env()
    if dist.get_rank() == 1:
        raise KeyError("rank one dies before its all_reduce")
    dist.all_reduce(oar.to_tensor([1.0]))  # waits for rank 1, which never comes


def test_child_dying_while_peer_waits_is_reported():
    with pytest.raises(RuntimeError, match=r"rank 1 raised:[\s\S]*rank one dies before its all_reduce"):
        dist.spawn(_dies_in_collective_worker, nprocs=2)


def _row_block(src, dst, rows, cols=2):
    """The rows global rank `src` sends to `dst` in the alltoall_single checks: recognisable values."""
    return (100 * src + 10 * dst + np.arange(rows * cols).reshape(rows, cols)).astype("float32")


def _three_rank_worker():
    """Every call of the API on 3 ranks against numpy, then sub-groups [0, 2], [1] and [1, 2]."""
    dist.init_parallel_env()
    rank, world = dist.get_rank(), 3
    ref = [_data(r) for r in range(world)]
    # reduce: only dst gets the result; the others keep their tensor.
    for op, fn in [(dist.ReduceOp.SUM, np.sum), (dist.ReduceOp.MAX, np.max)]:
        t = oar.to_tensor(_data(rank))
        assert dist.reduce(t, dst=1, op=op) is None
        want = fn(np.stack(ref), axis=0) if rank == 1 else ref[rank]
        np.testing.assert_allclose(t.numpy(), want, rtol=1e-6)
    # scatter from global rank 2: rank r gets tensor_list[r]; the other ranks' lists are ignored.
    out = oar.zeros([2, 3])
    parts = [oar.to_tensor(_data(2) * (i + 1)) for i in range(world)] if rank == 2 else None
    dist.scatter(out, parts, src=2)
    np.testing.assert_array_equal(out.numpy(), _data(2) * (rank + 1))
    # gather to global rank 1: an empty list is filled there; the other ranks' lists are ignored.
    gl = []
    dist.gather(oar.to_tensor(_data(rank)), gl if rank == 1 else None, dst=1)
    if rank == 1:
        assert [x.numpy().tolist() for x in gl] == [r.tolist() for r in ref]
    # alltoall: rank r's in[j] lands in rank j's out[r]; into a given list and into an empty one.
    ins = [oar.to_tensor(_data(rank) + 1000 * j) for j in range(world)]
    outs = [oar.zeros([2, 3]) for _ in range(world)]
    dist.alltoall(ins, outs)
    empty_outs = []
    dist.alltoall(ins, empty_outs)
    for r in range(world):
        np.testing.assert_array_equal(outs[r].numpy(), _data(r) + 1000 * rank)
        np.testing.assert_array_equal(empty_outs[r].numpy(), _data(r) + 1000 * rank)
    # alltoall_single: equal blocks, then rank r sends j+1 rows to rank j (so it gets r+1 from each).
    src = oar.to_tensor(np.concatenate([_row_block(rank, j, 2) for j in range(world)]))
    got = oar.zeros([2 * world, 2])
    dist.alltoall_single(src, got)
    np.testing.assert_array_equal(got.numpy(), np.concatenate([_row_block(j, rank, 2) for j in range(world)]))
    src = oar.to_tensor(np.concatenate([_row_block(rank, j, j + 1) for j in range(world)]))
    got = oar.zeros([(rank + 1) * world, 2])
    dist.alltoall_single(src, got, in_split_sizes=[1, 2, 3], out_split_sizes=[rank + 1] * world)
    np.testing.assert_array_equal(got.numpy(),
                                  np.concatenate([_row_block(j, rank, rank + 1) for j in range(world)]))
    # send/recv ring 0 -> 1 -> 2 -> 0: rank 0 sends first, the others receive first (blocking calls).
    nxt, prv = (rank + 1) % world, (rank - 1) % world
    buf = oar.zeros([2, 3])
    if rank == 0:
        dist.send(oar.to_tensor(ref[rank]), dst=nxt)
        dist.recv(buf, src=prv)
    else:
        dist.recv(buf, src=prv)
        dist.send(oar.to_tensor(ref[rank]), dst=nxt)
    np.testing.assert_array_equal(buf.numpy(), ref[prv])
    # The same ring in one batch (both directions posted together), then isend/irecv tasks.
    buf = oar.zeros([2, 3], dtype="float64")
    tasks = dist.batch_isend_irecv([dist.P2POp(dist.isend, oar.to_tensor(ref[rank].astype("float64")), nxt),
                                    dist.P2POp(dist.irecv, buf, prv)])
    for task in tasks:
        assert task.wait()
    np.testing.assert_array_equal(buf.numpy(), ref[prv])
    if rank < 2:  # rank 0 sends only once rank 1 saw its irecv pending (told through the store)
        store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), False, world, 60,
                              wait_for_workers=False)
        if rank == 0:
            store.wait(["test/irecv_posted"])
            task = dist.isend(oar.to_tensor(ref[0]), 1)
        else:
            t = oar.zeros([2, 3])
            task = dist.irecv(t, src=0)
            time.sleep(0.2)
            assert not task.is_completed()
            store.set("test/irecv_posted", b"1")
        assert task.wait() and task.is_completed()
        if rank == 1:
            np.testing.assert_array_equal(t.numpy(), ref[0])
    # objects
    objs = []
    dist.all_gather_object(objs, {"rank": rank, "pad": "x" * (rank * 50)})
    assert objs == [{"rank": r, "pad": "x" * (r * 50)} for r in range(world)]
    lst = [("from", rank), None, rank * 1.5]
    dist.broadcast_object_list(lst, src=1)
    assert lst == [("from", 1), None, 1.5]
    got = []
    dist.scatter_object_list(got, [f"for {r}" * (r + 1) for r in range(world)] if rank == 0 else None, src=0)
    assert got == [f"for {rank}" * (rank + 1)]
    # all_gather into a list the caller made (Paddle writes into it rather than appending).
    into = [oar.zeros([2, 3]) for _ in range(world)]
    dist.all_gather(into, oar.to_tensor(ref[rank]))
    assert len(into) == world and all(np.array_equal(into[r].numpy(), ref[r]) for r in range(world))

    # ---- sub-groups: created on every rank in the same order ----
    g02 = dist.new_group([2, np.int64(0)])
    g1 = dist.new_group([1])
    g12 = dist.new_group([1, 2])
    assert (g02.ranks, g02.nranks, g12.ranks) == ([0, 2], 2, [1, 2])
    assert dist.get_group(g02.id) is g02 and dist.get_group(0) is dist.get_group() and g02.id != g12.id
    assert g02.backend == "GLOO" and g02.name
    if rank == 1:  # not a member of [0, 2]: its calls do nothing (Paddle warns)
        assert (g02.rank, g02.world_size, g02.is_member(), g02.get_group_rank(2)) == (-1, -1, False, -1)
        assert dist.get_rank(g02) == -1 and dist.get_world_size(g02) == -1
        t = oar.to_tensor(ref[1])
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            assert dist.all_reduce(t, group=g02) is None
            assert dist.broadcast(t, src=0, group=g02) is None
        assert len(w) == 2 and "not in group" in str(w[0].message)
        np.testing.assert_array_equal(t.numpy(), ref[1])
        # a group of one: collectives are identities
        assert (g1.rank, g1.nranks, g1.is_member()) == (0, 1, True)
        t = oar.to_tensor(ref[1])
        dist.all_reduce(t, group=g1)
        dist.broadcast(t, src=1, group=g1)
        np.testing.assert_array_equal(t.numpy(), ref[1])
    else:
        assert g02.rank == rank // 2 and g02.world_size == 2 and g02.get_group_rank(2) == 1
        assert dist.get_rank(g02) == rank // 2 and not g1.is_member()
        t = oar.to_tensor(ref[rank])
        dist.all_reduce(t, group=g02)
        np.testing.assert_allclose(t.numpy(), ref[0] + ref[2], rtol=1e-6)
        t = oar.to_tensor(ref[rank])
        dist.broadcast(t, src=2, group=g02)  # src is a GLOBAL rank
        np.testing.assert_array_equal(t.numpy(), ref[2])
        t = oar.to_tensor(ref[rank])
        dist.reduce(t, dst=2, op=dist.ReduceOp.MAX, group=g02)
        np.testing.assert_array_equal(t.numpy(), np.maximum(ref[0], ref[2]) if rank == 2 else ref[0])
        got = []
        dist.all_gather(got, oar.to_tensor(ref[rank]), group=g02)
        assert [x.numpy().tolist() for x in got] == [ref[0].tolist(), ref[2].tolist()]
        buf = oar.zeros([2, 3])
        if rank == 0:
            dist.send(oar.to_tensor(ref[0] * 3), dst=2, group=g02)
        else:
            dist.recv(buf, src=0, group=g02)
            np.testing.assert_array_equal(buf.numpy(), ref[0] * 3)
        with pytest.raises(ValueError, match=r"src=1 is not a rank of group \d+ \(global ranks \[0, 2\]\)"):
            dist.broadcast(t, src=1, group=g02)
        objs = []
        dist.all_gather_object(objs, rank, group=g02)
        assert objs == [0, 2]
        gl = [oar.zeros([2, 3]), oar.zeros([2, 3])]
        dist.gather(oar.to_tensor(ref[rank]), gl, dst=0, group=g02)
        if rank == 0:
            assert [x.numpy().tolist() for x in gl] == [ref[0].tolist(), ref[2].tolist()]
        else:
            assert not gl[0].numpy().any()
    if rank > 0:  # the second sub-group's communicator is its own
        t = oar.to_tensor(ref[rank])
        dist.all_reduce(t, op=dist.ReduceOp.MIN, group=g12)
        np.testing.assert_array_equal(t.numpy(), np.minimum(ref[1], ref[2]))
    dist.destroy_process_group(g02)
    with pytest.raises(ValueError, match="destroyed"):
        dist.all_reduce(oar.to_tensor(ref[rank]), group=g02)
    with pytest.warns(UserWarning, match="not initialized"):
        assert dist.get_group(g02.id) is None
    t = oar.to_tensor(ref[rank])
    dist.all_reduce(t)  # the world is untouched by a sub-group's destruction
    np.testing.assert_allclose(t.numpy(), np.sum(ref, axis=0), rtol=1e-6)
    dist.barrier(group=g12)
    dist.destroy_process_group()
    assert not dist.is_initialized()


def test_three_ranks_every_call_and_sub_groups():
    dist.spawn(_three_rank_worker, nprocs=3)


def _bad_input_worker():
    dist.init_parallel_env()
    rank = dist.get_rank()
    t = oar.to_tensor(_data(rank))
    # ranks out of range, named with their argument
    with pytest.raises(ValueError, match="broadcast: src=5 is out of range for world size 2"):
        dist.broadcast(t, src=5)
    with pytest.raises(TypeError, match="broadcast: src must be an int"):
        dist.broadcast(t, src="0")
    with pytest.raises(ValueError, match="reduce: dst=-1 is out of range for world size 2"):
        dist.reduce(t, dst=-1)
    with pytest.raises(ValueError, match=f"send: dst={rank} is this process's own rank"):
        dist.send(t, dst=rank)
    with pytest.raises(ValueError, match="scatter: src=2 is out of range"):
        dist.scatter(t, [t, t], src=2)
    with pytest.raises(ValueError, match="new_group: rank 7 is out of range for world size 2"):
        dist.new_group([0, 7])
    with pytest.raises(ValueError, match="new_group: backend 'nccl' is not available: this job's backend is 'GLOO"):
        dist.new_group([0, 1], backend="nccl")
    with pytest.raises(ValueError, match=r"scatter: tensor_list must hold 2 tensors"):
        dist.scatter(t, [t], src=rank)
    with pytest.raises(ValueError, match=r"alltoall: in_tensor_list\[1\] is float32 \[3\]"):
        dist.alltoall([t, oar.zeros([3])], [])
    # a tensor that is not contiguous
    with pytest.raises(ValueError, match="all_reduce: tensor must be contiguous"):
        dist.all_reduce(t.transpose([1, 0]))
    # Shapes that differ across ranks with the same element count (the plugin alone cannot see it):
    # every rank raises the same error naming the call, both ranks and both shapes.
    shape = (2, 3) if rank == 0 else (3, 2)
    with pytest.raises(ValueError, match=r"all_reduce: the ranks' calls disagree \(collective 1\): global rank 0 "
                                         r"called all_reduce of float32 \[2, 3\] \(op sum\); global rank 1 called "
                                         r"all_reduce of float32 \[3, 2\] \(op sum\)"):
        dist.all_reduce(oar.to_tensor(np.ones(shape, dtype="float32")))
    with pytest.raises(ValueError, match=r"global rank 0 called broadcast of float32 \[4\] \(src 0\); "
                                         r"global rank 1 called broadcast of float64 \[4\] \(src 0\)"):
        dist.broadcast(oar.to_tensor(np.ones(4, dtype="float32" if rank == 0 else "float64")), src=0)
    with pytest.raises(ValueError, match=r"\(src 0\); global rank 1 called broadcast of float32 \[4\] \(src 1\)"):
        dist.broadcast(oar.zeros([4]), src=rank)  # every rank thinks it is the source
    with pytest.raises(ValueError, match=r"all_gather of float32 \[2\]; global rank 1 called all_gather of "
                                         r"float32 \[5\]"):
        dist.all_gather([], oar.zeros([2 + 3 * rank]))
    # Nothing moved, so the communicator is still good.
    t = oar.to_tensor(_data(rank))
    dist.all_reduce(t)
    np.testing.assert_allclose(t.numpy(), _data(0) + _data(1), rtol=1e-6)
    g = dist.new_group([0, 1])
    with pytest.raises(ValueError, match=r"collective 1 in group \d+\): global rank 0 called reduce of "
                                         r"float32 \[2\] \(op sum, dst 0\); global rank 1 called reduce of "
                                         r"float32 \[2\] \(op max, dst 0\)"):
        dist.reduce(oar.zeros([2]), dst=0, op=dist.ReduceOp.SUM if rank == 0 else dist.ReduceOp.MAX, group=g)
    dist.destroy_process_group()


def test_bad_input_is_named_on_every_rank(monkeypatch):
    monkeypatch.setenv("OAR_DISTRIBUTED_CHECK", "1")  # compare every call (the default compares calls 1, 2, 4, ...)
    dist.spawn(_bad_input_worker, nprocs=2)


def _sampled_check_worker():
    dist.init_parallel_env()
    rank = dist.get_rank()
    for i in range(1, 6):  # calls 1, 2 and 4 are compared, 3 and 5 are not
        shape = (2, 3) if rank == 0 or i in (3, 5) else (3, 2)
        t = oar.to_tensor(np.ones(shape, dtype="float32"))
        if i in (1, 2, 4):
            with pytest.raises(ValueError, match=f"collective {i}"):
                dist.all_reduce(t)
        else:
            dist.all_reduce(t)
            np.testing.assert_array_equal(t.numpy(), np.full(shape, 2.0))
    # A mismatch on a call that is not compared: the cpu plugin still refuses different element counts.
    with pytest.raises(ValueError, match=r"ranks disagree: rank \d called all_reduce of \d float32"):
        dist.all_reduce(oar.zeros([5 + rank]))
    dist.destroy_process_group()


def test_default_check_compares_calls_one_two_four():
    dist.spawn(_sampled_check_worker, nprocs=2)


def _dead_peer_worker():
    dist.init_parallel_env()
    rank = dist.get_rank()
    dist.all_reduce(oar.to_tensor([1.0]))  # collective 1, together
    if rank == 1:
        os._exit(0)  # dies without a word
    # collective 2 is compared through the store: the missing peer is named at OAR_COLLECTIVE_TIMEOUT
    with pytest.raises(RuntimeError, match=r"all_reduce: global rank 1 did not reach all_reduce within 5 s"):
        dist.all_reduce(oar.to_tensor([1.0]))
    # collective 3 is not: the plugin sees the closed connection at once, naming the collective and the peer
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"all_reduce[\s\S]*rank 1"):
        dist.all_reduce(oar.to_tensor([1.0]))
    assert time.monotonic() - start < 3


def test_dead_peer_is_named_within_the_timeout(monkeypatch):
    monkeypatch.setenv("OAR_COLLECTIVE_TIMEOUT", "5")
    dist.spawn(_dead_peer_worker, nprocs=2)


def test_group_api_in_one_process(monkeypatch):
    with pytest.raises(RuntimeError, match="new_group: call oar.distributed.init_parallel_env"):
        dist.new_group([0])
    g = dist.init_parallel_env()
    assert (g.id, g.rank, g.ranks, g.world_size) == (0, 0, [0], 1) and dist.get_group() is g
    sub = dist.new_group([0])
    assert sub.id == 1 and sub.is_member() and sub.get_group_rank(0) == 0
    t = oar.to_tensor(_data(0))
    dist.reduce(t, dst=0, group=sub)
    out = oar.zeros([2, 3])
    dist.scatter(out, [t], src=0)
    np.testing.assert_array_equal(out.numpy(), _data(0))
    got = []
    dist.all_gather_object(got, {"a": 1})
    assert got == [{"a": 1}]
    with pytest.raises(ValueError, match="recv: src=0 is this process's own rank"):
        dist.recv(t, src=0)
    with pytest.raises(TypeError, match="group must be a Group"):
        dist.all_reduce(t, group=3)
    dist.destroy_process_group()
    with pytest.raises(ValueError, match="destroyed"):
        dist.all_reduce(t, group=sub)
    monkeypatch.setenv("OAR_DISTRIBUTED_CHECK", "sometimes")
    with pytest.raises(ValueError, match="OAR_DISTRIBUTED_CHECK='sometimes'"):
        dist.init_parallel_env()
    assert not dist.is_initialized()


def _sim_worker():
    dist.init_parallel_env()
    rank = dist.get_rank()
    assert oar.get_device().startswith("sim") and dist.get_backend() == "XCCL"  # Paddle's custom-device name
    assert dist.get_group().process_group.plugin == "sim"
    t = oar.to_tensor(np.full(3, rank + 1.0, dtype="float32"))
    dist.all_reduce(t)
    np.testing.assert_array_equal(t.numpy(), np.full(3, 3.0))
    g = dist.new_group([0, 1])
    buf = oar.zeros([3])
    if rank == 0:
        dist.send(t, 1, group=g)
    else:
        dist.recv(buf, 0, group=g)
        np.testing.assert_array_equal(buf.numpy(), np.full(3, 3.0))
    out = oar.zeros([3])
    dist.scatter(out, [oar.full([3], 5.0), oar.full([3], 6.0)] if rank == 0 else None, src=0, group=g)
    np.testing.assert_array_equal(out.numpy(), np.full(3, 5.0 + rank))
    objs = []
    dist.all_gather_object(objs, rank)
    assert objs == [0, 1]
    dist.destroy_process_group()


def test_the_same_calls_through_another_plugin():
    # The Python layer does not care which plugin provides the collectives: the sim device's own.
    oar.set_device("sim")
    dist.spawn(_sim_worker, nprocs=2)
