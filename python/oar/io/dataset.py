"""Datasets (Paddle's paddle.io.Dataset, IterableDataset, TensorDataset, ComposeDataset, ChainDataset,
ConcatDataset, Subset, random_split)."""
import bisect
import math
import numbers
import warnings

import numpy as np

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "ComposeDataset", "ChainDataset", "ConcatDataset",
           "Subset", "random_split"]


class Dataset:
    """A map-style dataset: subclasses implement __getitem__(idx) and __len__()."""

    def __class_getitem__(cls, item):  # Dataset[T] in type hints, as with Paddle's Generic classes
        return cls

    def __getitem__(self, idx):
        raise NotImplementedError("'{}' does not implement __getitem__".format(type(self).__name__))

    def __len__(self):
        raise NotImplementedError("'{}' does not implement __len__".format(type(self).__name__))


class _NoLengthError(TypeError, RuntimeError):
    """len() of an IterableDataset: a RuntimeError as in Paddle, and a TypeError so that list(dataset)
    (which asks for a length hint) still works."""


class IterableDataset(Dataset):
    """A stream of samples: subclasses implement __iter__()."""

    def __iter__(self):
        raise NotImplementedError("'{}' does not implement __iter__".format(type(self).__name__))

    def __getitem__(self, idx):
        raise RuntimeError("'{}' is an IterableDataset: it cannot be indexed".format(type(self).__name__))

    def __len__(self):
        raise _NoLengthError("'{}' is an IterableDataset: it has no len()".format(type(self).__name__))


def _is_tensor(x):
    from .._C import Tensor
    return isinstance(x, Tensor)


class TensorDataset(Dataset):
    """Samples are rows of the given tensors: dataset[i] == tuple(t[i] for t in tensors).

    Inside a DataLoader worker process the rows are returned as numpy arrays (workers never create oar
    tensors; the main process turns the collated batch into tensors)."""

    def __init__(self, tensors):
        tensors = list(tensors)
        if not tensors:
            raise ValueError("TensorDataset: tensors must not be empty")
        for i, t in enumerate(tensors):
            if not _is_tensor(t):
                raise TypeError("TensorDataset: tensors[{}] must be an oar.Tensor, got {}".format(i, type(t).__name__))
            if len(t.shape) == 0:
                raise ValueError("TensorDataset: tensors[{}] is 0-D; each tensor needs a first dimension".format(i))
        n = tensors[0].shape[0]
        if any(t.shape[0] != n for t in tensors):
            raise ValueError("TensorDataset: tensors do not have the same size in the 1st dimension: {}".format(
                [t.shape[0] for t in tensors]))
        self.tensors = tensors
        self._arrays = None  # numpy copies, made lazily inside workers

    def __getitem__(self, index):
        from .worker import get_worker_info
        if get_worker_info() is not None or self.tensors is None:
            if self._arrays is None:
                self._arrays = [t._numpy_view() for t in self.tensors]
            return tuple(a[index] for a in self._arrays)
        return tuple(t[index] for t in self.tensors)

    def _prepare_for_workers(self):
        """Main process, before forking: host copies of the tensors. A forked worker must not call into
        the device runtime (its threads do not survive fork), so workers read these arrays."""
        if self.tensors is not None and self._arrays is None:
            self._arrays = [t._numpy_view() for t in self.tensors]

    def __getstate__(self):
        # Tensors cannot be pickled; a spawned worker gets numpy arrays instead.
        state = dict(self.__dict__)
        state["_arrays"] = [t._numpy_view() for t in self.tensors]
        state["tensors"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)

    def __len__(self):
        if self.tensors is None:
            return self._arrays[0].shape[0]
        return self.tensors[0].shape[0]


def _prepare_for_workers(dataset):
    """Let datasets (and the datasets they wrap) get ready to be read from forked worker processes."""
    prepare = getattr(dataset, "_prepare_for_workers", None)
    if callable(prepare):
        prepare()
    inner = getattr(dataset, "dataset", None)
    if isinstance(inner, Dataset):
        _prepare_for_workers(inner)
    for d in getattr(dataset, "datasets", None) or ():
        if isinstance(d, Dataset):
            _prepare_for_workers(d)


def _to_list(value):
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


class ComposeDataset(Dataset):
    """Samples of several equally long map-style datasets joined field-wise into one tuple."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ComposeDataset: input datasets should not be empty")
        for i, d in enumerate(self.datasets):
            if not isinstance(d, Dataset):
                raise TypeError("ComposeDataset: datasets[{}] should be an oar.io.Dataset, got {}".format(
                    i, type(d).__name__))
            if isinstance(d, IterableDataset):
                raise TypeError("ComposeDataset: datasets[{}] is an IterableDataset, which is not supported".format(i))
            if i > 0 and len(d) != len(self.datasets[i - 1]):
                raise ValueError("ComposeDataset: lengths of datasets should be the same, got {}".format(
                    [len(x) for x in self.datasets]))

    def __len__(self):
        return len(self.datasets[0])

    def __getitem__(self, idx):
        sample = []
        for d in self.datasets:
            sample.extend(_to_list(d[idx]))
        return tuple(sample)


class ChainDataset(IterableDataset):
    """Iterable datasets streamed one after another."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ChainDataset: input datasets should not be empty")
        for i, d in enumerate(self.datasets):
            if not isinstance(d, IterableDataset):
                raise TypeError("ChainDataset: datasets[{}] should be an oar.io.IterableDataset, got {}".format(
                    i, type(d).__name__))

    def __iter__(self):
        for d in self.datasets:
            yield from d


class ConcatDataset(Dataset):
    """Map-style datasets concatenated end to end."""

    @staticmethod
    def cumsum(sequence):
        out, s = [], 0
        for e in sequence:
            s += len(e)
            out.append(s)
        return out

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for i, d in enumerate(self.datasets):
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset: datasets[{}] is an IterableDataset, which is not supported".format(i))
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("ConcatDataset: absolute value of index {} exceeds the length {}".format(
                    idx, len(self)))
            idx += len(self)
        if idx >= len(self):
            raise IndexError("ConcatDataset: index {} out of range for length {}".format(idx, len(self)))
        d = bisect.bisect_right(self.cumulative_sizes, idx)
        start = 0 if d == 0 else self.cumulative_sizes[d - 1]
        return self.datasets[d][idx - start]


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        return self.dataset[self.indices[idx]]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """Split `dataset` into non-overlapping random Subsets of the given lengths.

    `lengths` are either counts summing to len(dataset) or fractions summing to 1 (the floor of each
    fraction times the length, the remainder spread one by one over the splits from the first).
    The permutation comes from oar's global generator (oar.seed); `generator` is accepted and ignored,
    as in Paddle."""
    lengths = list(lengths)
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError("random_split: fraction at index {} is not between 0 and 1".format(i))
            sizes.append(int(math.floor(n * frac)))
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        for i, s in enumerate(sizes):
            if s == 0:
                warnings.warn("random_split: length of split at index {} is 0".format(i))
        lengths = sizes
    for i, s in enumerate(lengths):
        if not isinstance(s, numbers.Integral) or s < 0:
            raise ValueError("random_split: lengths[{}] = {!r} is not a non-negative integer".format(i, s))
    lengths = [int(s) for s in lengths]
    if sum(lengths) != n:
        raise ValueError("random_split: sum of input lengths ({}) does not equal the length of the input dataset "
                         "({})".format(sum(lengths), n))
    from .. import randperm
    indices = randperm(n)._numpy_view().tolist() if n > 0 else []
    out, offset = [], 0
    for s in lengths:
        out.append(Subset(dataset, indices[offset:offset + s]))
        offset += s
    return out
