"""argmax, argmin, where, index_select."""
from .. import _C
from .._C import Tensor

__all__ = ["argmax", "argmin", "where", "index_select"]

_argmax = _C.Op("argmax")
_argmin = _C.Op("argmin")
_where = _C.Op("where")
_index_select = _C.Op("index_select")
_cast = _C.Op("cast")


def _arg(op, x, axis, keepdim, dtype):
    out = op(x, 0, keepdim, True) if axis is None else op(x, axis, keepdim, False)
    if dtype is not None and out.dtype != _C.to_dtype(dtype):
        out = _cast(out, dtype)
    return out


def argmax(x, axis=None, keepdim=False, dtype="int64", name=None):
    """Index of the maximum over `axis` (None: over all elements, flattened)."""
    return _arg(_argmax, x, axis, keepdim, dtype)


def argmin(x, axis=None, keepdim=False, dtype="int64", name=None):
    """Index of the minimum over `axis` (None: over all elements, flattened)."""
    return _arg(_argmin, x, axis, keepdim, dtype)


def where(condition, x=None, y=None, name=None):
    """Elements of x where condition is True, else of y (tensors or Python scalars, broadcast)."""
    if x is None and y is None:
        raise NotImplementedError("where(condition) without x and y (nonzero) is not available yet")
    if x is None or y is None:
        raise ValueError("where: x and y must both be given, or neither")
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):
        from .creation import to_tensor
        x = to_tensor(x, place=condition.place)
    x, y = _C._promote(x, y)
    return _where(condition, x, y)


def index_select(x, index, axis=0, name=None):
    """Rows of `x` along `axis` picked by the 1-D int32/int64 tensor `index`."""
    return _index_select(x, index, axis)
