"""Run-time attributes (docs/decisions.md 200): an op argument that is a variable of the program being
built (a shape, arange's bounds, nonzero's count) is bound to the recorded op's attribute, and the
executor reads the variable's value into it each time the program runs. Shapes built from such values
show -1 for the extents known only then, as Paddle's do."""
import builtins
import numbers

from .. import _C
from .._C import Tensor

_fill = _C.Op("fill", "shape", "value", "dtype")
_cast = _C.Op("cast", "dtype")
_concat = _C.Op("concat", "axis")


def is_var(v):
    """Whether v is a variable of a program being built (its value exists only when the program runs)."""
    return isinstance(v, Tensor) and _C._is_symbolic(v)


def has_var(v):
    """Whether v is a variable, or a list/tuple holding one."""
    return is_var(v) or (isinstance(v, (list, tuple)) and builtins.any(is_var(e) for e in v))


def sentinel(shape):
    """A build-time shape with a fresh recording sentinel for each -1 (unknown) extent: each stands for
    one extent the executor measures when the op runs."""
    return [_C._new_unknown_dim() if d == -1 else d for d in shape]


def _int_element(v, op, what):
    """v (a one-element integer variable) as an int64 [1] variable."""
    if v.dtype not in (_C.int32, _C.int64):
        raise TypeError("{}: {} must hold int32/int64 values, got the variable '{}' of dtype {}".format(
            op, what, v.name, v.dtype))
    if builtins.int(_numel(v.shape)) != 1:
        raise ValueError("{}: each element of {} must be an int or a one-element variable, got '{}' of shape {}"
                         .format(op, what, v.name, list(v.shape)))
    return _C._reshape(v if v.dtype == _C.int64 else _cast(v, _C.int64), [1])


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def shape_var(shape, op, what="shape"):
    """A shape that is a variable or a list holding variables: (the build-time shape, -1 where the value
    is known only at run time; an int64 1-D variable holding the whole shape when the program runs)."""
    if is_var(shape):
        if shape.dtype not in (_C.int32, _C.int64) or shape.ndim > 1:
            raise TypeError("{}: {} must be an int32/int64 variable of at most 1 dimension, got '{}' ({}, shape {})"
                            .format(op, what, shape.name, shape.dtype, list(shape.shape)))
        n = shape.shape[0] if shape.ndim else 1
        if n < 0:
            raise ValueError("{}: the variable '{}' given as {} has an unknown length; its length (the rank of "
                             "the result) must be known while the program is built".format(op, shape.name, what))
        v = shape if shape.dtype == _C.int64 else _cast(shape, _C.int64)
        return [-1] * n, _C._reshape(v, [n])
    built, parts = [], []
    for d in shape:
        if is_var(d):
            parts.append(_int_element(d, op, what))
            built.append(-1)
        else:
            if isinstance(d, Tensor):
                d = d.item()
            if not isinstance(d, numbers.Integral) or isinstance(d, builtins.bool):
                raise TypeError("{}: {} must be a list of ints or one-element variables, got {!r}".format(op, what, d))
            parts.append(_fill([1], builtins.float(d), _C.int64))
            built.append(builtins.int(d))
    return built, _concat(parts, 0)


def scalar_var(v, op, what, dtype=None):
    """A number or one-element tensor/variable as a one-element variable (cast to dtype when given)."""
    if is_var(v):
        if builtins.int(_numel(v.shape)) != 1:
            raise ValueError("{}: {} must have one element, got the variable '{}' of shape {}".format(
                op, what, v.name, list(v.shape)))
        if dtype is not None and v.dtype != dtype:
            v = _cast(v, dtype)
        return _C._reshape(v, [])
    if isinstance(v, Tensor):
        v = v.item()
    return _fill([], builtins.float(v), dtype if dtype is not None else _C.float64)


def bind(out, dims=None, **vars):
    """Binds attributes of the op that recorded `out` to variables; `dims` (sentinels for the unknown
    extents) replaces out's build-time dims. Returns out."""
    _C._bind_var_attrs(out, vars, dims)
    return out


def view(x, name, attrs, dims, vars):
    """View op `name` of x with placeholder attributes, build-time `dims` (with sentinels; -1: x's extent
    at that axis, right-aligned) and the attributes of dict `vars` bound to variables."""
    return _C._record_view_var_attrs(x, name, attrs, dims, vars)
