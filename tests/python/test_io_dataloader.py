"""oar.io: datasets, samplers, collation and the DataLoader (main process and worker processes)."""
import glob
import multiprocessing as mp
import os
import random
import signal
import time

import numpy as np
import pytest

import oar
from oar.io import (BatchSampler, ChainDataset, ComposeDataset, ConcatDataset, DataLoader, Dataset,
                    DistributedBatchSampler, IterableDataset, RandomSampler, SequenceSampler, Subset,
                    SubsetRandomSampler, TensorDataset, WeightedRandomSampler, default_collate_fn, get_worker_info,
                    random_split)


# --- datasets used below (module level so worker errors can pickle their types) ---------------------

class Squares(Dataset):
    """sample i = (float32 [i, i*i], int i)"""

    def __init__(self, n=10, sleep=None):
        self.n = n
        self.sleep = sleep

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.sleep is not None:
            self.sleep(i)
        return np.array([i, i * i], dtype=np.float32), i


class Range(IterableDataset):
    """start..end-1; with workers each worker reads its own stride of the range."""

    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        return iter(range(self.start + info.id, self.end, info.num_workers))


class Failing(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5:
            return broken_helper_in_dataset(i)
        return np.float32(i)


def broken_helper_in_dataset(i):
    raise ValueError("sample {} is corrupt".format(i))


class Slow(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        time.sleep(2)
        return np.float32(i)


class Suicidal(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        return np.float32(i)


class WhoAmI(Dataset):
    """Reports which worker served it and a random draw made there."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = get_worker_info()
        return np.array([info.id, info.num_workers, os.getpid(), np.random.randint(0, 2 ** 30),
                         random.randrange(2 ** 30), info.seed, i], dtype=np.int64)


class Big(Dataset):
    """Samples large enough to travel through shared memory."""

    def __len__(self):
        return 12

    def __getitem__(self, i):
        if i < 2:
            time.sleep(0.2)  # the first batch comes last: the other worker's batches wait out of turn
        return {"x": np.full((64, 64), i, dtype=np.float32), "y": i}


def _jitter(i):
    # Later samples finish first, so batches arrive out of order.
    time.sleep(0.002 * max(0, 20 - i))


def _no_children():
    deadline = time.time() + 5
    while mp.active_children() and time.time() < deadline:
        time.sleep(0.05)
    return mp.active_children() == []


# --- datasets ------------------------------------------------------------------------------------------

def test_public_names():
    import oar.io
    for name in oar.io.__all__:
        assert hasattr(oar.io, name), name
    assert callable(oar.save) and callable(oar.load)


def test_tensor_dataset():
    x = oar.to_tensor(np.arange(12, dtype=np.float32).reshape(4, 3))
    y = oar.to_tensor(np.arange(4))
    ds = TensorDataset([x, y])
    assert len(ds) == 4
    a, b = ds[2]
    np.testing.assert_array_equal(a.numpy(), [6, 7, 8])
    assert int(b.numpy()) == 2
    with pytest.raises(ValueError, match="1st dimension"):
        TensorDataset([x, oar.zeros([3])])
    with pytest.raises(TypeError):
        TensorDataset([np.zeros(3)])


def test_compose_chain_concat_subset():
    c = ComposeDataset([Squares(4), Squares(4)])
    assert len(c) == 4
    s = c[3]
    assert isinstance(s, tuple) and len(s) == 4 and s[1] == 3 and s[3] == 3
    with pytest.raises(ValueError, match="lengths"):
        ComposeDataset([Squares(4), Squares(5)])
    with pytest.raises(TypeError):
        ComposeDataset([Range(0, 3)])
    assert list(ChainDataset([Range(0, 3), Range(10, 12)])) == [0, 1, 2, 10, 11]
    with pytest.raises(TypeError):
        ChainDataset([Squares(3)])
    cat = ConcatDataset([Squares(3), Squares(2)])
    assert len(cat) == 5 and cat[3][1] == 0 and cat[-1][1] == 1 and cat[2][1] == 2
    sub = Subset(Squares(10), [7, 2])
    assert len(sub) == 2 and sub[0][1] == 7 and sub[1][1] == 2


def test_random_split():
    oar.seed(3)
    parts = random_split(Squares(10), [3, 7])
    assert [len(p) for p in parts] == [3, 7]
    got = sorted(p[i][1] for p in parts for i in range(len(p)))
    assert got == list(range(10))
    # fractions: floor(10 * f) each, then the remainder one by one from the first split
    parts = random_split(Squares(10), [0.25, 0.25, 0.5])
    assert [len(p) for p in parts] == [3, 2, 5]
    with pytest.raises(ValueError, match="Sum of input lengths|sum of input lengths"):
        random_split(Squares(10), [3, 3])


# --- samplers ------------------------------------------------------------------------------------------

def test_sequence_and_random_sampler():
    assert list(SequenceSampler(range(5))) == [0, 1, 2, 3, 4]
    np.random.seed(0)
    perm = list(RandomSampler(range(20)))
    assert sorted(perm) == list(range(20)) and perm != list(range(20))
    draws = list(RandomSampler(range(3), replacement=True, num_samples=50))
    assert len(draws) == 50 and set(draws) <= {0, 1, 2}
    assert len(RandomSampler(range(10), num_samples=4)) == 4
    assert list(RandomSampler(range(5), generator=iter([4, 0, 2]))) == [4, 0, 2]
    with pytest.raises(ValueError, match="num_samples"):
        RandomSampler(range(3), num_samples=5)
    with pytest.raises(ValueError, match="num_samples"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(TypeError, match="replacement"):
        RandomSampler(range(3), replacement=1)


def test_weighted_and_subset_random_sampler():
    np.random.seed(1)
    s = WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 200)
    got = list(s)
    assert len(s) == 200 and set(got) == {1, 3}
    assert 0.6 < got.count(3) / 200 < 0.9
    unique = list(WeightedRandomSampler(np.array([1.0, 1.0, 1.0]), 3, replacement=False))
    assert sorted(unique) == [0, 1, 2]
    with pytest.raises(ValueError, match="num_samples"):
        WeightedRandomSampler([1.0], 0)
    with pytest.raises(ValueError, match="negative"):
        list(WeightedRandomSampler([1.0, -1.0], 2))
    with pytest.raises(ValueError, match="positive weights"):
        list(WeightedRandomSampler([1.0, 0.0], 2, replacement=False))
    idx = [5, 9, 11]
    s = SubsetRandomSampler(idx)
    assert len(s) == 3 and sorted(s) == idx
    with pytest.raises(ValueError):
        SubsetRandomSampler([])


def test_batch_sampler():
    bs = BatchSampler(dataset=Squares(7), batch_size=3)
    assert list(bs) == [[0, 1, 2], [3, 4, 5], [6]] and len(bs) == 3
    bs = BatchSampler(dataset=Squares(7), batch_size=3, drop_last=True)
    assert list(bs) == [[0, 1, 2], [3, 4, 5]] and len(bs) == 2
    bs = BatchSampler(sampler=SequenceSampler(range(4)), batch_size=2)
    assert list(bs) == [[0, 1], [2, 3]]
    np.random.seed(0)
    flat = [i for b in BatchSampler(dataset=Squares(9), shuffle=True, batch_size=2) for i in b]
    assert sorted(flat) == list(range(9))
    with pytest.raises(ValueError, match="either dataset or sampler"):
        BatchSampler()
    with pytest.raises(ValueError, match="both dataset and sampler"):
        BatchSampler(dataset=Squares(3), sampler=SequenceSampler(range(3)))
    with pytest.raises(ValueError, match="shuffle"):
        BatchSampler(sampler=SequenceSampler(range(3)), shuffle=True)
    with pytest.raises(ValueError, match="batch_size"):
        BatchSampler(dataset=Squares(3), batch_size=0)
    with pytest.raises(TypeError, match="drop_last"):
        BatchSampler(dataset=Squares(3), drop_last=1)
    with pytest.raises(TypeError, match="IterableDataset"):
        BatchSampler(dataset=Range(0, 3))


def test_distributed_batch_sampler_partitions():
    # Hand-computed from Paddle's algorithm: pad to a multiple of nranks by wrapping around, whole
    # batches to ranks in turn, the tail split evenly.
    def batches(n, bs, nranks, rank, **kw):
        return list(DistributedBatchSampler(Squares(n), bs, num_replicas=nranks, rank=rank, **kw))

    assert batches(10, 2, 3, 0) == [[0, 1], [6, 7]]
    assert batches(10, 2, 3, 1) == [[2, 3], [8, 9]]
    assert batches(10, 2, 3, 2) == [[4, 5], [0, 1]]
    assert batches(10, 3, 2, 0) == [[0, 1, 2], [6, 7]]
    assert batches(10, 3, 2, 1) == [[3, 4, 5], [8, 9]]
    assert batches(10, 3, 2, 1, drop_last=True) == [[3, 4, 5]]
    s = DistributedBatchSampler(Squares(10), 3, num_replicas=2, rank=0)
    assert len(s) == 2 and s.num_samples == 5
    # shuffled: every rank sees the same permutation for an epoch, so ranks partition it
    seen = []
    for rank in range(3):
        s = DistributedBatchSampler(Squares(12), 2, num_replicas=3, rank=rank, shuffle=True)
        s.set_epoch(5)
        seen += [i for b in s for i in b]
    assert sorted(seen) == list(range(12))
    s = DistributedBatchSampler(Squares(12), 2, num_replicas=3, rank=0, shuffle=True)
    e0 = list(s)
    e1 = list(s)  # the epoch advances by itself after a shuffled pass
    assert e0 != e1
    with pytest.raises(ValueError, match="num_replicas"):
        DistributedBatchSampler(Squares(4), 2, num_replicas=0)
    with pytest.raises(ValueError, match="rank"):
        DistributedBatchSampler(Squares(4), 2, num_replicas=2, rank=2)


def test_distributed_batch_sampler_env(monkeypatch):
    monkeypatch.setenv("PADDLE_TRAINERS_NUM", "2")
    monkeypatch.setenv("PADDLE_TRAINER_ID", "1")
    s = DistributedBatchSampler(Squares(8), 2)
    assert s.nranks == 2 and s.local_rank == 1
    assert list(s) == [[2, 3], [6, 7]]
    monkeypatch.delenv("PADDLE_TRAINERS_NUM")
    monkeypatch.delenv("PADDLE_TRAINER_ID")
    s = DistributedBatchSampler(Squares(8), 4)
    assert s.nranks == 1 and s.local_rank == 0 and list(s) == [[0, 1, 2, 3], [4, 5, 6, 7]]


# --- collation -----------------------------------------------------------------------------------------

def test_default_collate_fn():
    out = default_collate_fn([(np.ones((2, 3), np.float32), 1, 2.5, "a"), (np.zeros((2, 3), np.float32), 2, 3.5, "b")])
    assert isinstance(out, list) and len(out) == 4
    assert out[0].shape == (2, 2, 3) and out[0].dtype == np.float32
    assert out[1].dtype == np.int64 and out[1].tolist() == [1, 2]
    assert out[2].dtype == np.float64  # Python floats stay float64, as in Paddle
    assert out[3] == ["a", "b"]
    d = default_collate_fn([{"a": np.float32(1), "b": [1, 2]}, {"a": np.float32(2), "b": [3, 4]}])
    assert d["a"].dtype == np.float32 and d["a"].tolist() == [1, 2]
    assert [v.tolist() for v in d["b"]] == [[1, 3], [2, 4]]
    t = default_collate_fn([oar.ones([2]), oar.zeros([2])])
    assert isinstance(t, oar.Tensor) and t.shape == [2, 2]
    with pytest.raises(RuntimeError, match="fields number"):
        default_collate_fn([(1, 2), (1,)])
    with pytest.raises(TypeError, match="object"):
        default_collate_fn([object(), object()])


# --- DataLoader in the main process --------------------------------------------------------------------

def test_dataloader_single_process():
    dl = DataLoader(Squares(10), batch_size=4)
    assert len(dl) == 3
    out = list(dl)
    assert len(out) == 3
    x, y = out[0]
    assert isinstance(x, oar.Tensor) and isinstance(y, oar.Tensor)
    np.testing.assert_array_equal(x.numpy(), [[0, 0], [1, 1], [2, 4], [3, 9]])
    assert y.dtype == oar.int64 and y.numpy().tolist() == [0, 1, 2, 3]
    assert out[2][1].numpy().tolist() == [8, 9]
    assert len(DataLoader(Squares(10), batch_size=4, drop_last=True)) == 2
    assert len(list(DataLoader(Squares(10), batch_size=4, drop_last=True))) == 2
    # no batching
    s = list(DataLoader(Squares(3), batch_size=None))
    assert len(s) == 3 and s[2][0].shape == [2] and s[2][1] == 2
    # custom collate_fn: its numpy arrays become tensors too
    c = next(iter(DataLoader(Squares(5), batch_size=5, collate_fn=lambda b: np.array([s[1] for s in b]))))
    assert isinstance(c, oar.Tensor) and c.numpy().tolist() == [0, 1, 2, 3, 4]
    np.random.seed(0)
    ys = [int(v) for _, y in DataLoader(Squares(11), batch_size=3, shuffle=True) for v in y.numpy()]
    assert sorted(ys) == list(range(11))


def test_dataloader_iterable_single_process():
    dl = DataLoader(Range(0, 7), batch_size=3)
    assert [b.numpy().tolist() for b in dl] == [[0, 1, 2], [3, 4, 5], [6]]
    dl = DataLoader(Range(0, 7), batch_size=3, drop_last=True)
    assert [b.numpy().tolist() for b in dl] == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(ValueError, match="length"):
        len(dl)


def test_dataloader_argument_errors():
    with pytest.raises(ValueError, match="batch_sampler"):
        DataLoader(Squares(4), batch_sampler=BatchSampler(dataset=Squares(4)), batch_size=2)
    with pytest.raises(ValueError, match="shuffle"):
        DataLoader(Range(0, 4), shuffle=True)
    with pytest.raises(ValueError, match="batch_sampler"):
        DataLoader(Range(0, 4), batch_sampler=BatchSampler(dataset=Squares(4)))
    with pytest.raises(ValueError, match="num_workers"):
        DataLoader(Squares(4), num_workers=-1)
    with pytest.raises(ValueError, match="batch_size"):
        DataLoader(Squares(4), batch_size=0)
    with pytest.raises(ValueError, match="timeout"):
        DataLoader(Squares(4), timeout=-1)
    with pytest.raises(ValueError, match="prefetch_factor"):
        DataLoader(Squares(4), prefetch_factor=0)


def test_tensor_dataset_loader():
    x = oar.to_tensor(np.arange(20, dtype=np.float32).reshape(10, 2))
    y = oar.to_tensor(np.arange(10))
    for nw in (0, 2):
        got = [(a.numpy(), b.numpy()) for a, b in DataLoader(TensorDataset([x, y]), batch_size=4, num_workers=nw)]
        np.testing.assert_array_equal(np.concatenate([a for a, _ in got]), x.numpy())
        np.testing.assert_array_equal(np.concatenate([b for _, b in got]), np.arange(10))
    assert _no_children()


def test_device_tensor_dataset_with_workers():
    # Workers must not call into a device runtime after fork: TensorDataset hands them host copies
    # made in the main process (also through Subset / ComposeDataset).
    others = [d for d in oar.device.get_available_device() if not d.startswith("cpu")]
    if not others:
        pytest.skip("no non-CPU device")
    x = oar.to_tensor(np.arange(20, dtype=np.float32).reshape(10, 2), place=others[0])
    for ds in (TensorDataset([x]), Subset(TensorDataset([x]), list(range(10))), ComposeDataset([TensorDataset([x])])):
        out = [b[0].numpy() for b in DataLoader(ds, batch_size=4, num_workers=2, timeout=20)]
        np.testing.assert_array_equal(np.concatenate(out), x.numpy())
    assert _no_children()


# --- DataLoader with worker processes ------------------------------------------------------------------

def test_workers_order_and_values():
    dl = DataLoader(Squares(20, sleep=_jitter), batch_size=3, num_workers=2)
    ys = []
    for x, y in dl:
        np.testing.assert_array_equal(x.numpy()[:, 1], y.numpy() ** 2)
        ys += y.numpy().tolist()
    assert ys == list(range(20))  # in order although later batches were ready first
    assert len(dl) == 7
    assert _no_children()


def test_workers_shuffle_drop_last_epochs():
    np.random.seed(7)
    dl = DataLoader(Squares(23), batch_size=4, shuffle=True, num_workers=2)
    orders = []
    for _ in range(2):
        ys = [v for _, y in dl for v in y.numpy().tolist()]
        assert sorted(ys) == list(range(23))  # every index exactly once per epoch
        orders.append(ys)
    assert orders[0] != orders[1]
    dl = DataLoader(Squares(23), batch_size=4, drop_last=True, num_workers=2)
    sizes = [y.shape[0] for _, y in dl]
    assert sizes == [4] * 5
    dl = DataLoader(Squares(5), batch_size=None, num_workers=2)
    assert [int(y) for _, y in dl] == [0, 1, 2, 3, 4]
    assert _no_children()


def test_workers_shared_memory_no_leak():
    before = set(glob.glob("/dev/shm/psm_*"))
    for shm in (True, False):
        got = list(DataLoader(Big(), batch_size=5, num_workers=2, use_shared_memory=shm))
        assert [b["y"].numpy().tolist() for b in got] == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [10, 11]]
        for b in got:
            np.testing.assert_array_equal(b["x"].numpy()[:, 0, 0], b["y"].numpy().astype(np.float32))
    # break early: batches in flight and batches that arrived out of turn are released too
    for b in DataLoader(Big(), batch_size=2, num_workers=2, prefetch_factor=3):
        break
    del b
    assert _no_children()
    assert set(glob.glob("/dev/shm/psm_*")) <= before


class Growing(Dataset):
    """Every sample larger than the one before: the workers' shared-memory slots must grow."""

    def __len__(self):
        return 40

    def __getitem__(self, i):
        if i % 7 == 0:
            time.sleep(0.01)  # some batches finish late and others wait out of turn
        return np.full(4096 + 512 * i, i, dtype=np.float32)


def test_shared_memory_slots_reuse_and_grow():
    # 40 batches through rings of prefetch_factor * num_workers + 1 slots: slots are reused and
    # regrown many times; a slot overwritten too early would show up as wrong values.
    for prefetch in (1, 2):
        out = [b.numpy() for b in DataLoader(Growing(), batch_size=1, num_workers=2, prefetch_factor=prefetch)]
        assert len(out) == 40
        for i, b in enumerate(out):
            assert b.shape == (1, 4096 + 512 * i) and (b == i).all()
    assert _no_children()


def test_worker_exception_has_traceback():
    dl = DataLoader(Failing(), batch_size=2, num_workers=2)
    with pytest.raises(ValueError) as err:
        for _ in dl:
            pass
    msg = str(err.value)
    assert "sample 5 is corrupt" in msg
    assert "broken_helper_in_dataset" in msg and "Traceback" in msg and "worker process" in msg
    assert _no_children()


def test_worker_timeout():
    dl = DataLoader(Slow(), batch_size=1, num_workers=2, timeout=0.3)
    t0 = time.time()
    with pytest.raises(RuntimeError, match="timed out"):
        next(iter(dl))
    assert time.time() - t0 < 5
    assert _no_children()


def test_worker_killed_by_signal():
    dl = DataLoader(Suicidal(), batch_size=1, num_workers=2)
    with pytest.raises(RuntimeError, match="SIGKILL"):
        for _ in dl:
            pass
    assert _no_children()


def test_iterable_dataset_with_workers():
    dl = DataLoader(Range(0, 23), batch_size=4, num_workers=2)
    batches = [b.numpy().tolist() for b in dl]
    flat = sorted(v for b in batches for v in b)
    assert flat == list(range(23))
    # each worker batches its own stream: worker 0 has the even numbers, worker 1 the odd ones
    for b in batches:
        assert len({v % 2 for v in b}) == 1
    dl = DataLoader(Range(0, 23), batch_size=4, num_workers=2, drop_last=True)
    assert all(len(b.numpy()) == 4 for b in dl)
    assert sorted(int(v) for v in DataLoader(Range(0, 9), batch_size=None, num_workers=3)) == list(range(9))
    assert _no_children()


def _init_fn(worker_id):
    info = get_worker_info()
    assert info is not None and info.id == worker_id and isinstance(info.dataset, WhoAmI)
    np.random.seed(1000 + worker_id)


def test_worker_info_seeds_and_init_fn():
    assert get_worker_info() is None
    rows = np.concatenate([b.numpy() for b in DataLoader(WhoAmI(), batch_size=2, num_workers=2)])
    ids, nws, pids, np_draws, py_draws, seeds, idx = rows.T
    assert idx.tolist() == list(range(8))
    assert set(ids.tolist()) == {0, 1} and set(nws.tolist()) == {2}
    assert len(set(pids.tolist())) == 2 and os.getpid() not in pids.tolist()
    assert len(set(seeds.tolist())) == 2
    # different seeds -> different random streams in the two workers
    assert np_draws[ids == 0][0] != np_draws[ids == 1][0]
    assert py_draws[ids == 0][0] != py_draws[ids == 1][0]
    rows = np.concatenate([b.numpy() for b in DataLoader(WhoAmI(), batch_size=2, num_workers=2,
                                                         worker_init_fn=_init_fn)])
    first = {0: rows[rows[:, 0] == 0][0, 3], 1: rows[rows[:, 0] == 1][0, 3]}
    for wid in (0, 1):
        np.random.seed(1000 + wid)
        assert first[wid] == np.random.randint(0, 2 ** 30)
    assert _no_children()


def _bad_init(worker_id):
    raise KeyError("init failed in worker {}".format(worker_id))


def test_worker_init_fn_error():
    with pytest.raises(RuntimeError, match="init failed"):
        list(DataLoader(Squares(4), num_workers=2, worker_init_fn=_bad_init))
    assert _no_children()


def test_persistent_workers():
    for kw in ({"persistent_workers": True}, {"persistable_workers": True}):
        dl = DataLoader(WhoAmI(), batch_size=2, num_workers=2, **kw)
        pids = []
        for _ in range(2):
            rows = np.concatenate([b.numpy() for b in dl])
            assert rows[:, 6].tolist() == list(range(8))
            pids.append(set(rows[:, 2].tolist()))
        assert pids[0] == pids[1]  # the same worker processes served both epochs
        for b in dl:  # stop early, then a full epoch still comes out complete and in order
            break
        rows = np.concatenate([b.numpy() for b in dl])
        assert rows[:, 6].tolist() == list(range(8))
        assert len(mp.active_children()) == 2
        del dl, b
        assert _no_children()
    dl = DataLoader(Range(0, 10), batch_size=3, num_workers=2, persistent_workers=True)
    for _ in range(2):
        assert sorted(v for b in dl for v in b.numpy().tolist()) == list(range(10))
    del dl
    assert _no_children()


def test_break_early_and_del_cleanup():
    it = iter(DataLoader(Squares(100), batch_size=2, num_workers=2))
    next(it)
    assert len(mp.active_children()) == 2
    del it
    assert _no_children()
    for i, _ in enumerate(DataLoader(Squares(100), batch_size=2, num_workers=2)):
        if i == 2:
            break
    assert _no_children()


def test_unpicklable_batch_reports_error():
    dl = DataLoader(Squares(4), batch_size=2, num_workers=2, collate_fn=lambda b: (lambda: 0))
    with pytest.raises(Exception, match="sending the batch"):
        list(dl)
    assert _no_children()


_EXIT_SCRIPT = r"""
import os, sys, numpy as np
import oar.io as io
class D(io.Dataset):
    def __len__(self): return 1000
    def __getitem__(self, i): return np.zeros((64, 64), np.float32)
it = iter(io.DataLoader(D(), batch_size=4, num_workers=2))
next(it)
print(" ".join(str(w.pid) for w in it._workers), flush=True)
if sys.argv[1] == "hard":
    os._exit(0)  # no atexit handlers: the orphaned workers must notice, free their memory and exit
"""


def _gone(pid):
    try:
        with open("/proc/{}/stat".format(pid)) as f:
            return f.read().split(") ")[1][0] in "ZX"  # a zombie waiting for init counts as gone
    except FileNotFoundError:
        return True


@pytest.mark.parametrize("how", ["normal", "hard"])
def test_workers_exit_with_the_interpreter(how):
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-c", _EXIT_SCRIPT, how], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "leaked" not in proc.stderr, proc.stderr
    pids = [int(p) for p in proc.stdout.split()]
    assert len(pids) == 2
    deadline = time.time() + 10
    while not all(_gone(p) for p in pids) and time.time() < deadline:
        time.sleep(0.1)
    assert all(_gone(p) for p in pids)
