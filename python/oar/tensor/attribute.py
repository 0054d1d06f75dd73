"""Attributes of a tensor as Paddle returns them (paddle/tensor/attribute.py): shape, numel, is_complex,
broadcast_shape, and the Tensor method element_size."""
import numpy as np

from .. import _C
from .._C import Tensor

__all__ = ["shape", "numel", "is_complex", "broadcast_shape"]

_fill = _C.Op("fill", "shape", "value", "dtype")
_sum = _C.Op("sum", "axis", "keepdim")
_concat = _C.Op("concat", "axis")


def _run_extent():
    """The unknown (-1) extent of the program's variables, known only when the program runs (decision 27:
    one size per run for all of them): a count of that many ones."""
    return _sum(_fill([_C._unknown_dim()], 1.0, _C.int64), None, False)


def shape(input):
    """input's shape as a 1-D int32 tensor; extents of a program variable that are unknown (-1) are
    measured when the program runs."""
    if not isinstance(input, Tensor):
        raise TypeError("shape: input must be a Tensor, got {}".format(type(input).__name__))
    dims = list(input.shape)
    if not (_C._is_symbolic(input) and -1 in dims):
        return _C._from_numpy(np.array(dims, dtype=np.int32), input.place)
    parts = [_C._reshape(_C.Op("cast", "dtype")(_run_extent(), _C.int32), [1]) if e == -1
             else _fill([1], float(e), _C.int32) for e in dims]
    return _concat(parts, 0)


def numel(x, name=None):
    """The number of elements of x, as a 0-d int64 tensor (Paddle's). For a program variable with an
    unknown extent it is counted when the program runs."""
    if _C._is_symbolic(x) and -1 in x.shape:
        ones = _fill([_C._unknown_dim() if d == -1 else d for d in x.shape], 1.0, _C.int64)
        return _sum(ones, None, False)
    return _fill([], float(x.size), _C.int64, place=x.place)


def is_complex(x):
    if not isinstance(x, Tensor):
        raise TypeError("is_complex: x must be a Tensor, got {}".format(type(x).__name__))
    return x.dtype.is_complex


def broadcast_shape(x_shape, y_shape):
    """The shape two tensors of these shapes broadcast to (a list), as numpy's rules."""
    try:
        return list(np.broadcast_shapes(tuple(x_shape), tuple(y_shape)))
    except ValueError:
        raise ValueError("broadcast_shape: shapes {} and {} are not broadcastable".format(list(x_shape),
                                                                                      list(y_shape)))


def element_size(self):
    """Bytes per element (Tensor.element_size)."""
    return self.dtype.itemsize
