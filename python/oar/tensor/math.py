"""Elementwise math and reductions, with Paddle 2.x names, arguments and defaults."""
from .. import _C

__all__ = [
    "add", "subtract", "multiply", "divide", "floor_divide", "remainder", "mod", "floor_mod", "maximum", "minimum",
    "pow", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "square", "sign", "sin", "cos", "tanh", "sigmoid",
    "floor", "ceil", "round", "reciprocal", "erf", "abs", "neg", "sum", "mean", "max", "min", "prod", "matmul",
]

_add = _C.Op("add")
_subtract = _C.Op("subtract")
_multiply = _C.Op("multiply")
_divide = _C.Op("divide")
_floor_divide = _C.Op("floor_divide")
_remainder = _C.Op("remainder")
_maximum = _C.Op("maximum")
_minimum = _C.Op("minimum")
_pow = _C.Op("pow")
_matmul = _C.Op("matmul")
_cast = _C.Op("cast")


# Binary elementwise ops take tensors or Python scalars and promote dtypes as Paddle's operators do.
def add(x, y, name=None):
    return _add(x, y)


def subtract(x, y, name=None):
    return _subtract(x, y)


def multiply(x, y, name=None):
    return _multiply(x, y)


def divide(x, y, name=None):
    """True division: integer inputs give the default float dtype."""
    return _divide(x, y)


def floor_divide(x, y, name=None):
    return _floor_divide(x, y)


def remainder(x, y, name=None):
    """Python's %: the result has the sign of y."""
    return _remainder(x, y)


mod = remainder
floor_mod = remainder


def maximum(x, y, name=None):
    return _maximum(x, y)


def minimum(x, y, name=None):
    return _minimum(x, y)


def pow(x, y, name=None):
    return _pow(x, y)


def matmul(x, y, transpose_x=False, transpose_y=False, name=None):
    return _matmul(x, y, transpose_x, transpose_y)


def _unary(op_name, doc=None):
    op = _C.Op(op_name)

    def fn(x, name=None):
        return op(x)

    fn.__name__ = fn.__qualname__ = op_name
    fn.__doc__ = doc or "Elementwise {}(x).".format(op_name)
    return fn


exp = _unary("exp")
log = _unary("log", "Natural logarithm, elementwise.")
log1p = _unary("log1p")
expm1 = _unary("expm1")
sqrt = _unary("sqrt")
rsqrt = _unary("rsqrt", "1 / sqrt(x), elementwise.")
square = _unary("square")
sign = _unary("sign")
sin = _unary("sin")
cos = _unary("cos")
tanh = _unary("tanh")
sigmoid = _unary("sigmoid", "1 / (1 + exp(-x)), elementwise.")
floor = _unary("floor")
ceil = _unary("ceil")
round = _unary("round", "Rounds half away from zero (as Paddle).")
reciprocal = _unary("reciprocal")
erf = _unary("erf")
abs = _unary("abs")
neg = _unary("neg")


def _reduce(op_name, doc):
    op = _C.Op(op_name)

    def fn(x, axis=None, keepdim=False, name=None):
        return op(x, axis, keepdim)

    fn.__name__ = fn.__qualname__ = op_name
    fn.__doc__ = doc
    return fn


mean = _reduce("mean", "Mean over `axis` (int, list or None for all axes); floating dtypes only.")
max = _reduce("max", "Maximum over `axis` (int, list or None for all axes).")
min = _reduce("min", "Minimum over `axis` (int, list or None for all axes).")
_sum = _C.Op("sum")
_prod = _C.Op("prod")


def sum(x, axis=None, dtype=None, keepdim=False, name=None):
    """Sum over `axis` (int, list or None for all axes). bool and integer types narrower than int64 sum to
    int64 unless `dtype` says otherwise."""
    if dtype is not None:
        dtype = _C.to_dtype(dtype)
        if x.dtype != dtype:
            x = _cast(x, dtype)
    out = _sum(x, axis, keepdim)
    if dtype is not None and out.dtype != dtype:
        out = _cast(out, dtype)
    return out


def prod(x, axis=None, keepdim=False, dtype=None, name=None):
    if dtype is not None and x.dtype != _C.to_dtype(dtype):
        x = _cast(x, dtype)
    return _prod(x, axis, keepdim)
