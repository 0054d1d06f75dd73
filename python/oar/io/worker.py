"""DataLoader worker processes: the loop each worker runs, get_worker_info(), and the messages and
shared-memory arrays that travel between workers and the main process."""
import os
import queue
import random
import signal
import sys
import traceback

import numpy as np

__all__ = ["get_worker_info", "WorkerInfo"]

_worker_info = None

# Arrays at least this large travel through shared memory; smaller ones are pickled into the queue,
# which is cheaper than creating a shared-memory segment.
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
        self.msg = "Caught {} in DataLoader worker process {}{}.\nOriginal Traceback (most recent call last):\n{}".format(
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


class _ShmArray:
    """A numpy array parked in a named shared-memory segment by a worker."""

    def __init__(self, arr):
        from multiprocessing import shared_memory
        shm = shared_memory.SharedMemory(create=True, size=max(arr.nbytes, 1))
        view = np.ndarray(arr.shape, dtype=arr.dtype, buffer=shm.buf)
        view[...] = arr
        del view
        self.name = shm.name
        self.shape = arr.shape
        self.dtype = arr.dtype.str
        shm.close()  # the segment lives on until the main process unlinks it

    def to_tensor(self, place=None):
        """Main process: copy into an oar Tensor, then release the segment."""
        from multiprocessing import shared_memory
        from .. import to_tensor
        shm = shared_memory.SharedMemory(name=self.name)
        try:
            view = np.ndarray(self.shape, dtype=np.dtype(self.dtype), buffer=shm.buf)
            t = to_tensor(view, place=place)
            del view
        finally:
            shm.close()
            shm.unlink()
        return t

    def release(self):
        """Drop the segment without reading it (batches discarded at shutdown)."""
        from multiprocessing import shared_memory
        try:
            shm = shared_memory.SharedMemory(name=self.name)
            shm.close()
            shm.unlink()
        except FileNotFoundError:
            pass


def _pack_shm(obj):
    """Worker: move large numeric arrays of a batch into shared memory."""
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind in "biufc" and obj.nbytes >= _SHM_MIN_BYTES:
            return _ShmArray(obj)
        return obj
    if isinstance(obj, dict):
        return {k: _pack_shm(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_pack_shm(v) for v in obj]
    return obj


def _unpack(obj, place=None):
    """Main process: shared-memory arrays and numeric numpy arrays -> oar Tensors."""
    from .collate import _numpy_to_tensors
    if isinstance(obj, _ShmArray):
        return obj.to_tensor(place)
    if isinstance(obj, dict):
        return {k: _unpack(v, place) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_unpack(v, place) for v in obj]
    return _numpy_to_tensors(obj, place)


def _release(obj):
    """Free the shared memory of a batch that will never be read."""
    if isinstance(obj, _ShmArray):
        obj.release()
    elif isinstance(obj, dict):
        for v in obj.values():
            _release(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _release(v)


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


def _worker_loop(dataset, is_iterable, index_queue, result_conn, result_lock, auto_collate, collate_fn, drop_last,
                 worker_id, num_workers, seed, worker_init_fn, use_shared_memory, parent_pid):
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
    try:
        if worker_init_fn is not None:
            worker_init_fn(worker_id)
        fetcher = _make_fetcher(is_iterable, dataset, auto_collate, collate_fn, drop_last)
    except Exception:
        init_error = _WorkerError(worker_id, " (in worker_init_fn / dataset setup)")

    while True:
        try:
            task = index_queue.get(timeout=_POLL_S)
        except queue.Empty:
            if os.getppid() != parent_pid:  # orphaned: the main process died
                break
            continue
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
                if use_shared_memory:
                    data = _pack_shm(data)
            except StopIteration:
                data = _IterableEnd(worker_id)
            except Exception:
                data = _WorkerError(worker_id, "")
        try:
            _send(result_conn, result_lock, (idx, data))
        except Exception:  # e.g. an unpicklable batch from a custom collate_fn
            _release(data)
            _send(result_conn, result_lock, (idx, _WorkerError(worker_id, " (sending the batch to the main process)")))
        del data
