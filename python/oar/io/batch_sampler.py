"""Batch samplers: iterables of index lists (Paddle's paddle.io.BatchSampler, DistributedBatchSampler)."""
import math
from collections.abc import Iterable

import numpy as np

from .dataset import IterableDataset
from .sampler import RandomSampler, Sampler, SequenceSampler

__all__ = ["BatchSampler", "DistributedBatchSampler"]


def _check_bool(owner, name, value):
    if not isinstance(value, bool):
        raise TypeError("{}: {} should be a bool, got {!r}".format(owner, name, value))


def _check_batch_size(owner, batch_size):
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
        raise ValueError("{}: batch_size should be a positive integer, got {!r}".format(owner, batch_size))


def _group(indices, batch_size, drop_last):
    batch = []
    for idx in indices:
        batch.append(idx)
        if len(batch) == batch_size:
            yield batch
            batch = []
    if batch and not drop_last:
        yield batch


class BatchSampler(Sampler):
    """Groups the indices of `sampler` (or of a Sequence/RandomSampler over `dataset`) into lists of
    batch_size; the last short batch is kept unless drop_last."""

    def __init__(self, dataset=None, sampler=None, shuffle=False, batch_size=1, drop_last=False):
        if dataset is None:
            if sampler is None:
                raise ValueError("BatchSampler: either dataset or sampler should be set")
            if not isinstance(sampler, (Sampler, Iterable)):
                raise TypeError("BatchSampler: sampler should be an oar.io.Sampler or an Iterable, got {}".format(
                    type(sampler).__name__))
            if shuffle:
                raise ValueError("BatchSampler: shuffle should be False when sampler is set")
            self.sampler = sampler
        else:
            if isinstance(dataset, IterableDataset):
                raise TypeError("BatchSampler: dataset should not be an oar.io.IterableDataset")
            if sampler is not None:
                raise ValueError("BatchSampler: should not set both dataset and sampler")
            _check_bool("BatchSampler", "shuffle", shuffle)
            self.sampler = RandomSampler(dataset) if shuffle else SequenceSampler(dataset)
        _check_batch_size("BatchSampler", batch_size)
        _check_bool("BatchSampler", "drop_last", drop_last)
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.drop_last = drop_last

    def __iter__(self):
        return _group(self.sampler, self.batch_size, self.drop_last)

    def __len__(self):
        n = len(self.sampler)
        if self.drop_last:
            return n // self.batch_size
        return (n + self.batch_size - 1) // self.batch_size


class _InfiniteIterableSampler:
    """For an IterableDataset: endless lists of batch_size placeholders (the worker reads the stream)."""

    def __init__(self, dataset, batch_size=1):
        self.dataset = dataset
        self.batch_size = batch_size

    def __iter__(self):
        while True:
            yield [None] * self.batch_size



def _world_size():
    from ..distributed import get_world_size
    return get_world_size()


def _rank():
    from ..distributed import get_rank
    return get_rank()


class DistributedBatchSampler(BatchSampler):
    """The part of the batches of `dataset` that belongs to one of num_replicas ranks.

    As in Paddle: the index list is padded (wrapping around) to a multiple of num_replicas, optionally
    shuffled with np.random.RandomState(epoch) (the epoch then increments; set_epoch sets it), and each
    rank takes every num_replicas-th block of batch_size indices, the tail split evenly. num_replicas
    and rank default to oar.distributed's world size and rank (the default group's, else the launcher's
    environment: PADDLE_TRAINERS_NUM / WORLD_SIZE and PADDLE_TRAINER_ID / RANK; 1 and 0 without one)."""

    def __init__(self, dataset, batch_size, num_replicas=None, rank=None, shuffle=False, drop_last=False):
        self.dataset = dataset
        _check_batch_size("DistributedBatchSampler", batch_size)
        _check_bool("DistributedBatchSampler", "shuffle", shuffle)
        _check_bool("DistributedBatchSampler", "drop_last", drop_last)
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.drop_last = drop_last
        if num_replicas is None:
            num_replicas = _world_size()
        if not isinstance(num_replicas, int) or isinstance(num_replicas, bool) or num_replicas <= 0:
            raise ValueError("DistributedBatchSampler: num_replicas should be a positive integer, got {!r}".format(
                num_replicas))
        if rank is None:
            rank = _rank()
        if not isinstance(rank, int) or isinstance(rank, bool) or rank < 0:
            raise ValueError("DistributedBatchSampler: rank should be a non-negative integer, got {!r}".format(rank))
        if rank >= num_replicas:
            raise ValueError("DistributedBatchSampler: rank ({}) should be less than num_replicas ({})".format(
                rank, num_replicas))
        self.nranks = num_replicas
        self.local_rank = rank
        self.epoch = 0
        self.num_samples = int(math.ceil(len(dataset) / self.nranks))
        self.total_size = self.num_samples * self.nranks

    def _local_indices(self):
        n = len(self.dataset)
        indices = list(range(n))
        pad = self.total_size - n
        if pad > 0:
            indices += (indices * int(math.ceil(pad / n)))[:pad]
        if self.shuffle:
            np.random.RandomState(self.epoch).shuffle(indices)
            self.epoch += 1
        if self.nranks == 1:
            return indices
        # Whole batches go to ranks in turn; the tail (less than nranks batches) is split evenly.
        step = self.batch_size * self.nranks
        tail = self.total_size % step
        local = []
        for i in range(self.local_rank * self.batch_size, len(indices) - tail, step):
            local.extend(indices[i:i + self.batch_size])
        rest = indices[len(indices) - tail:]
        per_rank = tail // self.nranks
        local.extend(rest[self.local_rank * per_rank:(self.local_rank + 1) * per_rank])
        return local

    def __iter__(self):
        return _group(self._local_indices(), self.batch_size, self.drop_last)

    def __len__(self):
        if self.drop_last:
            return self.num_samples // self.batch_size
        return (self.num_samples + self.batch_size - 1) // self.batch_size

    def set_epoch(self, epoch):
        """Set the epoch that seeds the shuffle (call it before each epoch so all ranks agree)."""
        self.epoch = epoch
