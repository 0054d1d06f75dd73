"""Batch collation (Paddle's default_collate_fn / default_convert_fn) and the numpy <-> oar.Tensor
conversion of whole batches.

Collation works on numpy: numbers and arrays are stacked into numpy arrays, and the DataLoader turns
the arrays of a finished batch into oar Tensors in the main process. Worker processes therefore never
create oar tensors (tensor samples are read out with .numpy() there)."""
import numbers
from collections.abc import Mapping, Sequence

import numpy as np

from .._C import Tensor

__all__ = ["default_collate_fn", "default_convert_fn"]


def _in_worker():
    from .worker import get_worker_info
    return get_worker_info() is not None


def default_collate_fn(batch):
    """Stack a list of samples field by field, recursively.

    numpy arrays -> np.stack (batch dimension first); numbers -> np.array (Python ints become int64 and
    Python floats float64, as numpy and Paddle do); oar Tensors -> oar.stack (numpy inside a worker);
    str/bytes -> the list as is; dicts -> dict of collated fields; lists/tuples -> list of collated
    fields (all samples must have the same number of fields)."""
    if not isinstance(batch, (list, tuple)) or len(batch) == 0:
        raise TypeError("default_collate_fn: batch should be a non-empty list of samples, got {!r}".format(
            type(batch).__name__))
    sample = batch[0]
    if isinstance(sample, np.ndarray):
        return np.stack(batch, axis=0)
    if isinstance(sample, Tensor):
        if _in_worker():
            return np.stack([t._numpy_view() for t in batch], axis=0)
        from .. import stack
        return stack(list(batch), axis=0)
    if isinstance(sample, (numbers.Number, np.number, np.bool_)):
        return np.array(batch)
    if isinstance(sample, (str, bytes)):
        return list(batch)
    if isinstance(sample, Mapping):
        return {key: default_collate_fn([d[key] for d in batch]) for key in sample}
    if isinstance(sample, Sequence):
        n = len(sample)
        if any(len(s) != n for s in batch):
            raise RuntimeError("default_collate_fn: fields number not same among samples in a batch: {}".format(
                [len(s) for s in batch]))
        return [default_collate_fn(list(fields)) for fields in zip(*batch)]
    raise TypeError("default_collate_fn: batch data can only contain oar.Tensor, numpy.ndarray, dict, list, tuple, "
                    "number, str or bytes, but got {}".format(type(sample).__name__))


def default_convert_fn(sample):
    """The identity on a single sample (batch_size=None): numpy arrays become Tensors later, numbers and
    strings stay as they are; containers are walked recursively."""
    if isinstance(sample, (Tensor, np.ndarray, str, bytes)):
        return sample
    if isinstance(sample, Mapping):
        return {key: default_convert_fn(sample[key]) for key in sample}
    if isinstance(sample, Sequence):
        return [default_convert_fn(s) for s in sample]
    return sample


def _tensors_to_numpy(obj):
    """Replace every oar Tensor in a (nested) batch by a numpy array: what a worker sends back."""
    if isinstance(obj, Tensor):
        return obj._numpy_view()
    if isinstance(obj, dict):
        return {k: _tensors_to_numpy(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_tensors_to_numpy(v) for v in obj]
    return obj


def _numpy_to_tensors(obj, place=None):
    """Replace every numeric numpy array in a (nested) batch by an oar Tensor; tuples become lists (Paddle)."""
    if isinstance(obj, np.ndarray) and obj.dtype.kind in "biufc":
        from .. import to_tensor
        return to_tensor(obj, place=place)
    if isinstance(obj, dict):
        return {k: _numpy_to_tensors(v, place) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_numpy_to_tensors(v, place) for v in obj]
    return obj
