"""Comparison and logical ops (results are bool tensors)."""
from .. import _C

__all__ = ["equal", "not_equal", "less_than", "less_equal", "greater_than", "greater_equal", "logical_and",
           "logical_or", "logical_xor", "logical_not", "isnan", "isinf", "isfinite", "is_tensor",
           # the math family (docs/ops_math.md)
           "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "isclose", "allclose", "equal_all"]


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



# ---- the math family (docs/ops_math.md) -------------------------------------------------------------
_bitwise_and = _C.Op("bitwise_and")
_bitwise_or = _C.Op("bitwise_or")
_bitwise_xor = _C.Op("bitwise_xor")
_bitwise_not = _C.Op("bitwise_not")


def bitwise_and(x, y, out=None, name=None):
    """Elementwise x & y for bool and integer tensors."""
    return _bitwise_and(*_C._promote(x, y))


def bitwise_or(x, y, out=None, name=None):
    return _bitwise_or(*_C._promote(x, y))


def bitwise_xor(x, y, out=None, name=None):
    return _bitwise_xor(*_C._promote(x, y))


def bitwise_not(x, out=None, name=None):
    return _bitwise_not(x)


def isclose(x, y, rtol=1e-05, atol=1e-08, equal_nan=False, name=None):
    """|x - y| <= atol + rtol * |y| elementwise (numpy's rule); equal infinities are close."""
    x, y = _C._promote(x, y)
    if x.dtype not in (_C.float16, _C.bfloat16, _C.float32, _C.float64):
        x, y = _C.Op("cast", "dtype")(x, _C.float64), _C.Op("cast", "dtype")(y, _C.float64)
    sub, absf = _C.Op("subtract"), _C.Op("abs")
    fill = _C.Op("fill", "shape", "value", "dtype")
    tol = _C.Op("add")(fill([], float(atol), x.dtype, place=x.place),
                       _C.Op("multiply")(fill([], float(rtol), x.dtype, place=x.place), absf(y)))
    close = _C.Op("less_equal")(absf(sub(x, y)), tol)
    # numpy: the tolerance rule for finite pairs; otherwise only equal values (same-sign infinities)
    finite = logical_and(isfinite(x), isfinite(y))
    close = _C.Op("where")(finite, close, equal(x, y))
    if equal_nan:
        close = logical_or(close, logical_and(isnan(x), isnan(y)))
    return close


def allclose(x, y, rtol=1e-05, atol=1e-08, equal_nan=False, name=None):
    """True (a 0-d bool tensor) when every element of x is close to y (see isclose)."""
    return _C.Op("all", "axis", "keepdim")(isclose(x, y, rtol, atol, equal_nan), None, False)


def equal_all(x, y, name=None):
    """True (a 0-d bool tensor) when x and y have the same shape and equal elements."""
    if list(x.shape) != list(y.shape):
        return _C.Op("fill", "shape", "value", "dtype")([], 0.0, _C.bool, place=x.place)
    return _C.Op("all", "axis", "keepdim")(equal(x, y), None, False)
