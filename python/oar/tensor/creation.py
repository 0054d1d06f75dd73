"""Creating tensors: to_tensor, zeros, ones, full, arange and the *_like forms."""
import builtins
import numbers

import numpy as np

from .. import _C
from .._C import Tensor

__all__ = ["to_tensor", "zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "arange",
           # the math family (docs/ops_math.md)
           "linspace", "logspace", "eye", "empty", "empty_like", "diagflat", "meshgrid", "tril_indices",
           "triu_indices"]

_fill = _C.Op("fill", "shape", "value", "dtype")
_arange = _C.Op("arange", "start", "end", "step", "dtype")
_cast = _C.Op("cast", "dtype")


def _default_dtype():
    return _C.to_dtype(_C.get_default_dtype())


def _dtype_or_default(dtype):
    return _default_dtype() if dtype is None else _C.to_dtype(dtype)


def _shape_dim(v, shape):
    if isinstance(v, Tensor) and v.size == 1:
        v = v.item()
    if isinstance(v, numbers.Integral) and not isinstance(v, builtins.bool):
        return builtins.int(v)
    raise TypeError("shape must be a list, tuple or Tensor of ints, got {!r}".format(shape))


def _shape_list(shape):
    """A shape given as a list/tuple (of ints or one-element tensors), a 1-D integer tensor or an int."""
    if isinstance(shape, Tensor):
        if shape.dtype not in (_C.int32, _C.int64) or shape.ndim > 1:
            raise TypeError("shape must be an int32/int64 tensor of at most 1 dimension, got {} of shape {}"
                            .format(shape.dtype, shape.shape))
        return [builtins.int(v) for v in shape.tolist()] if shape.ndim else [builtins.int(shape)]
    if isinstance(shape, numbers.Integral) and not isinstance(shape, builtins.bool):
        return [builtins.int(shape)]
    if isinstance(shape, (list, tuple)):
        return [_shape_dim(s, shape) for s in shape]
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


def _may_hold_var(shape):
    """Cheap test before the run-time attribute path: a Tensor, or a list/tuple holding one."""
    return isinstance(shape, Tensor) or (isinstance(shape, (list, tuple)) and
                                         builtins.any(isinstance(d, Tensor) for d in shape))


def _fill_var_shape(op, built, var, value, dtype):
    """A fill whose shape the program variable `var` holds when it runs (`built`: the build-time shape,
    -1 where unknown); value may be a variable too (zeros + value, broadcast)."""
    from ..static import var_attrs
    if not (isinstance(value, Tensor) and _C._is_symbolic(value)):
        return var_attrs.bind(_fill(var_attrs.sentinel(built), _fill_number(op, value), dtype), shape=var)
    zeros = var_attrs.bind(_fill(var_attrs.sentinel(built), 0.0, dtype), shape=var)
    if builtins.int(np.prod(value.shape)) != 1:
        raise ValueError("{}: fill_value must have one element, got the variable '{}' of shape {}".format(
            op, value.name, list(value.shape)))
    value = _C._reshape(value, [1] * len(built)) if len(built) else _C._reshape(value, [])
    if value.dtype != dtype:
        value = _cast(value, dtype)
    return _C.Op("add")(zeros, value)


def full(shape, fill_value, dtype=None, name=None):
    """A tensor of `shape` filled with `fill_value` (dtype default: the default float dtype). fill_value may
    be a one-element Tensor or array, also a program variable (whose value is known only when it runs);
    so may `shape` or its elements (decision 96)."""
    dtype = _dtype_or_default(dtype)
    if _may_hold_var(shape) and _C._is_symbolic_building():
        from ..static import var_attrs
        if var_attrs.has_var(shape):
            built, var = var_attrs.shape_var(shape, "full")
            return _fill_var_shape("full", built, var, fill_value, dtype)
    shape = _shape_list(shape)
    if isinstance(fill_value, Tensor) and _C._is_symbolic(fill_value):
        return _fill_with_variable("full", shape, fill_value, dtype)
    return _fill(shape, _fill_number("full", fill_value), dtype)


def _fill_number(op, v):
    if isinstance(v, (Tensor, np.ndarray, np.generic)):
        if builtins.int(np.prod(v.shape)) != 1:
            raise ValueError("{}: fill_value must be a number or a one-element Tensor/array, got shape {}".format(
                op, list(v.shape)))
        v = v.item()
    return builtins.float(v)


def _fill_with_variable(op, shape, v, dtype):
    """`shape` filled with the value program variable v will hold: zeros + v, broadcast at run time."""
    if builtins.int(np.prod(v.shape)) != 1:
        raise ValueError("{}: fill_value must have one element, got the variable '{}' of shape {}".format(
            op, v.name, list(v.shape)))
    v = _C._reshape(v, [1] * len(shape)) if len(shape) else _C._reshape(v, [])
    if v.dtype != dtype:
        v = _cast(v, dtype)
    return _C.Op("add")(_fill(shape, 0.0, dtype), v)


def zeros(shape, dtype=None, name=None):
    return _full(shape, 0.0, dtype)


def ones(shape, dtype=None, name=None):
    return _full(shape, 1.0, dtype)


def _run_shape(shape, like):
    """`shape` for a creation op: a static-graph variable's unknown extents (-1) go in as the recording
    sentinel, which the executor replaces by the run's extent."""
    shape = list(shape)
    if -1 in shape and _C._is_symbolic(like):
        return [_C._unknown_dim() if d == -1 else d for d in shape]
    return shape


def full_like(x, fill_value, dtype=None, name=None):
    dtype = x.dtype if dtype is None else _C.to_dtype(dtype)
    if isinstance(fill_value, Tensor) and _C._is_symbolic(fill_value):
        return _fill_with_variable("full_like", _run_shape(x.shape, x), fill_value, dtype)
    return _fill(_run_shape(x.shape, x), _fill_number("full_like", fill_value), dtype, place=x.place)


def zeros_like(x, dtype=None, name=None):
    return _fill(_run_shape(x.shape, x), 0.0, x.dtype if dtype is None else dtype, place=x.place)


def ones_like(x, dtype=None, name=None):
    return _fill(_run_shape(x.shape, x), 1.0, x.dtype if dtype is None else dtype, place=x.place)


def arange(start=0, end=None, step=1, dtype=None, name=None):
    """Values from `start` (inclusive) to `end` (exclusive) by `step`; `arange(n)` counts 0..n-1.
    dtype default: int64 when start, end and step are all ints, else the default float dtype."""
    if end is None:
        start, end = 0, start
    if _C._is_symbolic_building() and builtins.any(isinstance(v, Tensor) and _C._is_symbolic(v)
                                                   for v in (start, end, step)):
        return _arange_var(start, end, step, dtype)
    vals = []
    for arg, v in zip(("start", "end", "step"), (start, end, step)):
        if isinstance(v, (Tensor, np.ndarray, np.generic)):
            # Paddle takes one-element tensors and arrays of any rank
            if builtins.int(np.prod(v.shape)) != 1:
                raise TypeError("arange: {} must be a number or a one-element Tensor/array, got shape {}".format(
                    arg, list(v.shape)))
            v = v.item()
        vals.append(v)
    if dtype is None:
        all_int = builtins.all(isinstance(v, numbers.Integral) for v in vals)
        dtype = _C.int64 if all_int else _default_dtype()
    return _arange(builtins.float(vals[0]), builtins.float(vals[1]), builtins.float(vals[2]), dtype)


def _arange_var(start, end, step, dtype):
    """arange with program variables among start/end/step: the length is known when the program runs."""
    from ..static import var_attrs
    if dtype is None:  # Paddle: int64 when every bound is an int or an integer tensor
        ints = builtins.all(v.dtype in (_C.int32, _C.int64) if isinstance(v, Tensor) else
                            isinstance(v, numbers.Integral) for v in (start, end, step))
        dtype = _C.int64 if ints else _default_dtype()
    else:
        dtype = _C.to_dtype(dtype)
    bounds = {k: var_attrs.scalar_var(v, "arange", k) for k, v in (("start", start), ("end", end), ("step", step))}
    # build-time placeholders giving the sentinel length
    return var_attrs.bind(_arange(0.0, builtins.float(_C._new_unknown_dim()), 1.0, dtype), **bounds)


# ---- the math family (docs/ops_math.md) -------------------------------------------------------------
_linspace = _C.Op("linspace", "start", "stop", "num", "dtype")
_eye = _C.Op("eye", "num_rows", "num_columns", "dtype")


def _number(v, what):
    if isinstance(v, Tensor):
        if v.size != 1:
            raise ValueError("{} must be a number or a one-element tensor, got shape {}".format(what, v.shape))
        return v.item()
    return v


def linspace(start, stop, num, dtype=None, name=None):
    """`num` evenly spaced values from start to stop (both included); dtype default: the default float.
    Each may be a program variable (decision 96)."""
    if _C._is_symbolic_building() and builtins.any(isinstance(v, Tensor) and _C._is_symbolic(v)
                                                   for v in (start, stop, num)):
        from ..static import var_attrs
        if not isinstance(num, Tensor) and (not isinstance(num, numbers.Integral) or isinstance(num, builtins.bool)):
            raise TypeError("linspace: num must be an int, got {!r}".format(num))
        if isinstance(num, Tensor) and num.dtype not in (_C.int32, _C.int64):
            raise TypeError("linspace: num must be an int32/int64 tensor, got {}".format(num.dtype))
        bounds = {k: var_attrs.scalar_var(v, "linspace", k)
                  for k, v in (("start", start), ("stop", stop), ("num", num))}
        out = _linspace(0.0, 1.0, _C._new_unknown_dim(), _dtype_or_default(dtype))
        return var_attrs.bind(out, **bounds)
    start, stop, num = _number(start, "linspace: start"), _number(stop, "linspace: stop"), _number(num, "linspace: num")
    if not isinstance(num, numbers.Integral) or isinstance(num, builtins.bool):
        raise TypeError("linspace: num must be an int, got {!r}".format(num))
    return _linspace(builtins.float(start), builtins.float(stop), builtins.int(num), _dtype_or_default(dtype))


def logspace(start, stop, num, base=10.0, dtype=None, name=None):
    """base ** linspace(start, stop, num), computed in float64 then cast to dtype."""
    exps = linspace(start, stop, num, _C.float64)
    b = _fill([], builtins.float(_number(base, "logspace: base")), _C.float64, place=exps.place)
    out = _C.Op("pow")(b, exps)
    dtype = _dtype_or_default(dtype)
    return out if dtype == _C.float64 else _cast(out, dtype)


def eye(num_rows, num_columns=None, dtype=None, name=None):
    """A [num_rows, num_columns] matrix with ones on the diagonal (num_columns default: num_rows)."""
    num_rows = _number(num_rows, "eye: num_rows")
    num_columns = num_rows if num_columns is None else _number(num_columns, "eye: num_columns")
    for what, v in (("num_rows", num_rows), ("num_columns", num_columns)):
        if not isinstance(v, numbers.Integral) or isinstance(v, builtins.bool):
            raise TypeError("eye: {} must be an int, got {!r}".format(what, v))
        if v < 0:  # Paddle raises TypeError here too
            raise TypeError("eye: {} must be a non-negative int, got {}".format(what, v))
    return _eye(builtins.int(num_rows), builtins.int(num_columns), _dtype_or_default(dtype))


def empty(shape, dtype=None, name=None):
    """An uninitialised tensor in Paddle; here it is zero-filled."""
    return zeros(shape, dtype)


def empty_like(x, dtype=None, name=None):
    return zeros_like(x, dtype)


def diagflat(x, offset=0, name=None):
    """A 2-D tensor with the flattened x on diagonal `offset` (differentiable: built with index_add)."""
    flat = x.reshape([-1])
    n = flat.shape[0]
    size = n + builtins.abs(offset)
    row0, col0 = (0, offset) if offset >= 0 else (-offset, 0)
    index = _arange(builtins.float(row0 * size + col0), builtins.float(row0 * size + col0 + n * (size + 1)),
                    builtins.float(size + 1), _C.int64, place=x.place)
    base = _fill([size * size], 0.0, x.dtype, place=x.place)
    return _C.Op("index_add", "axis")(base, index, flat, 0).reshape([size, size])


def meshgrid(*args, **kwargs):
    """Coordinate grids from 1-D tensors (indexing 'ij', as Paddle); also accepts one list of tensors."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = tuple(args[0])
    for i, t in enumerate(args):
        if t.ndim > 1:
            raise ValueError("meshgrid: input {} must be 0-D or 1-D, got shape {}".format(i, t.shape))
    shape = [t.size for t in args]
    out = []
    for i, t in enumerate(args):
        view = [1] * len(args)
        view[i] = shape[i]
        out.append(t.reshape(view).expand(shape))
    return out


def _tri_indices(name, row, col, offset, dtype, upper):
    if col is None:
        col = row
    for what, v in (("row", row), ("col", col), ("offset", offset)):
        if not isinstance(v, numbers.Integral) or isinstance(v, builtins.bool):
            raise TypeError("{}: {} must be an int, got {!r}".format(name, what, v))
    if row < 0 or col < 0:
        raise ValueError("{}: row ({}) and col ({}) must be >= 0".format(name, row, col))
    _C._check_size(name, [2, row, col], _C.int64, "cpu")  # the host arrays below
    r, c = np.indices((row, col))
    keep = (c - r >= offset) if upper else (c - r <= offset)
    return to_tensor(np.stack([r[keep], c[keep]]), dtype=dtype)


def tril_indices(row, col, offset=0, dtype="int64"):
    """The [2, N] row/column indices of the lower triangle (diagonal `offset` included), row-major."""
    return _tri_indices("tril_indices", row, col, offset, dtype, upper=False)


def triu_indices(row, col=None, offset=0, dtype="int64"):
    """The [2, N] row/column indices of the upper triangle (diagonal `offset` included), row-major."""
    return _tri_indices("triu_indices", row, col, offset, dtype, upper=True)


# C fast paths of the common calls (python/src/fast_api.cc, decision 134); the functions above run the rest.
from .._fast import fast as _fast  # noqa: E402

_full = full
full = _fast("full", full, "fill", ["shape", "value", "dtype"])
zeros = _fast("filled", zeros, "fill", ["shape", "value", "dtype"], value=0.0)
ones = _fast("filled", ones, "fill", ["shape", "value", "dtype"], value=1.0)
arange = _fast("arange", arange, "arange", ["start", "end", "step", "dtype"])
