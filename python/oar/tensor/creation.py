"""Creating tensors: to_tensor, zeros, ones, full, arange and the *_like forms."""
import builtins
import numbers

import numpy as np

from .. import _C
from .._C import Tensor

__all__ = ["to_tensor", "zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "arange"]

_fill = _C.Op("fill")
_arange = _C.Op("arange")
_cast = _C.Op("cast")


def _default_dtype():
    return _C.to_dtype(_C.get_default_dtype())


def _dtype_or_default(dtype):
    return _default_dtype() if dtype is None else _C.to_dtype(dtype)


def _shape_list(shape):
    """A shape given as a list/tuple (of ints or one-element tensors), a 1-D integer tensor or an int."""
    if isinstance(shape, Tensor):
        return [builtins.int(v) for v in shape.tolist()] if shape.ndim else [builtins.int(shape)]
    if isinstance(shape, numbers.Integral):
        return [builtins.int(shape)]
    if isinstance(shape, (list, tuple)):
        return [builtins.int(s) for s in shape]
    raise TypeError("shape must be a list, tuple or Tensor of ints, got {}".format(type(shape).__name__))


def _ragged_problem(data, path="data"):
    """Describes where a nested list is ragged (or holds something that is not a number), or None."""
    if isinstance(data, (list, tuple)):
        lengths = []
        for i, item in enumerate(data):
            problem = _ragged_problem(item, "{}[{}]".format(path, i))
            if problem:
                return problem
            lengths.append(_nested_shape(item))
        for i, s in enumerate(lengths[1:], 1):
            if s != lengths[0]:
                return ("{path}[{i}] has shape {si} but {path}[0] has shape {s0}; every element of a nested list "
                        "must have the same shape (ragged lists are not tensors)").format(
                            path=path, i=i, si=list(s), s0=list(lengths[0]))
    return None


def _nested_shape(data):
    if isinstance(data, (list, tuple)):
        return (len(data),) + (_nested_shape(data[0]) if len(data) else ())
    if isinstance(data, (np.ndarray, Tensor)):
        return tuple(data.shape)
    return ()


def _python_to_numpy(data):
    """Python scalars and nested lists to numpy with Paddle's defaults: float -> the default dtype,
    int -> int64, bool -> bool, complex -> complex64 (complex128 when the default is float64)."""
    try:
        arr = np.array(data)
    except ValueError as e:
        problem = _ragged_problem(data) if isinstance(data, (list, tuple)) else None
        raise ValueError("to_tensor: " + (problem or str(e))) from None
    if arr.dtype == np.object_:
        problem = _ragged_problem(data) if isinstance(data, (list, tuple)) else None
        if problem:
            raise ValueError("to_tensor: " + problem)
        raise TypeError("to_tensor: cannot convert {!r} to a tensor (an element is not a number)".format(data))
    if arr.dtype.kind in "US":
        raise TypeError("to_tensor: strings are not supported, got {!r}".format(data))
    if arr.dtype.kind == "f":
        arr = arr.astype(_C.numpy_dtype(_default_dtype()), copy=False)
    elif arr.dtype.kind == "c":
        arr = arr.astype(np.complex128 if _C.get_default_dtype() == "float64" else np.complex64, copy=False)
    elif arr.dtype.kind in "iu" and arr.dtype != np.uint8:
        arr = arr.astype(np.int64, copy=False)
    return arr


def to_tensor(data, dtype=None, place=None, stop_gradient=True):
    """Creates a tensor from a Python scalar, a (nested) list or tuple, a numpy array or a Tensor.

    Without `dtype`, Python floats take the default dtype (float32), ints int64 and bools bool; numpy
    arrays keep their dtype (float64 stays float64). The data is copied to `place` (default: the current
    device, see oar.set_device).
    """
    place = _C._to_place(place)
    if isinstance(data, Tensor):
        t = data
        if dtype is not None and t.dtype != _C.to_dtype(dtype):
            t = _cast(t, dtype)
        elif t.place == place:
            t = t.clone()
        t = t._to_place(place).detach()  # a new leaf, as in Paddle
        t.stop_gradient = stop_gradient
        return t
    if isinstance(data, np.ndarray):
        arr = data
    elif isinstance(data, (builtins.bool, numbers.Number, np.generic, list, tuple)):
        arr = _python_to_numpy(data)
    else:
        raise TypeError("to_tensor: can't convert an object of type {} to a tensor; expected a scalar, list, tuple, "
                        "numpy.ndarray or Tensor".format(type(data).__name__))
    target = None if dtype is None else _C.to_dtype(dtype)
    if target is not None and target != _C.bfloat16:
        arr = arr.astype(_C.numpy_dtype(target), copy=False)
    elif target == _C.bfloat16 and arr.dtype.kind not in "fc":
        arr = arr.astype(np.float32)
    if not arr.flags.c_contiguous:
        arr = arr.copy(order="C")  # (np.ascontiguousarray would turn a 0-d array into 1-d)
    if arr.dtype.byteorder == ">":
        arr = arr.astype(arr.dtype.newbyteorder("="))
    t = _C._from_numpy(arr, place)
    if target is not None and t.dtype != target:
        t = _cast(t, target)
    t.stop_gradient = stop_gradient
    return t


def full(shape, fill_value, dtype=None, name=None):
    """A tensor of `shape` filled with `fill_value` (dtype default: the default float dtype)."""
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    return _fill(_shape_list(shape), builtins.float(fill_value), _dtype_or_default(dtype))


def zeros(shape, dtype=None, name=None):
    return _fill(_shape_list(shape), 0.0, _dtype_or_default(dtype))


def ones(shape, dtype=None, name=None):
    return _fill(_shape_list(shape), 1.0, _dtype_or_default(dtype))


def full_like(x, fill_value, dtype=None, name=None):
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    return _fill(x.shape, builtins.float(fill_value), x.dtype if dtype is None else dtype, place=x.place)


def zeros_like(x, dtype=None, name=None):
    return _fill(x.shape, 0.0, x.dtype if dtype is None else dtype, place=x.place)


def ones_like(x, dtype=None, name=None):
    return _fill(x.shape, 1.0, x.dtype if dtype is None else dtype, place=x.place)


def arange(start=0, end=None, step=1, dtype=None, name=None):
    """Values from `start` (inclusive) to `end` (exclusive) by `step`; `arange(n)` counts 0..n-1.
    dtype default: int64 when start, end and step are all ints, else the default float dtype."""
    if end is None:
        start, end = 0, start
    vals = []
    for v in (start, end, step):
        if isinstance(v, Tensor):
            v = v.item()
        vals.append(v)
    if dtype is None:
        all_int = builtins.all(isinstance(v, numbers.Integral) for v in vals)
        dtype = _C.int64 if all_int else _default_dtype()
    return _arange(builtins.float(vals[0]), builtins.float(vals[1]), builtins.float(vals[2]), dtype)
