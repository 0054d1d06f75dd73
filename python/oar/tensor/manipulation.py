"""Shape manipulation (views that share storage where possible), cast and concat."""
import builtins
import numbers

from .. import _C
from .._C import Tensor
from .creation import _shape_list

__all__ = ["cast", "concat", "reshape", "transpose", "squeeze", "unsqueeze", "flatten", "expand", "broadcast_to"]

_cast = _C.Op("cast")
_concat = _C.Op("concat")


def cast(x, dtype):
    """A copy of x converted to `dtype` (a dtype object, a name such as 'float32', or a numpy dtype)."""
    return _cast(x, dtype)


def concat(x, axis=0, name=None):
    """Joins the tensors of the list `x` along `axis`."""
    if isinstance(axis, Tensor):
        axis = builtins.int(axis)
    return _concat(list(x), axis)


def _axes(axis, what):
    if axis is None:
        return []
    if isinstance(axis, Tensor):
        vals = axis.tolist()
        return vals if isinstance(vals, list) else [vals]
    if isinstance(axis, numbers.Integral):
        return [builtins.int(axis)]
    if isinstance(axis, (list, tuple)):
        return [builtins.int(a) for a in axis]
    raise TypeError("{}: axis must be an int, a list/tuple of ints or a Tensor, got {}".format(what, type(axis).__name__))


def reshape(x, shape, name=None):
    """x with a new shape: -1 infers one dimension, 0 keeps the input's dimension. A view when the
    strides allow it, otherwise a copy."""
    return _C._reshape(x, _shape_list(shape))


def transpose(x, perm, name=None):
    """A view of x with its dimensions permuted by `perm`."""
    return _C._transpose(x, _axes(perm, "transpose"))


def squeeze(x, axis=None, name=None):
    """Removes dimensions of size 1 (all of them, or those in `axis`; others are left alone)."""
    return _C._squeeze(x, _axes(axis, "squeeze"))


def unsqueeze(x, axis, name=None):
    """Inserts dimensions of size 1 at `axis` (an int or a list, inserted in order)."""
    for a in _axes(axis, "unsqueeze"):
        x = _C._unsqueeze(x, a)
    return x


def flatten(x, start_axis=0, stop_axis=-1, name=None):
    """Flattens the dimensions start_axis..stop_axis (inclusive) into one."""
    nd = x.ndim
    if nd == 0:
        return _C._reshape(x, [1])
    s = start_axis + nd if start_axis < 0 else start_axis
    e = stop_axis + nd if stop_axis < 0 else stop_axis
    if not (0 <= s < nd):
        raise ValueError("flatten: start_axis {} is out of range for a tensor of rank {}".format(start_axis, nd))
    if not (0 <= e < nd):
        raise ValueError("flatten: stop_axis {} is out of range for a tensor of rank {}".format(stop_axis, nd))
    if s > e:
        raise ValueError("flatten: start_axis ({}) must not be after stop_axis ({})".format(start_axis, stop_axis))
    shape = x.shape
    n = 1
    for d in shape[s:e + 1]:
        n *= d
    return _C._reshape(x, shape[:s] + [n] + shape[e + 1:])


def expand(x, shape, name=None):
    """A broadcast view of x with `shape` (-1 keeps a dimension)."""
    return _C._expand(x, _shape_list(shape))


def broadcast_to(x, shape, name=None):
    return _C._expand(x, _shape_list(shape))
