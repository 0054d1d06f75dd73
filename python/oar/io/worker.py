"""DataLoader worker processes: the loop each worker runs, get_worker_info(), and the messages and
shared-memory arrays that travel between workers and the main process."""
import os
import random
import signal
import sys
import traceback

import numpy as np

__all__ = ["get_worker_info", "WorkerInfo"]

_worker_info = None

# Arrays at least this large travel through shared memory; smaller ones are simply pickled into the
# result pipe, which costs about the same for them.
_SHM_MIN_BYTES = 16 * 1024
# How often a waiting worker checks that its parent is still alive.
_POLL_S = 1.0


class WorkerInfo:
    """What get_worker_info() returns inside a worker: id, num_workers, seed and this worker's dataset copy."""

    def __init__(self, id, num_workers, seed, dataset):
        self.id = id
        self.num_workers = num_workers
        self.seed = seed
        self.dataset = dataset

    def __repr__(self):
        return "WorkerInfo(id={}, num_workers={}, seed={})".format(self.id, self.num_workers, self.seed)


def get_worker_info():
    """Inside a DataLoader worker process: its WorkerInfo (id, num_workers, seed, dataset); None in the
    main process. An IterableDataset uses it to shard its stream between workers."""
    return _worker_info


class _ResumeIteration:
    """Main -> worker: a new epoch of persistent workers starts (restart the dataset iterator)."""


class _ResumeAck:
    def __init__(self, worker_id):
        self.worker_id = worker_id


class _IterableEnd:
    """Worker -> main: this worker's copy of the IterableDataset is exhausted."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


class _WorkerError:
    """Worker -> main: an exception raised in a worker, with its formatted traceback."""

    def __init__(self, worker_id, where):
        exc_type, exc, _ = sys.exc_info()
        self.exc_type = exc_type
        self.msg = "Caught {} in DataLoader worker process {}{}.\nOriginal {}".format(
            exc_type.__name__, worker_id, where, "".join(traceback.format_exception(exc_type, exc, exc.__traceback__)))

    def __getstate__(self):
        state = dict(self.__dict__)
        try:  # a class defined in a local scope cannot be pickled: fall back to RuntimeError
            import pickle
            pickle.loads(pickle.dumps(self.exc_type))
        except Exception:
            state["exc_type"] = RuntimeError
        return state

    def reraise(self):
        try:
            err = self.exc_type(self.msg)
        except Exception:
            err = None
        if not isinstance(err, BaseException) or isinstance(err, KeyError):
            err = RuntimeError(self.msg)  # KeyError's str() would escape the traceback's newlines
        raise err


class _SlotArray:
    """An array a worker left in one of its shared-memory slots: (slot key, segment name, offset,
    shape, dtype)."""

    def __init__(self, key, name, offset, shape, dtype):
        self.key = key
        self.name = name
        self.offset = offset
        self.shape = shape
        self.dtype = dtype


_ALIGN = 64


class _SlotRing:
    """Worker side of use_shared_memory: a ring of reusable shared-memory segments.

    A batch's large arrays are copied into the next slot and only their place is sent. The main
    process copies them out as soon as it receives the message, and a worker never has more than
    `outstanding` results unread, so with outstanding + 1 slots a slot is always free again when its
    turn comes. Reusing segments avoids creating, mapping and page-faulting fresh memory per batch."""

    def __init__(self, worker_id, outstanding):
        self.worker_id = worker_id
        self.slots = [None] * (outstanding + 1)
        self.count = 0

    def pack(self, batch):
        leaves = []
        _collect_large(batch, leaves)
        if not leaves:
            return batch
        sizes = [(a.nbytes + _ALIGN - 1) // _ALIGN * _ALIGN for a in leaves]
        total = max(sum(sizes), 1)
        slot = self.count % len(self.slots)
        self.count += 1
        shm = self.slots[slot]
        if shm is None or shm.size < total:
            from multiprocessing import shared_memory
            if shm is not None:
                shm.close()
                shm.unlink()
            # some headroom, so that slightly larger batches do not reallocate. SIGTERM (the main process
            # ending a slow worker) is held off until the new segment is in self.slots, where close() finds it:
            # one created but not yet recorded would outlive the worker.
            held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
            try:
                shm = self.slots[slot] = shared_memory.SharedMemory(create=True, size=total + total // 8)
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, held)
        placed = {}
        offset = 0
        for a, size in zip(leaves, sizes):
            view = np.ndarray(a.shape, dtype=a.dtype, buffer=shm.buf, offset=offset)
            view[...] = a
            del view
            placed[id(a)] = _SlotArray((self.worker_id, slot), shm.name, offset, a.shape, a.dtype.str)
            offset += size
        return _replace_large(batch, placed)

    def close(self):
        for shm in self.slots:
            if shm is not None:
                shm.close()
                try:
                    shm.unlink()
                except FileNotFoundError:
                    pass
        self.slots = [None] * len(self.slots)


def _is_large(a):
    return isinstance(a, np.ndarray) and a.dtype.kind in "biufc" and a.nbytes >= _SHM_MIN_BYTES


def _collect_large(obj, out):
    if _is_large(obj):
        out.append(obj)
    elif isinstance(obj, dict):
        for v in obj.values():
            _collect_large(v, out)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _collect_large(v, out)


def _replace_large(obj, placed):
    if _is_large(obj):
        return placed[id(obj)]
    if isinstance(obj, dict):
        return {k: _replace_large(v, placed) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_replace_large(v, placed) for v in obj]
    return obj


class _SlotReader:
    """Main-process side: the workers' slots, each mapped once (again when a worker had to grow it)."""

    def __init__(self):
        self.maps = {}  # slot key -> SharedMemory

    def to_tensor(self, arr, place=None):
        from multiprocessing import shared_memory
        from .. import to_tensor
        shm = self.maps.get(arr.key)
        if shm is None or shm.name.lstrip("/") != arr.name.lstrip("/"):
            if shm is not None:
                self._close(shm)
            shm = self.maps[arr.key] = shared_memory.SharedMemory(name=arr.name)
        view = np.ndarray(arr.shape, dtype=np.dtype(arr.dtype), buffer=shm.buf, offset=arr.offset)
        t = to_tensor(view, place=place)
        del view
        return t

    @staticmethod
    def _close(shm):
        # Only unmap: the segment belongs to the worker, which unlinks it. (Attaching registered the
        # name with the resource tracker, as creating it did; the tracker keeps one entry per name,
        # and the worker's unlink removes it.)
        try:
            shm.close()
        except BufferError:
            pass

    def close(self):
        for shm in self.maps.values():
            self._close(shm)
        self.maps = {}


def _unpack(obj, reader, place=None):
    """Main process: slot arrays and numeric numpy arrays -> oar Tensors."""
    from .collate import _numpy_to_tensors
    if isinstance(obj, _SlotArray):
        return reader.to_tensor(obj, place)
    if isinstance(obj, dict):
        return {k: _unpack(v, reader, place) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_unpack(v, reader, place) for v in obj]
    return _numpy_to_tensors(obj, place)


class _MapFetcher:
    def __init__(self, dataset, auto_collate, collate_fn, drop_last):
        self.dataset = dataset
        self.auto_collate = auto_collate
        self.collate_fn = collate_fn
        self.drop_last = drop_last

    def fetch(self, indices):
        if self.auto_collate:
            return self.collate_fn([self.dataset[i] for i in indices])
        return self.collate_fn(self.dataset[indices])


class _IterableFetcher:
    """Reads the dataset's stream; raises StopIteration when it (or the last full batch) is done."""

    def __init__(self, dataset, auto_collate, collate_fn, drop_last):
        self.dataset = dataset
        self.auto_collate = auto_collate
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.it = iter(dataset)
        self.ended = False

    def fetch(self, indices):
        if self.ended:
            raise StopIteration
        if not self.auto_collate:
            return self.collate_fn(next(self.it))
        batch = []
        for _ in indices:  # indices: batch_size placeholders
            try:
                batch.append(next(self.it))
            except StopIteration:
                self.ended = True
                break
        if not batch or (self.drop_last and len(batch) < len(indices)):
            self.ended = True
            raise StopIteration
        return self.collate_fn(batch)


def _make_fetcher(is_iterable, dataset, auto_collate, collate_fn, drop_last):
    cls = _IterableFetcher if is_iterable else _MapFetcher
    return cls(dataset, auto_collate, collate_fn, drop_last)


def _send(conn, lock, msg):
    """Pickle here (so a failure is reported, not lost in a feeder thread) and write under the lock."""
    from multiprocessing.reduction import ForkingPickler
    payload = bytes(ForkingPickler.dumps(msg, protocol=-1))
    with lock:
        conn.send_bytes(payload)


def _worker_loop(dataset, is_iterable, task_conn, result_conn, result_lock, auto_collate, collate_fn, drop_last,
                 worker_id, num_workers, seed, worker_init_fn, use_shared_memory, outstanding, parent_pid):
    """Runs in each worker process until it reads None (shutdown) or its parent is gone."""
    global _worker_info
    # Ctrl-C goes to the whole process group: the main process handles it and shuts the workers down.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from .collate import _tensors_to_numpy

    random.seed(seed)
    np.random.seed(seed % 2 ** 32)
    _worker_info = WorkerInfo(worker_id, num_workers, seed, dataset)
    init_error = None
    fetcher = None
    ring = _SlotRing(worker_id, outstanding) if use_shared_memory else None
    try:
        if worker_init_fn is not None:
            worker_init_fn(worker_id)
        fetcher = _make_fetcher(is_iterable, dataset, auto_collate, collate_fn, drop_last)
    except Exception:
        init_error = _WorkerError(worker_id, " (in worker_init_fn / dataset setup)")

    def _on_sigterm(signum, frame):
        raise SystemExit(0)  # unwind, so that the finally below frees the shared memory

    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        while True:
            try:
                if not task_conn.poll(_POLL_S):
                    if os.getppid() != parent_pid:  # orphaned: the main process died
                        break
                    continue
                task = task_conn.recv()
            except (EOFError, OSError):  # the main process closed its end
                break
            if task is None:
                break
            if isinstance(task, _ResumeIteration):
                if init_error is None:
                    try:
                        fetcher = _make_fetcher(is_iterable, dataset, auto_collate, collate_fn, drop_last)
                    except Exception:
                        init_error = _WorkerError(worker_id, " (restarting the dataset iterator)")
                _send(result_conn, result_lock, (None, _ResumeAck(worker_id)))
                continue
            idx, indices = task
            if init_error is not None:
                data = init_error
            else:
                try:
                    data = _tensors_to_numpy(fetcher.fetch(indices))
                    if ring is not None:
                        data = ring.pack(data)
                except StopIteration:
                    data = _IterableEnd(worker_id)
                except Exception:
                    data = _WorkerError(worker_id, "")
            try:
                _send(result_conn, result_lock, (idx, data))
            except Exception:  # e.g. an unpicklable batch from a custom collate_fn
                error = _WorkerError(worker_id, " (sending the batch to the main process)")
                _send(result_conn, result_lock, (idx, error))
            del data
    finally:
        # A SIGTERM now would stop close() halfway and leave segments behind: the work is done, ignore it.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if ring is not None:
            ring.close()
