"""Shape manipulation (views that share storage where possible), cast, concat, gather/scatter and
padding. Many ops here are composites over views, concat, index_select, where and the manip kernels
(gather_nd, scatter_nd_add, take_along_axis, put_along_axis); see docs/ops_manip.md."""
import builtins
import numbers
import sys

import numpy as np

from .. import _C
from .._C import Tensor
from ..framework.errors import invalid_argument
from .creation import _may_hold_var, _shape_list, to_tensor

__all__ = ["cast", "concat", "reshape", "transpose", "squeeze", "unsqueeze", "flatten", "expand", "broadcast_to",
           "stack", "unstack", "unbind", "split", "chunk", "tile", "repeat_interleave", "flip", "roll", "rot90",
           "pad", "tril", "triu", "diag", "diagonal", "slice", "strided_slice", "moveaxis", "expand_as",
           "broadcast_tensors", "gather", "gather_nd", "scatter", "scatter_nd_add", "scatter_nd",
           "take_along_axis", "put_along_axis", "masked_fill", "diag_embed", "crop", "index_put", "tolist"]

_cast = _C.Op("cast", "dtype")
_concat = _C.Op("concat", "axis")


def cast(x, dtype):
    """A copy of x converted to `dtype` (a dtype object, a name such as 'float32', or a numpy dtype)."""
    return _cast(x, dtype)


def concat(x, axis=0, name=None):
    """Joins the tensors of the list `x` along `axis`."""
    if isinstance(axis, Tensor):
        axis = builtins.int(axis)
    from .array import TensorArray
    if isinstance(x, TensorArray):  # rows of the buffer joined along `axis`: stack there, merge two axes
        st = stack(x, axis)
        a = _axis(axis, st.ndim - 1, "concat")
        return flatten(st, a, a + 1)
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
    strides allow it, otherwise a copy. `shape` may be (or hold) a program variable (decision 96)."""
    if _may_hold_var(shape):
        from ..static import var_attrs
        if var_attrs.has_var(shape):
            built, var = var_attrs.shape_var(shape, "reshape")
            built = [x.shape[i] if d == 0 and i < x.ndim else d for i, d in enumerate(built)]
            dims = var_attrs.sentinel(built)
            return var_attrs.view(x, "reshape", {"shape": dims}, dims, {"shape": var})
    return _C._reshape(x, _shape_list(shape))


def _expand_var(x, shape, op):
    """x broadcast to a shape that is (or holds) a program variable, read when the program runs."""
    from ..static import var_attrs
    built, var = var_attrs.shape_var(shape, op)
    lead = len(built) - x.ndim
    if lead < 0:
        raise ValueError("{}: the target shape has {} dims, fewer than x's {}".format(op, len(built), x.ndim))
    # build time: an extent of x other than 1 is kept (the only size it may have; -1 there: x's own
    # unknown extent), and a 1 may grow to an extent known when the program runs
    dims = []
    for i, d in enumerate(built):
        j = i - lead
        if j >= 0 and d == -1 and x.shape[j] != 1:
            dims.append(x.shape[j])
        else:
            dims.append(var_attrs.sentinel([d])[0])
    return var_attrs.view(x, "expand", {"shape": dims}, dims, {"shape": var})


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
    if not isinstance(x, Tensor):  # Paddle: ValueError
        raise ValueError("flatten: x must be a Tensor, got {}".format(type(x).__name__))
    for what, a in (("start_axis", start_axis), ("stop_axis", stop_axis)):
        if not isinstance(a, numbers.Integral) or isinstance(a, builtins.bool):
            raise ValueError("flatten: {} must be an int, got {!r}".format(what, a))
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
    if any(d < 0 for d in shape[s:e + 1]):  # a program variable's unknown extent: reshape infers it
        n = -1
    return _C._reshape(x, shape[:s] + [n] + shape[e + 1:])


def expand(x, shape, name=None):
    """A broadcast view of x with `shape` (-1 keeps a dimension); `shape` may be (or hold) a program
    variable (decision 96)."""
    if _may_hold_var(shape) and _C._is_symbolic_building():
        from ..static import var_attrs
        if var_attrs.has_var(shape):
            return _expand_var(x, shape, "expand")
    return _C._expand(x, _shape_list(shape))


def broadcast_to(x, shape, name=None):
    if _may_hold_var(shape) and _C._is_symbolic_building():
        from ..static import var_attrs
        if var_attrs.has_var(shape):
            return _expand_var(x, shape, "broadcast_to")
    return _C._expand(x, _shape_list(shape))


_fill = _C.Op("fill", "shape", "value", "dtype")
_copy = _C.Op("copy")
_where = _C.Op("where")
_index_select = _C.Op("index_select", "axis")
_gather_nd = _C.Op("gather_nd")
_scatter_nd_add = _C.Op("scatter_nd_add")
_take_along_axis = _C.Op("take_along_axis", "axis")
_put_along_axis = _C.Op("put_along_axis", "axis", "reduce")
_tril = _C.Op("tril", "diagonal")
_pad = _C.Op("pad", "pads", "mode", "value")
_triu = _C.Op("triu", "diagonal")


def _axis(axis, ndim, op):
    """axis as a non-negative int; IndexError naming the op when out of range."""
    if isinstance(axis, Tensor):
        axis = builtins.int(axis)
    n = builtins.max(ndim, 1)
    if not isinstance(axis, numbers.Integral) or isinstance(axis, builtins.bool):
        raise TypeError("{}: axis must be an int, got {!r}".format(op, axis))
    if not (-n <= axis < n):
        raise IndexError("{}: axis {} is out of range for a tensor of rank {}".format(op, axis, ndim))
    return builtins.int(axis) % n


def _const(arr, place):
    """A constant (index / mask) tensor from a numpy array."""
    return to_tensor(np.ascontiguousarray(arr), place=place)


def _scalar(value, dtype, place):
    return _fill([], builtins.float(value), dtype, place=place)


def _int_list(v):
    if isinstance(v, Tensor):
        v = v.tolist()
    if isinstance(v, numbers.Integral):
        return [builtins.int(v)]
    return [builtins.int(a.item() if isinstance(a, Tensor) else a) for a in v]


def stack(x, axis=0, name=None):
    """Joins same-shaped tensors along a new axis."""
    from .array import TensorArray
    if isinstance(x, TensorArray):  # the array's buffer is already stacked on axis 0
        buf = x._stacked("stack")
        a = _axis(axis, buf.ndim, "stack")
        return buf if a == 0 else transpose(buf, list(range(1, a + 1)) + [0] + list(range(a + 1, buf.ndim)))
    xs = list(x)
    if not xs:
        raise ValueError("stack: x must not be empty")
    a = _axis(axis, xs[0].ndim + 1, "stack")
    for i, t in enumerate(xs):
        if t.shape != xs[0].shape:
            raise ValueError("stack: x[{}].shape {} != x[0].shape {}".format(i, t.shape, xs[0].shape))
    return _concat([_C._unsqueeze(t, a) for t in xs], a)


def unbind(input, axis=0):
    """The slices of `input` along `axis`, as a list of views with that axis removed."""
    a = _axis(axis, input.ndim, "unbind")
    return [_C._squeeze(_C._slice(input, a, i, i + 1, 1), [a]) for i in range(input.shape[a])]


def unstack(x, axis=0, num=None):
    out = unbind(x, axis)
    if num is not None and num != len(out):
        raise ValueError("unstack: num ({}) != x.shape[axis] ({})".format(num, len(out)))
    return out


def split(x, num_or_sections, axis=0, name=None):
    """Splits x along axis into `num_or_sections` equal parts (an int) or parts of the listed sizes
    (one of them may be -1). The parts are views."""
    if isinstance(axis, numbers.Real) and not isinstance(axis, numbers.Integral):
        raise invalid_argument("split: axis must be an int, got {!r}".format(axis))  # as Paddle: not TypeError
    a = _axis(axis, x.ndim, "split")
    n = x.shape[a]
    if isinstance(num_or_sections, numbers.Integral):
        num = builtins.int(num_or_sections)
        if num <= 0 or n % num != 0:
            raise ValueError("split: x.shape[{}] ({}) is not divisible by num_or_sections ({})".format(a, n, num))
        sizes = [n // num] * num
    else:
        sizes = _int_list(num_or_sections)
        unknown = [i for i, s in enumerate(sizes) if s == -1]
        if len(unknown) > 1:
            raise ValueError("split: at most one section may be -1, got {}".format(sizes))
        if unknown:
            sizes[unknown[0]] = n - (builtins.sum(sizes) + 1)
        if builtins.sum(sizes) != n or builtins.any(s < 0 for s in sizes):
            raise invalid_argument("split: sections {} do not add up to x.shape[{}] ({})".format(
                list(num_or_sections), a, n))
    out, start = [], 0
    for s in sizes:
        out.append(_C._slice(x, a, start, start + s, 1))
        start += s
    return out


def chunk(x, chunks, axis=0, name=None):
    """Splits x into `chunks` equal parts along axis."""
    if not isinstance(chunks, numbers.Integral) or chunks <= 0:
        raise ValueError("chunk: chunks must be a positive int, got {}".format(chunks))
    return split(x, builtins.int(chunks), axis)


def tile(x, repeat_times, name=None):
    """x repeated `repeat_times[i]` times along each dimension (shapes aligned from the right)."""
    reps = _int_list(repeat_times)
    if builtins.any(r < 0 for r in reps):
        raise ValueError("tile: repeat_times must be non-negative, got {}".format(reps))
    shape = x.shape
    d = builtins.max(len(reps), len(shape))
    reps = [1] * (d - len(reps)) + reps
    shape = [1] * (d - len(shape)) + shape
    inter, big, final = [], [], []
    for r, s in zip(reps, shape):
        inter += [1, s]
        big += [r, s]
        final.append(r * s)
    return _C._reshape(_C._expand(_C._reshape(x, inter), big), final)


def repeat_interleave(x, repeats, axis=None, name=None):
    """Repeats each element (axis=None: of the flattened x) `repeats` times along axis."""
    if axis is None:
        x = _C._reshape(x, [-1])
        axis = 0
    a = _axis(axis, x.ndim, "repeat_interleave")
    n = x.shape[a]
    if isinstance(repeats, Tensor) and _C._is_symbolic(repeats):
        return _repeat_interleave_var(x, repeats, a, n)
    if isinstance(repeats, (Tensor, np.ndarray)):
        repeats = repeats.tolist()
    reps = list(repeats) if isinstance(repeats, (list, tuple)) else [repeats] * n
    if not builtins.all(isinstance(r, numbers.Integral) and not isinstance(r, builtins.bool) for r in reps):
        raise TypeError("repeat_interleave: repeats must be an int or a list or 1-D tensor of ints, got {!r}"
                        .format(repeats))
    if len(reps) != n or builtins.any(r < 0 for r in reps):
        raise ValueError("repeat_interleave: repeats must be a non-negative int or have x.shape[axis] ({}) "
                         "entries, got {!r}".format(n, repeats))
    total = builtins.sum(builtins.int(r) for r in reps)  # Python ints: never wraps
    if total > sys.maxsize:
        raise ValueError("repeat_interleave: the output length {} is more than 2^63-1".format(total))
    shape = x.shape
    shape[a] = total
    _C._check_size("repeat_interleave", shape, x.dtype, x.place)
    _C._check_size("repeat_interleave", [total], _C.int64, "cpu")  # the index built below
    index = np.repeat(np.arange(n, dtype=np.int64), np.asarray(reps, dtype=np.int64))
    return _index_select(x, _const(index, x.place), a)


def _repeat_interleave_var(x, repeats, a, n):
    """repeat_interleave with a program variable as repeats: the output length is read when the program
    runs (decision 96). Element p of the output is element #{i : cumsum(repeats)[i] <= p} of x."""
    from .creation import arange
    if repeats.dtype not in (_C.int32, _C.int64) or repeats.ndim > 1:
        raise TypeError("repeat_interleave: repeats must be an int32/int64 variable of at most 1 dimension, got "
                        "'{}' ({}, shape {})".format(repeats.name, repeats.dtype, repeats.shape))
    if n < 0:
        raise ValueError("repeat_interleave: with a variable as repeats, x.shape[axis] must be known")
    reps = _cast(_C._reshape(repeats, [-1]), _C.int64)
    if repeats.size == 1:  # one count for every element
        reps = reps + _fill([n], 0.0, _C.int64)
    from .math import cumsum
    ends = cumsum(reps, axis=0)
    total = _C._reshape(_C._slice(ends, 0, n - 1, n, 1), []) if n else _fill([], 0.0, _C.int64)
    pos = _C._reshape(arange(0, total, 1, dtype="int64"), [-1, 1])
    from .math import sum as _sum
    index = _sum(_cast(_C._reshape(ends, [1, n]) <= pos, _C.int64), axis=1)
    return _index_select(x, index, a)


def flip(x, axis, name=None):
    """x reversed along the given axes (a copy)."""
    t = x
    for a in _int_list(axis):
        if not -builtins.max(x.ndim, 1) <= a < builtins.max(x.ndim, 1):  # Paddle: ValueError, not IndexError
            raise invalid_argument("flip: axis {} is out of range for a tensor of rank {}".format(a, x.ndim))
        t = _C._slice(t, _axis(a, x.ndim, "flip"), sys.maxsize, -sys.maxsize - 1, -1)
    return _copy(t)


def roll(x, shifts, axis=None, name=None):
    """Rolls x by `shifts` along axis (None: over the flattened tensor, keeping the shape)."""
    shifts = _int_list(shifts)
    if axis is None:
        if len(shifts) != 1:
            raise ValueError("roll: with axis=None, shifts must be a single int, got {}".format(shifts))
        return _C._reshape(roll(_C._reshape(x, [-1]), shifts, 0), x.shape)
    axes = _int_list(axis)
    if len(axes) != len(shifts):
        raise ValueError("roll: shifts ({}) and axis ({}) must have the same length".format(shifts, axes))
    for s, a in zip(shifts, axes):
        a = _axis(a, x.ndim, "roll")
        n = x.shape[a]
        if n == 0:
            continue
        s %= n
        if s:
            x = _concat([_C._slice(x, a, n - s, n, 1), _C._slice(x, a, 0, n - s, 1)], a)
    return x


def rot90(x, k=1, axes=[0, 1], name=None):
    """Rotates x by 90 degrees k times in the plane of `axes` (from the first towards the second)."""
    if len(axes) != 2:
        raise ValueError("rot90: axes must have 2 entries, got {}".format(axes))
    a0, a1 = _axis(axes[0], x.ndim, "rot90"), _axis(axes[1], x.ndim, "rot90")
    if a0 == a1:
        raise ValueError("rot90: axes must be different, got {}".format(axes))
    k %= 4
    if k == 0:
        return _copy(x)
    if k == 2:
        return flip(x, [a0, a1])
    perm = list(range(x.ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return _copy(_C._transpose(flip(x, [a1]), perm))
    return flip(_C._transpose(x, perm), [a1])


def moveaxis(x, source, destination, name=None):
    src = [_axis(a, x.ndim, "moveaxis") for a in _int_list(source)]
    dst = [_axis(a, x.ndim, "moveaxis") for a in _int_list(destination)]
    if len(src) != len(dst):
        raise ValueError("moveaxis: source {} and destination {} must have the same length".format(src, dst))
    order = [i for i in range(x.ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _C._transpose(x, order)


def pad(x, pad, mode="constant", value=0.0, data_format="NCHW", name=None):
    """paddle.nn.functional.pad: `pad` lists (before, after) pairs. When it covers every dimension
    (len == 2 * ndim) it starts at the first dimension; otherwise it covers the spatial dimensions of
    `data_format` starting from the last (W first: [left, right, top, bottom, front, back])."""
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise ValueError("pad: mode must be constant, reflect, replicate or circular, got {!r}".format(mode))
    pads = _int_list(pad)
    nd = x.ndim
    if len(pads) % 2:
        raise ValueError("pad: pad must have an even length, got {}".format(pads))
    pairs = {}
    if len(pads) == 2 * nd and mode == "constant":
        for d in range(nd):
            pairs[d] = (pads[2 * d], pads[2 * d + 1])
    else:
        if data_format not in ("NCL", "NLC", "NCHW", "NHWC", "NCDHW", "NDHWC"):
            raise ValueError("pad: unknown data_format {!r}".format(data_format))
        if nd != len(data_format):
            raise ValueError("pad: data_format {} needs a {}-D input, got shape {}".format(
                data_format, len(data_format), x.shape))
        spatial = [i for i, c in enumerate(data_format) if c not in "NC"]
        if len(pads) > 2 * len(spatial):
            raise ValueError("pad: pad {} has more entries than 2 x {} spatial dims".format(pads, len(spatial)))
        for k in range(len(pads) // 2):
            pairs[spatial[len(spatial) - 1 - k]] = (pads[2 * k], pads[2 * k + 1])
    full = [0] * (2 * nd)
    for d, (b, e) in pairs.items():
        full[2 * d], full[2 * d + 1] = b, e
    modes = {"constant": 0, "reflect": 1, "replicate": 2, "circular": 3}
    return _pad(x, full, modes[mode], builtins.float(value))


def _int_arg(v, op, what):
    """An int argument: an int or a one-element integer tensor, else TypeError (floats are not truncated)."""
    if isinstance(v, Tensor) and v.size == 1:
        v = v.item()
    if not isinstance(v, numbers.Integral) or isinstance(v, builtins.bool):
        raise TypeError("{}: {} must be an int, got {!r}".format(op, what, v))
    return builtins.int(v)


def tril(x, diagonal=0, name=None):
    """The lower triangle of the last two dims (elements with col - row <= diagonal), others zero."""
    return _tril(x, _int_arg(diagonal, "tril", "diagonal"))


def triu(x, diagonal=0, name=None):
    """The upper triangle of the last two dims (elements with col - row >= diagonal), others zero."""
    return _triu(x, _int_arg(diagonal, "triu", "diagonal"))


def _diag_coords(m, n, offset):
    if offset >= n or -offset >= m:  # no diagonal (also keeps offsets beyond int64 out of numpy)
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if offset >= 0:
        length = builtins.max(0, builtins.min(m, n - offset))
        rows = np.arange(length)
        return rows, rows + offset
    length = builtins.max(0, builtins.min(m + offset, n))
    cols = np.arange(length)
    return cols - offset, cols


def diagonal(x, offset=0, axis1=0, axis2=1, name=None):
    """The diagonal of the (axis1, axis2) planes, appended as the last dimension."""
    a1, a2 = _axis(axis1, x.ndim, "diagonal"), _axis(axis2, x.ndim, "diagonal")
    if a1 == a2:
        raise ValueError("diagonal: axis1 and axis2 must differ, got {} and {}".format(axis1, axis2))
    rest = [i for i in range(x.ndim) if i not in (a1, a2)]
    t = _C._transpose(x, [a1, a2] + rest)
    rows, cols = _diag_coords(x.shape[a1], x.shape[a2], _int_arg(offset, "diagonal", "offset"))
    g = _gather_nd(t, _const(np.stack([rows, cols], -1).astype(np.int64).reshape(-1, 2), x.place))
    return _C._transpose(g, list(range(1, g.ndim)) + [0])


def diag(x, offset=0, padding_value=0, name=None):
    """A 1-D x: a square matrix with x on diagonal `offset`, `padding_value` elsewhere. A 2-D x: its
    diagonal `offset`."""
    if x.ndim == 2:
        return diagonal(x, offset)
    if x.ndim > 1:
        raise ValueError("diag: x must be 0-D, 1-D or 2-D, got shape {}".format(x.shape))
    offset = _int_arg(offset, "diag", "offset")
    v = _C._reshape(x, [-1])
    n = v.shape[0]
    size = n + builtins.abs(offset)
    if size > sys.maxsize:
        raise ValueError("diag: the result's size {} is more than 2^63-1".format(size))
    _C._check_size("diag", [size, size], _C.float64, "cpu")  # the host buffer below
    rows, cols = _diag_coords(size, size, offset)
    base = np.full((size, size), padding_value, dtype=np.float64)
    base[rows, cols] = 0
    base_t = cast(_const(base, x.place), x.dtype) if x.dtype != _C.bool else _const(base != 0, x.place)
    if x.dtype == _C.bool:
        mask = np.zeros((size, size), dtype=bool)
        mask[rows, cols] = True
        return _where(_const(mask, x.place), _diag_bool(v, rows, cols, size), base_t)
    idx = _const(np.stack([rows, cols], -1).astype(np.int64).reshape(-1, 2), x.place)
    return _scatter_nd_add(base_t, idx, v)


def _diag_bool(v, rows, cols, size):
    out = _fill([size, size], 0.0, _C.int64, place=v.place)
    idx = _const(np.stack([rows, cols], -1).astype(np.int64).reshape(-1, 2), v.place)
    return cast(_scatter_nd_add(out, idx, cast(v, "int64")), "bool")


def _clamp_range(n, start, end):
    start = start + n if start < 0 else start
    end = end + n if end < 0 else end
    return builtins.min(builtins.max(start, 0), n), builtins.min(builtins.max(end, 0), n)


def slice(input, axes, starts, ends):
    """paddle.slice: input[starts[i]:ends[i]] along each axes[i] (bounds clamped, negatives from the end).
    starts/ends may be (or hold) program variables, read when the program runs (decision 96; such a
    slice has no gradient)."""
    if (_may_hold_var(starts) or _may_hold_var(ends)) and _C._is_symbolic_building():
        from ..static import var_attrs
        if var_attrs.has_var(starts) or var_attrs.has_var(ends):
            return _slice_var(input, _int_list(axes), starts, ends)
    axes, starts, ends = _int_list(axes), _int_list(starts), _int_list(ends)
    if not (len(axes) == len(starts) == len(ends)):
        raise ValueError("slice: axes, starts and ends must have the same length, got {}, {}, {}".format(axes, starts,
                                                                                                        ends))
    t = input
    for a, s, e in zip(axes, starts, ends):
        a = _axis(a, input.ndim, "slice")
        s, e = _clamp_range(input.shape[a], s, e)
        t = _C._slice(t, a, s, builtins.max(s, e), 1)
    return t


def _slice_var(x, axes, starts, ends):
    from ..static import var_attrs

    def bounds(v, what):
        if var_attrs.is_var(v):
            if v.ndim != 1 or v.shape[0] != len(axes):
                raise ValueError("slice: {} must have one value per axis ({}), got the variable '{}' of shape {}"
                                 .format(what, len(axes), v.name, list(v.shape)))
            return [_C._slice(v, 0, i, i + 1, 1) for i in range(len(axes))]
        if not isinstance(v, (list, tuple)) or len(v) != len(axes):
            raise ValueError("slice: {} must have one value per axis ({}), got {!r}".format(what, len(axes), v))
        return [d if var_attrs.is_var(d) else builtins.int(d.item() if isinstance(d, Tensor) else d) for d in v]

    t = x
    for a, s, e in zip(axes, bounds(starts, "starts"), bounds(ends, "ends")):
        a = _axis(a, x.ndim, "slice")
        vars = {k: var_attrs.scalar_var(v, "slice", k, _C.int64) for k, v in (("start", s), ("end", e))
                if var_attrs.is_var(v)}
        fixed_s = 0 if var_attrs.is_var(s) else s
        fixed_e = 0 if var_attrs.is_var(e) else e
        shape = [-1] * t.ndim  # x's extents, but for a new one along a
        shape[a] = _C._new_unknown_dim()
        t = var_attrs.view(t, "slice", {"axis": a, "start": fixed_s, "end": fixed_e, "step": 1}, shape, vars)
    return t


def strided_slice(x, axes, starts, ends, strides, name=None):
    """x[starts[i]:ends[i]:strides[i]] along each axes[i] (Python slice semantics)."""
    axes, starts, ends, strides = _int_list(axes), _int_list(starts), _int_list(ends), _int_list(strides)
    if not (len(axes) == len(starts) == len(ends) == len(strides)):
        raise ValueError("strided_slice: axes, starts, ends and strides must have the same length")
    t = x
    for a, s, e, st in zip(axes, starts, ends, strides):
        if st == 0:
            raise ValueError("strided_slice: stride must not be 0")
        t = _C._slice(t, _axis(a, x.ndim, "strided_slice"), s, e, st)
    return t


def expand_as(x, y, name=None):
    """x broadcast to y's shape."""
    return _C._expand(x, list(y.shape))


def broadcast_tensors(input, name=None):
    """The tensors broadcast to their common shape (views)."""
    try:
        shape = list(np.broadcast_shapes(*[tuple(t.shape) for t in input]))
    except ValueError:
        raise ValueError("broadcast_tensors: shapes {} are not broadcastable".format([t.shape for t in input]))
    return [_C._expand(t, shape) for t in input]


def _index_1d(index, op):
    if not isinstance(index, Tensor):
        try:
            arr = np.asarray(index)
        except ValueError as e:
            raise ValueError("{}: index {!r} is not an integer array: {}".format(op, index, e)) from None
        if arr.dtype.kind not in "iu" and arr.size:
            raise TypeError("{}: index must hold int64 integers, got {!r}".format(op, index))
        index = to_tensor(arr.astype(np.int64))
    if index.ndim == 0:
        index = _C._reshape(index, [1])
    if index.ndim != 1:
        if index.ndim == 2 and index.shape[1] == 1:
            index = _C._reshape(index, [-1])
        else:
            raise ValueError("{}: index must be 1-D, got shape {}".format(op, index.shape))
    return index


def gather(x, index, axis=None, name=None):
    """Slices of x along axis (default 0) picked by the 1-D int tensor `index`."""
    a = 0 if axis is None else _axis(axis, x.ndim, "gather")
    return _index_select(x, _index_1d(index, "gather"), a)


def gather_nd(x, index, name=None):
    """x[index[..., 0], ..., index[..., k-1]]: slices of x addressed by the last dim of index."""
    return _gather_nd(x, index)


def scatter(x, index, updates, overwrite=True, name=None):
    """x with rows `index` (along axis 0) replaced by the rows of updates (overwrite=True; repeated
    indices: the last wins) or zeroed and then accumulated (overwrite=False)."""
    index = _index_1d(index, "scatter")
    idx = index._numpy_view().astype(np.int64)
    n = x.shape[0]
    if ((idx < -n) | (idx >= n)).any():
        raise IndexError("scatter: index {} is out of range for x.shape[0] = {}".format(idx.tolist(), n))
    idx = np.where(idx < 0, idx + n, idx)
    rows = np.zeros(n, dtype=bool)
    rows[idx] = True
    cleared = _where(_const(rows.reshape([n] + [1] * (x.ndim - 1)), x.place), _scalar(0, x.dtype, x.place), x)
    if overwrite:
        last = {}
        for pos, i in enumerate(idx.tolist()):
            last[i] = pos
        keep = np.array(sorted(last.values()), dtype=np.int64)
        if len(keep) != len(idx):
            updates = _index_select(updates, _const(keep, x.place), 0)
            idx = idx[keep]
    return _scatter_nd_add(cleared, _const(idx.reshape(-1, 1), x.place), updates)


def scatter_nd_add(x, index, updates, name=None):
    """x with updates added at the positions index[..., :] (repeated positions accumulate)."""
    return _scatter_nd_add(x, index, updates)


def scatter_nd(index, updates, shape, name=None):
    """zeros(shape) with updates added at the positions index[..., :]."""
    return _scatter_nd_add(_fill(_shape_list(shape), 0.0, updates.dtype, place=updates.place), index, updates)


def _along_shapes(arr, indices, axis, op):
    if arr.ndim != indices.ndim:
        raise ValueError("{}: indices rank ({}) must equal arr rank ({})".format(op, indices.ndim, arr.ndim))
    a = _axis(axis, arr.ndim, op)
    try:
        sa, si = list(arr.shape), list(indices.shape)
        sa[a] = si[a] = 1  # the axis itself is not broadcast
        b = list(np.broadcast_shapes(tuple(sa), tuple(si)))
    except ValueError:
        raise ValueError("{}: indices.shape {} does not broadcast against arr.shape {}".format(op, indices.shape,
                                                                                              arr.shape))
    ashape, ishape = list(b), list(b)
    ashape[a], ishape[a] = arr.shape[a], indices.shape[a]
    return a, ashape, ishape


def take_along_axis(arr, indices, axis, broadcast=True):
    """Elements of arr at `indices` along axis (numpy take_along_axis; negative indices allowed)."""
    a, ashape, ishape = _along_shapes(arr, indices, axis, "take_along_axis")
    if broadcast:
        arr, indices = _C._expand(arr, ashape), _C._expand(indices, ishape)
    return _take_along_axis(arr, indices, a)


_REDUCE = {"assign": 0, "add": 1, "mul": 2, "multiply": 2}


def put_along_axis(arr, indices, values, axis, reduce="assign", include_self=True, broadcast=True):
    """A copy of arr with `values` written at `indices` along axis; reduce 'assign', 'add' or 'multiply'."""
    if reduce not in _REDUCE:
        raise ValueError("put_along_axis: reduce must be 'assign', 'add' or 'multiply', got {!r}".format(reduce))
    if not include_self:
        raise NotImplementedError("put_along_axis: include_self=False is not supported")
    a, ashape, ishape = _along_shapes(arr, indices, axis, "put_along_axis")
    if broadcast and ashape != arr.shape:
        arr = _C._expand(arr, ashape)
    if broadcast:
        indices = _C._expand(indices, ishape)
    if not isinstance(values, Tensor):
        values = to_tensor(np.asarray(values), place=arr.place)
    if values.dtype != arr.dtype:
        values = cast(values, arr.dtype)
    values = _C._expand(values, list(indices.shape))
    return _put_along_axis(arr, indices, values, a, _REDUCE[reduce])


def masked_fill(x, mask, value, name=None):
    """x with `value` (a scalar or a tensor, broadcast) where mask is True."""
    if not isinstance(value, Tensor):
        value = _scalar(value, x.dtype, x.place)
    elif value.dtype != x.dtype:
        value = cast(value, x.dtype)
    return _where(mask, value, x)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """The last dim of input placed on diagonal `offset` of new (dim1, dim2) planes, zeros elsewhere."""
    r = input.ndim + 1
    d1, d2 = _axis(dim1, r, "diag_embed"), _axis(dim2, r, "diag_embed")
    if d1 == d2:
        raise ValueError("diag_embed: dim1 and dim2 must differ, got {} and {}".format(dim1, dim2))
    offset = _int_arg(offset, "diag_embed", "offset")
    n = input.shape[-1]
    size = n + builtins.abs(offset)
    if size > sys.maxsize:
        raise ValueError("diag_embed: the result's size {} is more than 2^63-1".format(size))
    rows, cols = _diag_coords(size, size, offset)
    batch = input.shape[:-1]
    upd = _C._transpose(input, [input.ndim - 1] + list(range(input.ndim - 1)))  # [n, *batch]
    planes = _scatter_nd_add(_fill([size, size] + batch, 0.0, input.dtype, place=input.place),
                             _const(np.stack([rows, cols], -1).astype(np.int64).reshape(-1, 2), input.place), upd)
    perm, b = [], 2
    for k in range(r):
        if k == d1:
            perm.append(0)
        elif k == d2:
            perm.append(1)
        else:
            perm.append(b)
            b += 1
    return _C._transpose(planes, perm)


def crop(x, shape=None, offsets=None, name=None):
    """x[offsets[i]:offsets[i] + shape[i]] along every dim (shape -1: to the end; default: x's shape)."""
    shape = list(x.shape) if shape is None else _int_list(shape)
    offsets = [0] * x.ndim if offsets is None else _int_list(offsets)
    if len(shape) != x.ndim or len(offsets) != x.ndim:
        raise ValueError("crop: shape {} and offsets {} must have x's rank ({})".format(shape, offsets, x.ndim))
    t = x
    for d, (s, o) in enumerate(zip(shape, offsets)):
        n = x.shape[d]
        s = n - o if s == -1 else s
        if o < 0 or s < 0 or o + s > n:
            raise ValueError("crop: offset {} + size {} is out of range for dim {} of size {}".format(o, s, d, n))
        t = _C._slice(t, d, o, o + s, 1)
    return t


def index_put(x, indices, value, accumulate=False, name=None):
    """A copy of x with x[indices] = value (accumulate: +=); `indices` is a tuple of int (broadcast
    together) or bool tensors, as numpy advanced indexing. Without accumulate, repeated positions
    receive the sum of their values."""
    idx = []
    for i in indices:
        if i.dtype == _C.bool:
            from .search import nonzero
            idx.extend(_C._reshape(c, [-1]) for c in nonzero(i, as_tuple=True))
        else:
            idx.append(cast(i, "int64") if i.dtype != _C.int64 else i)
    if len(idx) > x.ndim:
        raise ValueError("index_put: {} indices for a tensor of rank {}".format(len(idx), x.ndim))
    shape = list(np.broadcast_shapes(*[tuple(i.shape) for i in idx]))
    index = _concat([_C._unsqueeze(_C._expand(i, shape), len(shape)) for i in idx], -1)
    target = shape + list(x.shape[len(idx):])
    if not isinstance(value, Tensor):
        value = to_tensor(np.asarray(value), place=x.place)
    if value.dtype != x.dtype:
        value = cast(value, x.dtype)
    value = _C._expand(value, target)
    if not accumulate:
        hit = _scatter_nd_add(_fill(x.shape, 0.0, _C.int64, place=x.place), index,
                              _fill(target, 1.0, _C.int64, place=x.place))
        x = _where(hit > 0, _scalar(0, x.dtype, x.place), x)
    return _scatter_nd_add(x, index, value)


def tolist(x):
    """x's values as nested Python lists (paddle.tolist; the same as x.tolist())."""
    if not isinstance(x, Tensor):
        raise TypeError("tolist: x must be a Tensor, got {}".format(type(x).__name__))
    return x.tolist()


# C fast paths of the common calls (python/src/fast_api.cc, decision 134); the functions above run the rest.
from .._fast import fast as _fast  # noqa: E402

reshape = _fast("reshape", reshape)
expand = _fast("expand", expand)
broadcast_to = _fast("expand", broadcast_to)
flatten = _fast("flatten", flatten)
transpose = _fast("transpose", transpose)
unsqueeze = _fast("unsqueeze", unsqueeze)
squeeze = _fast("squeeze", squeeze)
cast = _fast("cast", cast, "cast", ["dtype"])
concat = _fast("concat", concat, "concat", ["axis"])
stack = _fast("stack", stack, "concat", ["axis"])
