"""Samplers: iterables of dataset indices (Paddle's paddle.io.Sampler and friends)."""
import numpy as np

__all__ = ["Sampler", "SequenceSampler", "RandomSampler", "WeightedRandomSampler", "SubsetRandomSampler"]


class Sampler:
    """Base class: subclasses implement __iter__ (indices) and usually __len__."""

    def __class_getitem__(cls, item):  # Sampler[T] in type hints
        return cls

    def __init__(self, data_source=None):
        self.data_source = data_source

    def __iter__(self):
        raise NotImplementedError("'{}' does not implement __iter__".format(type(self).__name__))


class SequenceSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """Random indices: a permutation (replacement=False) or draws with replacement, num_samples of them
    (default len(data_source)). With `generator` (an iterator of indices, as in Paddle) the indices are
    taken from it instead. Randomness comes from numpy's global generator (np.random.seed)."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError("RandomSampler: replacement should be a bool, got {!r}".format(replacement))
        if not isinstance(self.num_samples, int) or isinstance(self.num_samples, bool) or self.num_samples <= 0:
            raise ValueError("RandomSampler: num_samples should be a positive integer, got {!r}".format(
                self.num_samples))
        if not replacement and self.num_samples > len(data_source):
            raise ValueError("RandomSampler: num_samples ({}) should be <= the length of data_source ({}) when "
                             "replacement is False".format(self.num_samples, len(data_source)))

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        if self.generator is not None:
            for _ in range(self.num_samples):
                try:
                    yield next(self.generator)
                except StopIteration:
                    return
            return
        n = len(self.data_source)
        yield from np.random.choice(n, self.num_samples, replace=self.replacement).tolist()

    def __len__(self):
        return self.num_samples


def _weights_array(weights):
    from .._C import Tensor
    if isinstance(weights, Tensor):
        weights = weights._numpy_view()
    if isinstance(weights, (list, tuple)):
        weights = np.array(weights)
    if not isinstance(weights, np.ndarray):
        raise TypeError("WeightedRandomSampler: weights should be an oar.Tensor, numpy.ndarray, list or tuple, "
                        "got {}".format(type(weights).__name__))
    if weights.ndim not in (1, 2):
        raise ValueError("WeightedRandomSampler: weights should be a 1-D or 2-D array, got shape {}".format(
            weights.shape))
    return weights.astype(np.float64).reshape(-1, weights.shape[-1])


class WeightedRandomSampler(Sampler):
    """num_samples indices drawn with probability proportional to `weights` (per row for 2-D weights)."""

    def __init__(self, weights, num_samples, replacement=True):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError("WeightedRandomSampler: num_samples should be a positive integer, got {!r}".format(
                num_samples))
        if not isinstance(replacement, bool):
            raise ValueError("WeightedRandomSampler: replacement should be a bool, got {!r}".format(replacement))
        self.weights = weights
        self.num_samples = num_samples
        self.replacement = replacement

    def __iter__(self):
        w = _weights_array(self.weights)
        if np.any(np.isnan(w)) or np.any(np.isinf(w)):
            raise ValueError("WeightedRandomSampler: weights should not contain NaN or INF")
        if np.any(w < 0):
            raise ValueError("WeightedRandomSampler: weights should be non-negative")
        nonzero = np.sum(w > 0, axis=1)
        if np.any(nonzero == 0):
            raise ValueError("WeightedRandomSampler: weights should have positive values")
        if not self.replacement and np.any(nonzero < self.num_samples):
            raise ValueError("WeightedRandomSampler: the number of positive weights ({}) should not be less than "
                             "num_samples ({}) when replacement=False".format(nonzero.min(), self.num_samples))
        w = w / w.sum(axis=1, keepdims=True)
        rows = [np.random.choice(w.shape[1], self.num_samples, self.replacement, w[i]) for i in range(w.shape[0])]
        return iter(np.array(rows).reshape(-1).tolist())

    def __len__(self):
        w = _weights_array(self.weights)
        return self.num_samples * w.shape[0]


class SubsetRandomSampler(Sampler):
    """The given indices in a random order (a fresh permutation from oar's generator each epoch)."""

    def __init__(self, indices):
        if len(indices) == 0:
            raise ValueError("SubsetRandomSampler: the length of `indices` should be greater than 0")
        self.indices = indices

    def __iter__(self):
        from .. import randperm
        for i in randperm(len(self.indices))._numpy_view().tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)
