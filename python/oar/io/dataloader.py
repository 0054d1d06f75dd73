"""DataLoader (Paddle's paddle.io.DataLoader): batches from a dataset, in the main process or in worker
processes.

Multi-process design: one task pipe per worker (main -> worker: (task index, sample indices)), one
result pipe shared by all workers under a lock (worker -> main: (task index, batch)). Tasks go to the
workers round robin, at most prefetch_factor * num_workers outstanding, and batches are handed out in
task order whatever order they arrive in. Workers return numpy (large arrays through shared memory);
the main process builds the oar Tensors."""
import atexit
import itertools
import os
import pickle
import signal
import sys
import time
import weakref

import numpy as np

from .batch_sampler import BatchSampler, _InfiniteIterableSampler
from .collate import _numpy_to_tensors, default_collate_fn, default_convert_fn
from .dataset import IterableDataset, _prepare_for_workers
from .sampler import RandomSampler, SequenceSampler
from . import worker as _worker

__all__ = ["DataLoader"]

# While waiting for a batch, check this often that the workers are still alive.
_STATUS_CHECK_S = 0.5
# At shutdown, how long workers get to finish before they are terminated.
_SHUTDOWN_WAIT_S = 3.0

_live_iterators = weakref.WeakSet()


@atexit.register
def _shutdown_all():
    for it in list(_live_iterators):
        it._shutdown()


def _check_non_negative_int(name, value):
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
        raise ValueError("DataLoader: {} should be a non-negative number, got {!r}".format(name, value))


class DataLoader:
    """Iterate over `dataset` in batches.

    Map-style datasets are batched by `batch_sampler` or by a BatchSampler(dataset, batch_size, shuffle,
    drop_last); IterableDatasets are read as a stream. batch_size=None turns batching off (each sample
    is converted on its own). Each batch is collated by `collate_fn` (default: default_collate_fn) and
    its numpy arrays become oar Tensors. num_workers > 0 loads batches in that many worker processes.
    `feed_list`, `return_list` and `use_buffer_reader` are accepted for Paddle compatibility and have no
    effect (oar is always in dynamic mode)."""

    def __init__(self, dataset, feed_list=None, places=None, return_list=True, batch_sampler=None, batch_size=1,
                 shuffle=False, drop_last=False, collate_fn=None, num_workers=0, use_buffer_reader=True,
                 prefetch_factor=2, use_shared_memory=True, timeout=0, worker_init_fn=None,
                 persistent_workers=False, persistable_workers=None):
        self.dataset = dataset
        self.feed_list = feed_list
        self.return_list = return_list
        self.collate_fn = collate_fn
        self.use_buffer_reader = use_buffer_reader
        self.worker_init_fn = worker_init_fn
        if isinstance(places, (list, tuple)):
            places = places[0] if places else None
        self.places = places
        if not isinstance(num_workers, int) or isinstance(num_workers, bool) or num_workers < 0:
            raise ValueError("DataLoader: num_workers should be a non-negative integer, got {!r}".format(num_workers))
        self.num_workers = num_workers
        if not isinstance(prefetch_factor, int) or isinstance(prefetch_factor, bool) or prefetch_factor <= 0:
            raise ValueError("DataLoader: prefetch_factor should be a positive integer, got {!r}".format(
                prefetch_factor))
        self.prefetch_factor = prefetch_factor
        self.use_shared_memory = bool(use_shared_memory) and num_workers > 0
        _check_non_negative_int("timeout", timeout)
        self.timeout = timeout
        if worker_init_fn is not None and not callable(worker_init_fn):
            raise TypeError("DataLoader: worker_init_fn should be callable, got {!r}".format(worker_init_fn))
        if collate_fn is not None and not callable(collate_fn):
            raise TypeError("DataLoader: collate_fn should be callable, got {!r}".format(collate_fn))
        if persistable_workers is not None:  # an alternative spelling
            persistent_workers = persistable_workers
        self._persistent_workers = bool(persistent_workers)

        self._is_iterable = isinstance(dataset, IterableDataset)
        if self._is_iterable:
            if shuffle:
                raise ValueError("DataLoader: IterableDataset does not support shuffle, but got shuffle={}".format(
                    shuffle))
            if batch_sampler is not None:
                raise ValueError("DataLoader: IterableDataset expects batch_sampler to be unspecified")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or drop_last:
                raise ValueError("DataLoader: batch_size/shuffle/drop_last should not be set when batch_sampler is "
                                 "given")
            self.batch_sampler = batch_sampler
            self.batch_size = None
        elif batch_size is None:
            self.batch_sampler = None
            self.batch_size = None
        else:
            if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
                raise ValueError("DataLoader: batch_size should be None or a positive integer when batch_sampler is "
                                 "not given, got {!r}".format(batch_size))
            self.batch_size = batch_size
            if self._is_iterable:
                self.batch_sampler = _InfiniteIterableSampler(dataset, batch_size)
            else:
                self.batch_sampler = BatchSampler(dataset=dataset, batch_size=batch_size, shuffle=shuffle,
                                                  drop_last=drop_last)
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.auto_collate_batch = self.batch_sampler is not None
        self._iterator = None

    def _index_iter(self):
        """What the loader hands out per step: index lists (batching), single indices (no batching), or
        placeholders (IterableDataset)."""
        if self.auto_collate_batch:
            return iter(self.batch_sampler)
        if self._is_iterable:
            return itertools.repeat(None)
        return iter(RandomSampler(self.dataset) if self.shuffle else SequenceSampler(self.dataset))

    def _collate(self):
        if self.collate_fn is not None:
            return self.collate_fn
        return default_collate_fn if self.auto_collate_batch else default_convert_fn

    def __len__(self):
        if self._is_iterable:
            raise ValueError("DataLoader: length of an IterableDataset is not supported")
        if self.auto_collate_batch:
            return len(self.batch_sampler)
        return len(self.dataset)

    def __iter__(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        if self._persistent_workers:
            if self._iterator is None or self._iterator._is_shutdown:
                self._iterator = _MultiProcessIter(self)
            else:
                self._iterator._reset()
            return self._iterator
        return _MultiProcessIter(self)

    def __call__(self):
        return self.__iter__()

    def __del__(self):
        it = getattr(self, "_iterator", None)
        if it is not None:
            it._shutdown()


class _SingleProcessIter:
    def __init__(self, loader):
        self._loader = loader
        self._index_iter = loader._index_iter()
        self._fetcher = _worker._make_fetcher(loader._is_iterable, loader.dataset, loader.auto_collate_batch,
                                              loader._collate(), loader.drop_last)
        self._place = loader.places

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._loader)

    def __next__(self):
        indices = next(self._index_iter)  # StopIteration ends the epoch
        return _numpy_to_tensors(self._fetcher.fetch(indices), self._place)


def _describe_exit(exitcode):
    if exitcode is not None and exitcode < 0:
        try:
            return "was killed by signal {}".format(signal.Signals(-exitcode).name)
        except ValueError:
            return "was killed by signal {}".format(-exitcode)
    return "exited unexpectedly with exit code {}".format(exitcode)


class _MultiProcessIter:
    def __init__(self, loader):
        import multiprocessing as mp
        from multiprocessing import resource_tracker
        # A persistent iterator is owned by its loader: a weak reference back avoids a cycle, so that
        # dropping the loader shuts the workers down at once.
        self._persistent = loader._persistent_workers
        self._loader_ref = weakref.ref(loader) if self._persistent else (lambda: loader)
        self._is_shutdown = True  # until the workers exist
        self._num_workers = loader.num_workers
        self._place = loader.places
        self._timeout = loader.timeout
        self._prefetch = loader.prefetch_factor * loader.num_workers
        ctx = mp.get_context("fork") if sys.platform.startswith("linux") else mp.get_context()
        if loader.use_shared_memory:
            # Workers and main must share one resource tracker, or a worker's tracker would unlink the
            # segments it created when the worker exits.
            resource_tracker.ensure_running()
        self._result_reader, result_writer = ctx.Pipe(duplex=False)
        result_lock = ctx.Lock()
        # Worker seeds: drawn from numpy's global generator, so np.random.seed in the main process makes
        # them reproducible; each worker adds its id.
        base_seed = int(np.random.randint(0, 2 ** 31 - 1))
        self._task_conns = []
        self._workers = []
        self._slots = _worker._SlotReader()
        collate = loader._collate()
        _prepare_for_workers(loader.dataset)
        try:
            for wid in range(self._num_workers):
                # Tasks go through a plain pipe per worker: small synchronous writes, no feeder thread.
                task_reader, task_writer = ctx.Pipe(duplex=False)
                w = ctx.Process(target=_worker._worker_loop, daemon=True,
                                args=(loader.dataset, loader._is_iterable, task_reader, result_writer, result_lock,
                                      loader.auto_collate_batch, collate, loader.drop_last, wid, self._num_workers,
                                      base_seed + wid, loader.worker_init_fn, loader.use_shared_memory,
                                      self._prefetch, os.getpid()))
                self._task_conns.append(task_writer)
                try:
                    w.start()
                finally:
                    task_reader.close()  # the worker's end
                self._workers.append(w)
        except BaseException:
            for w in self._workers:  # do not leave the ones already started behind
                w.terminate()
                w.join()
            raise
        finally:
            result_writer.close()  # only the workers write
        self._is_shutdown = False
        _live_iterators.add(self)
        self._start_epoch()

    @property
    def _loader(self):
        return self._loader_ref()

    # --- epoch state --------------------------------------------------------------------------------
    def _start_epoch(self):
        self._index_iter = self._loader._index_iter()
        self._send_idx = 0
        self._rcvd_idx = 0
        self._tasks = {}  # task index -> [worker id] or [worker id, batch]
        self._active = [True] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        self._sampler_done = False
        for _ in range(self._prefetch):
            self._put_task()

    def _put_task(self):
        if self._sampler_done:
            return
        for _ in range(self._num_workers):
            wid = next(self._worker_cycle)
            if self._active[wid]:
                break
        else:
            return
        try:
            indices = next(self._index_iter)
        except StopIteration:
            self._sampler_done = True
            return
        self._send_task(wid, (self._send_idx, indices))
        self._tasks[self._send_idx] = [wid]
        self._send_idx += 1

    def _send_task(self, wid, task):
        try:
            self._task_conns[wid].send(task)
        except OSError as e:  # BrokenPipeError: the worker is gone (or going)
            self._workers[wid].join(timeout=_STATUS_CHECK_S)
            self._check_workers()
            self._shutdown(graceful=False)
            raise RuntimeError("DataLoader: cannot send work to worker {}: {}".format(wid, e)) from e

    def _reset(self):
        """Persistent workers, next epoch: restart the workers' iterators and forget the old epoch."""
        for wid in range(self._num_workers):
            self._send_task(wid, _worker._ResumeIteration())
        acks = 0
        while acks < self._num_workers:
            idx, data = self._recv()  # results of the old epoch are dropped unread
            if isinstance(data, _worker._ResumeAck):
                acks += 1
        self._start_epoch()

    # --- receiving ----------------------------------------------------------------------------------
    def _recv(self):
        """The next message from any worker; raises if a worker died or the timeout passed."""
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            wait = _STATUS_CHECK_S
            if deadline is not None:
                wait = max(0.0, min(wait, deadline - time.monotonic()))
            if self._result_reader.poll(wait):
                return pickle.loads(self._result_reader.recv_bytes())
            self._check_workers()
            if deadline is not None and time.monotonic() >= deadline:
                self._shutdown(graceful=False)
                raise RuntimeError("DataLoader timed out: no batch from the worker processes within timeout={} "
                                   "seconds".format(self._timeout))

    def _check_workers(self):
        """Raise (after shutting down) if a worker has died."""
        for w in self._workers:
            if not w.is_alive():
                msg = "DataLoader worker (pid {}) {}".format(w.pid, _describe_exit(w.exitcode))
                self._shutdown(graceful=False)
                raise RuntimeError(msg + "; the DataLoader has been shut down")

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._loader)

    def __next__(self):
        if self._is_shutdown:
            raise StopIteration
        while True:
            # Skip tasks given to workers whose stream has ended (IterableDataset).
            while self._rcvd_idx < self._send_idx:
                task = self._tasks.get(self._rcvd_idx)
                if task is not None and (len(task) == 2 or self._active[task[0]]):
                    break
                self._tasks.pop(self._rcvd_idx, None)
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown()
                raise StopIteration
            task = self._tasks[self._rcvd_idx]
            if len(task) == 2:
                del self._tasks[self._rcvd_idx]
                self._rcvd_idx += 1
                self._put_task()
                return self._process(task[1])
            idx, data = self._recv()
            if idx not in self._tasks:  # a task skipped after its worker's stream ended
                continue
            if isinstance(data, _worker._IterableEnd):
                self._active[data.worker_id] = False
                del self._tasks[idx]
                continue
            if not isinstance(data, _worker._WorkerError):
                # Copy out of the worker's shared-memory slot now: the worker reuses the slot later.
                data = _worker._unpack(data, self._slots, self._place)
            if idx != self._rcvd_idx:  # arrived early: keep it until its turn
                self._tasks[idx].append(data)
                continue
            del self._tasks[idx]
            self._rcvd_idx += 1
            self._put_task()
            return self._process(data)

    def _process(self, data):
        if isinstance(data, _worker._WorkerError):
            self._shutdown()
            data.reraise()
        return data

    # --- shutdown -----------------------------------------------------------------------------------
    def _shutdown(self, graceful=True):
        """Stop the workers: ask them to exit (graceful; what they still send is read and dropped) or
        terminate them at once (a worker is stuck or dead). Workers unlink their shared memory."""
        if self._is_shutdown:
            return
        self._is_shutdown = True
        _live_iterators.discard(self)
        try:
            self._tasks = {}
            for q in self._task_conns:
                try:
                    q.send(None)
                except Exception:  # that worker is gone already
                    pass
            # Read what the workers still send (they may be blocked writing) until they have exited.
            deadline = time.monotonic() + (_SHUTDOWN_WAIT_S if graceful else 0.0)
            while any(w.is_alive() for w in self._workers) and time.monotonic() < deadline:
                try:
                    if self._result_reader.poll(0.01):
                        self._result_reader.recv_bytes()  # dropped
                except (EOFError, OSError):
                    break
            for w in self._workers:
                if w.is_alive():
                    w.terminate()
                w.join(timeout=_SHUTDOWN_WAIT_S)
        finally:
            self._slots.close()
            for q in self._task_conns:
                q.close()
            self._result_reader.close()

    def __del__(self):
        try:
            self._shutdown()
        except Exception:
            pass
