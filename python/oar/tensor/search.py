"""argmax, argmin, where, index_select, sort/argsort/topk, nonzero, masked_select, kthvalue, median,
mode, unique, searchsorted, bincount."""
import builtins

import numpy as np

from .. import _C
from .._C import Tensor

__all__ = ["argmax", "argmin", "where", "index_select", "sort", "argsort", "topk", "nonzero", "masked_select",
           "kthvalue", "median", "quantile", "mode", "unique", "unique_consecutive", "searchsorted", "bincount"]

_argmax = _C.Op("argmax", "axis", "keepdim", "flatten")
_argmin = _C.Op("argmin", "axis", "keepdim", "flatten")
_where = _C.Op("where")
_index_select = _C.Op("index_select", "axis")
_cast = _C.Op("cast", "dtype")


def _arg(op, x, axis, keepdim, dtype):
    if dtype is None:  # as in Paddle
        raise ValueError("{}: dtype must be 'int32' or 'int64', got None".format(op.name))
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
        return nonzero(condition, as_tuple=True)
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


_sort = _C.Op("sort", "axis", "descending", "stable")
_sort_values = _C.Op("sort", "axis", "descending", "stable", "values_only")
_topk = _C.Op("topk", "k", "axis", "largest")
_nonzero = _C.Op("nonzero", "count")
_sum = _C.Op("sum", "axis", "keepdim")
_scatter_nd_add = _C.Op("scatter_nd_add")
_fill = _C.Op("fill", "shape", "value", "dtype")


def _axis(axis, ndim, op):
    if isinstance(axis, Tensor):
        axis = builtins.int(axis)
    n = builtins.max(ndim, 1)
    if not (-n <= axis < n):
        raise IndexError("{}: axis {} is out of range for a tensor of rank {}".format(op, axis, ndim))
    return axis % n


def _sorted(x, axis, descending, stable=False):
    return _sort(x, _axis(axis, x.ndim, "sort"), builtins.bool(descending), builtins.bool(stable))


def sort(x, axis=-1, descending=False, stable=False, name=None):
    """x sorted along axis (ties keep their order; NaN last ascending, first descending)."""
    if not _C._is_symbolic(x) and (x.stop_gradient or not _C.is_grad_enabled()):
        # eager, no gradient: the kernel may skip the positions (decision 135)
        return _sort_values(x, _axis(axis, x.ndim, "sort"), builtins.bool(descending), builtins.bool(stable),
                            True)[0]
    return _sorted(x, axis, descending)[0]


def argsort(x, axis=-1, descending=False, stable=False, name=None):
    """The int64 indices that sort x along axis (stable)."""
    return _sorted(x, axis, descending)[1]


def topk(x, k, axis=None, largest=True, sorted=True, name=None):
    """(values, indices) of the k largest (largest=False: smallest) elements along axis (default -1);
    always sorted (ties: the earlier position first)."""
    axis = -1 if axis is None else axis
    a = _axis(axis, x.ndim, "topk")
    k = builtins.int(k)
    n = x.shape[a] if x.ndim else 1
    if not (0 <= k <= n):
        raise ValueError("topk: k ({}) must be between 0 and x.shape[{}] ({})".format(k, a, n))
    return _topk(x, k, a, builtins.bool(largest))


def nonzero(x, as_tuple=False):
    """The coordinates of the nonzero elements: an int64 tensor [count, ndim], or (as_tuple) a tuple of
    ndim [count, 1] tensors (Paddle's shape, not numpy's [count]). In a program being built the count is
    read when the program runs (decision 96)."""
    total = _sum(_C.Op("cast", "dtype")(x, "bool") if x.dtype != _C.bool else x)
    if _C._is_symbolic(total):
        from ..static import var_attrs
        # count 0 passes the build-time check; the result's extent is a fresh sentinel
        out = var_attrs.bind(_nonzero(x, 0), dims=[_C._new_unknown_dim(), x.ndim], count=total)
    else:
        out = _nonzero(x, builtins.int(total.item()))
    if not as_tuple:
        return out
    if x.ndim == 0:
        return (_C._reshape(out, [-1]),)
    return tuple(_C._slice(out, 1, d, d + 1, 1) for d in range(x.ndim))


def masked_select(x, mask, name=None):
    """The elements of x where mask (broadcast against x) is True, as a 1-D tensor."""
    if mask.dtype != _C.bool:
        raise TypeError("masked_select: mask.dtype must be bool, got {}".format(mask.dtype))
    try:
        shape = list(np.broadcast_shapes(*(tuple(1 if d == -1 else d for d in t.shape) for t in (x, mask))))
    except ValueError:
        raise ValueError("masked_select: x.shape {} and mask.shape {} are not broadcastable".format(x.shape,
                                                                                                   mask.shape))
    if _C._is_symbolic(x) or _C._is_symbolic(mask):  # the count is known when the program runs
        if list(x.shape) != list(mask.shape):  # broadcast by ops, as -1 extents cannot be named here
            x = _C.Op("where")(mask, x, x)
            never = _C.Op("logical_and")(_C.Op("not_equal")(x, x), _fill([], 0.0, _C.bool))
            mask = _C.Op("logical_or")(mask, never)
        return _C.Op("gather_nd")(x, nonzero(mask))
    return _C._expand(x, shape)[_C._expand(mask, shape)]


def kthvalue(x, k, axis=None, keepdim=False, name=None):
    """(values, indices) of the k-th smallest element (1-based) along axis (default -1)."""
    axis = -1 if axis is None else axis
    a = _axis(axis, x.ndim, "kthvalue")
    n = x.shape[a] if x.ndim else 1
    if not (1 <= k <= n):
        raise ValueError("kthvalue: k ({}) must be between 1 and x.shape[{}] ({})".format(k, a, n))
    v, i = _sorted(x, a, False)
    if x.ndim == 0:
        return v, i
    v, i = _C._slice(v, a, k - 1, k, 1), _C._slice(i, a, k - 1, k, 1)
    if not keepdim:
        v, i = _C._squeeze(v, [a]), _C._squeeze(i, [a])
    return v, i


def median(x, axis=None, keepdim=False, name=None):
    """The median along axis (None: of all elements); the mean of the two middle values when the count
    is even. Integer inputs give float32."""
    if x.dtype not in (_C.float16, _C.bfloat16, _C.float32, _C.float64):
        x = _C.Op("cast", "dtype")(x, "float32")
    if axis is None:
        t = _C._reshape(x, [-1])
        a = 0
    else:
        a = _axis(axis, x.ndim, "median")
        t = x
    n = t.shape[a] if t.ndim else 1
    if n == 0:
        raise ValueError("median: cannot take the median of an empty axis")
    v = _sorted(t, a, False)[0] if t.ndim else _C._reshape(t, [1])
    if n % 2:
        m = _C._slice(v, a, n // 2, n // 2 + 1, 1)
    else:
        m = (_C._slice(v, a, n // 2 - 1, n // 2, 1) + _C._slice(v, a, n // 2, n // 2 + 1, 1)) * 0.5
    if t.ndim:  # a row holding NaN has a NaN median (as numpy and Paddle), wherever sort put it
        has_nan = _C.Op("any", "axis", "keepdim")(_C.Op("isnan")(t), [a], True)
        m = _where(has_nan, _C.Op("fill", "shape", "value", "dtype")([], float("nan"), m.dtype, place=m.place), m)
    if axis is None:
        return _C._reshape(m, [1] * x.ndim if keepdim else [])
    return m if keepdim else _C._squeeze(m, [a])


def quantile(x, q, axis=None, keepdim=False, name=None):
    """The q-th quantiles (q a number or a list of them in [0, 1]) along axis (an int, a list of ints, or
    None for all elements), interpolating linearly between the sorted values as numpy's default; a row
    holding NaN gives NaN. With a list q the quantiles stack on a new first axis. Differentiable."""
    qs = list(q) if isinstance(q, (list, tuple)) else [q]
    if not qs or any(isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1 for v in qs):
        raise ValueError("quantile: q must be a number or a list of numbers in [0, 1], got {!r}".format(q))
    if x.dtype not in (_C.float32, _C.float64):
        raise TypeError("quantile: x.dtype must be float32 or float64, got {}".format(x.dtype.name))
    nd = x.ndim
    axes = list(range(nd)) if axis is None else [_axis(a, nd, "quantile") for a in
                                                 (axis if isinstance(axis, (list, tuple)) else [axis])]
    # the reduced axes moved last and merged into one
    keep = [d for d in range(nd) if d not in axes]
    t = _C._reshape(x.transpose(keep + axes) if nd else x, [x.shape[d] for d in keep] + [-1])
    a = len(keep)
    n = t.shape[a]
    if n == 0:
        raise ValueError("quantile: cannot take a quantile of an empty axis")
    v = _sorted(t, a, False)[0]
    has_nan = _C.Op("any", "axis", "keepdim")(_C.Op("isnan")(t), [a], True)
    outs = []
    for qv in qs:
        pos = float(qv) * (n - 1)
        lo = int(np.floor(pos))
        hi = min(lo + 1, n - 1)
        below = _C._slice(v, a, lo, lo + 1, 1)
        r = below + (_C._slice(v, a, hi, hi + 1, 1) - below) * (pos - lo) if pos > lo else below
        nan = _C.Op("fill", "shape", "value", "dtype")([], float("nan"), x.dtype, place=x.place)
        r = _where(has_nan, nan, r)
        if keepdim:
            shape = [1 if d in axes else x.shape[d] for d in range(nd)]
        else:
            shape = [x.shape[d] for d in keep]
        outs.append(_C._reshape(r, shape))
    if len(qs) == 1 and not isinstance(q, (list, tuple)):
        return outs[0]
    from .manipulation import stack
    return stack(outs, 0)


def mode(x, axis=-1, keepdim=False, name=None):
    """(values, indices) of the most frequent value along axis (ties: the smallest value; the index of
    its last occurrence). Computed on the host: the result is not differentiable."""
    a = _axis(axis, x.ndim, "mode")
    arr = np.moveaxis(x._numpy_view(), a, -1)
    lead = arr.shape[:-1]
    flat = arr.reshape(-1, arr.shape[-1])
    vals = np.empty(flat.shape[0], dtype=flat.dtype)
    inds = np.empty(flat.shape[0], dtype=np.int64)
    for r, row in enumerate(flat):
        u, c = np.unique(row, return_counts=True)
        best = u[np.argmax(c)]
        vals[r] = best
        inds[r] = np.nonzero(row == best)[0][-1]
    vals, inds = vals.reshape(lead), inds.reshape(lead)
    if keepdim:
        vals, inds = np.expand_dims(vals, a), np.expand_dims(inds, a)
    from .creation import to_tensor
    return to_tensor(vals, place=x.place), to_tensor(inds, place=x.place)


def unique(x, return_index=False, return_inverse=False, return_counts=False, axis=None, dtype="int64",
           name=None):
    """The sorted unique elements (axis=None: of the flattened x; else unique slices along axis), with
    optionally the first indices, the inverse and the counts (numpy's unique). Computed on the host: the
    output shape depends on the data and the op is not differentiable."""
    if _C._is_symbolic(x) and axis is None:
        return _unique_var(x, return_index, return_inverse, return_counts, dtype)
    from .creation import to_tensor
    arr = x._numpy_view()
    if axis is not None:
        axis = _axis(axis, x.ndim, "unique")
    res = np.unique(arr, return_index=True, return_inverse=True, return_counts=True, axis=axis)
    out = [to_tensor(res[0], place=x.place)]
    idt = np.dtype(_C.numpy_dtype(_C.to_dtype(dtype)))
    for flag, r in zip((return_index, return_inverse, return_counts), res[1:]):
        if flag:
            out.append(to_tensor(np.asarray(r).reshape(-1).astype(idt), place=x.place))
    return out[0] if len(out) == 1 else tuple(out)


def _unique_var(x, return_index, return_inverse, return_counts, dtype):
    """unique of a program variable (flattened), from ops: the number of unique values is known when the
    program runs (decision 96). A stable sort puts each value's first occurrence first in its group."""
    n = 1
    for d in x.shape:
        n *= d
    if n < 0:
        raise ValueError("unique: in a program, x must have known extents (got shape {})".format(x.shape))
    cast = _C.Op("cast", "dtype")
    flat = _C._reshape(x, [n])
    s, perm = _sort(flat, 0, False, True)
    if n == 0:
        raise ValueError("unique: x has no elements")
    prev = _C.Op("concat", "axis")([_C._slice(s, 0, 0, 1, 1), _C._slice(s, 0, 0, n - 1, 1)], 0)
    at0 = _C.Op("equal")(_C.Op("cumsum", "axis")(_fill([n], 1.0, _C.int64), 0), _fill([], 1.0, _C.int64))
    first = _C.Op("logical_or")(_C.Op("not_equal")(s, prev), at0)  # the first of each run of equal values
    starts = nonzero(first)  # [groups, 1]
    out = [_C.Op("gather_nd")(s, starts)]
    idt = _C.to_dtype(dtype)
    if return_index:
        out.append(cast(_C.Op("gather_nd")(perm, starts), idt))
    group = _C.Op("cumsum", "axis")(cast(first, "int64"), 0) - 1  # group of each sorted position
    if return_inverse:
        out.append(cast(_index_select(group, _sorted(perm, 0, False)[1], 0), idt))
    if return_counts:
        out.append(cast(bincount(group), idt))
    return out[0] if len(out) == 1 else tuple(out)


def searchsorted(sorted_sequence, values, out_int32=False, right=False, name=None):
    """For each value, the insertion index into the innermost dim of sorted_sequence that keeps it sorted
    (right: after equal elements). Composite: a comparison count, O(len(sequence)) per value."""
    seq = sorted_sequence
    if seq.ndim == 1:
        s = _C._reshape(seq, [1] * values.ndim + [seq.shape[0]])
    else:
        if seq.shape[:-1] != values.shape[:-1]:
            raise ValueError("searchsorted: sorted_sequence.shape[:-1] {} != values.shape[:-1] {}".format(
                seq.shape[:-1], values.shape[:-1]))
        s = _C._unsqueeze(seq, seq.ndim - 1)
    v = _C._unsqueeze(values, values.ndim)
    below = (s <= v) if right else (s < v)
    out = _sum(_C.Op("cast", "dtype")(below, "int64"), [-1], False)
    return _C.Op("cast", "dtype")(out, "int32") if out_int32 else out


def bincount(x, weights=None, minlength=0, name=None):
    """Counts of each value of the non-negative 1-D int tensor x (weighted sums with `weights`)."""
    if x.ndim != 1:
        raise ValueError("bincount: x must be 1-D, got shape {}".format(x.shape))
    if x.dtype not in (_C.int8, _C.uint8, _C.int16, _C.int32, _C.int64):
        raise TypeError("bincount: x must be an integer tensor, got {}".format(x.dtype))
    n = x.shape[0]
    if _C._is_symbolic(x):
        return _bincount_var(x, weights, minlength)
    lo = builtins.int(x.min().item()) if n else 0
    if lo < 0:
        raise ValueError("bincount: x must be non-negative, got a minimum of {}".format(lo))
    length = builtins.max(builtins.int(x.max().item()) + 1 if n else 0, builtins.int(minlength))
    idx = _C._reshape(_C.Op("cast", "dtype")(x, "int64"), [n, 1])
    if weights is None:
        w = _fill([n], 1.0, _C.int64, place=x.place)
    else:
        w = weights
    return _scatter_nd_add(_fill([length], 0.0, w.dtype, place=x.place), idx, w)


def _bincount_var(x, weights, minlength):
    """bincount of a program variable: the length, max(x) + 1 (at least minlength), is read when the
    program runs (decision 96). Negative values are an error of the scatter then."""
    from ..static import var_attrs
    n = x.shape[0]
    x64 = _C.Op("cast", "dtype")(x, "int64")
    top = _C.Op("maximum")(x64.max() + 1 if n != 0 else _fill([], 0.0, _C.int64),
                           _fill([], builtins.float(builtins.int(minlength)), _C.int64))
    w = x64 * 0 + 1 if weights is None else weights  # ones of x's (possibly unknown) length
    length = _C._reshape(top, [1])  # recorded before the fill that reads it
    zeros = var_attrs.bind(_fill(var_attrs.sentinel([-1]), 0.0, w.dtype), shape=length)
    return _scatter_nd_add(zeros, _C._reshape(x64, [-1, 1]), w)


def unique_consecutive(x, return_inverse=False, return_counts=False, axis=None, dtype="int64", name=None):
    """Collapses runs of equal consecutive elements (axis=None: of the flattened x; else of slices along
    axis), with optionally the inverse and the run lengths. Computed on the host (data-dependent shape,
    not differentiable)."""
    from .creation import to_tensor
    arr = x._numpy_view()
    if axis is None:
        arr = arr.reshape(-1)
        a = 0
    else:
        a = _axis(axis, x.ndim, "unique_consecutive")
    moved = np.moveaxis(arr, a, 0)
    n = moved.shape[0]
    flat = moved.reshape(n, -1)
    change = np.ones(n, dtype=bool)
    if n > 1:
        change[1:] = (flat[1:] != flat[:-1]).any(axis=1)
    out = [to_tensor(np.ascontiguousarray(np.moveaxis(moved[change], 0, a)), place=x.place)]
    idt = np.dtype(_C.numpy_dtype(_C.to_dtype(dtype)))
    if return_inverse:
        out.append(to_tensor((np.cumsum(change) - 1).astype(idt), place=x.place))
    if return_counts:
        starts = np.nonzero(change)[0]
        out.append(to_tensor(np.diff(np.append(starts, n)).astype(idt), place=x.place))
    return out[0] if len(out) == 1 else tuple(out)
