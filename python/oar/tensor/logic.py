"""Comparison and logical ops (results are bool tensors)."""
from .. import _C

__all__ = ["equal", "not_equal", "less_than", "less_equal", "greater_than", "greater_equal", "logical_and",
           "logical_or", "logical_xor", "logical_not", "isnan", "isinf", "isfinite", "is_tensor"]


def _binary(op_name):
    op = _C.Op(op_name)

    def fn(x, y, name=None):
        return op(x, y)

    fn.__name__ = fn.__qualname__ = op_name
    fn.__doc__ = "Elementwise {}(x, y) with broadcasting; returns a bool tensor.".format(op_name)
    return fn


equal = _binary("equal")
not_equal = _binary("not_equal")
less_than = _binary("less_than")
less_equal = _binary("less_equal")
greater_than = _binary("greater_than")
greater_equal = _binary("greater_equal")

_logical_and = _C.Op("logical_and")
_logical_or = _C.Op("logical_or")
_logical_xor = _C.Op("logical_xor")
_logical_not = _C.Op("logical_not")


def logical_and(x, y, out=None, name=None):
    return _logical_and(x, y)


def logical_or(x, y, out=None, name=None):
    return _logical_or(x, y)


def logical_xor(x, y, out=None, name=None):
    return _logical_xor(x, y)


def logical_not(x, out=None, name=None):
    return _logical_not(x)


_isnan = _C.Op("isnan")
_isinf = _C.Op("isinf")
_isfinite = _C.Op("isfinite")


def isnan(x, name=None):
    return _isnan(x)


def isinf(x, name=None):
    return _isinf(x)


def isfinite(x, name=None):
    return _isfinite(x)


def is_tensor(x):
    return isinstance(x, _C.Tensor)
