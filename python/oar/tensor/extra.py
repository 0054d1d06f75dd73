"""Top-level names Paddle 2.6 has that the other tensor modules lacked (issue 19, item 1): rank, assign,
tensordot, nanquantile/nanmedian, bucketize, cummax/cummin, multiplex, shard_index, as_strided, unflatten,
diff, nan_to_num, is_floating_point/is_integer, view/view_as; and the top-level in-place functions
(exp_, reshape_, ...), built from the out-of-place ones."""
import builtins
import numbers

import numpy as np

from .. import _C
from .._C import Tensor
from . import creation, linalg, logic, manipulation, math, random, search

__all__ = ["rank", "assign", "tensordot", "nanquantile", "nanmedian", "bucketize", "cummax", "cummin",
           "multiplex", "shard_index", "as_strided", "unflatten", "diff", "nan_to_num", "is_floating_point",
           "is_integer", "view", "view_as", "index_add"]

_FLOATS = (_C.float16, _C.bfloat16, _C.float32, _C.float64)
_INTS = (_C.uint8, _C.int8, _C.int16, _C.int32, _C.int64)
_cast = _C.Op("cast", "dtype")
_where = _C.Op("where")
_isnan = _C.Op("isnan")
_cummax = _C.Op("cummax", "axis", "flatten")
_cummin = _C.Op("cummin", "axis", "flatten")


def _require_tensor(fn, arg, v):
    if not isinstance(v, Tensor):
        raise TypeError("{}: {} must be a Tensor, got {}".format(fn, arg, type(v).__name__))


def _int_arg(fn, arg, v):
    if isinstance(v, Tensor) and v.size == 1:
        v = v.item()
    if isinstance(v, builtins.bool) or not isinstance(v, numbers.Integral):
        raise TypeError("{}: {} must be an int, got {!r}".format(fn, arg, v))
    return builtins.int(v)


def _axis(fn, axis, ndim):
    axis = _int_arg(fn, "axis", axis)
    n = builtins.max(ndim, 1)
    if not -n <= axis < n:
        raise ValueError("{}: axis {} is out of range for a {}-D tensor".format(fn, axis, ndim))
    return axis % n


def rank(input):
    """The number of dimensions of `input`, as a 0-D int32 tensor."""
    _require_tensor("rank", "input", input)
    return creation.to_tensor(np.array(input.ndim, dtype=np.int32))


def assign(x, output=None):
    """A copy of x (a Tensor, numpy array, list or scalar; scalars become shape [1]), written into
    `output` when given. Differentiable for tensors."""
    if isinstance(x, Tensor):
        out = x.clone()
    else:
        if isinstance(x, (builtins.bool, numbers.Number)) and not isinstance(x, np.ndarray):
            x = [x]
        if isinstance(x, np.generic):
            x = [x.item()]
        out = creation.to_tensor(x)
    if output is None:
        return out
    _require_tensor("assign", "output", output)
    if output.shape != out.shape or output.dtype != out.dtype:
        raise ValueError("assign: output has shape {} and dtype {}, the value has shape {} and dtype {}".format(
            output.shape, output.dtype.name, out.shape, out.dtype.name))
    _C._assign(output, out)
    return output


def tensordot(x, y, axes=2, name=None):
    """Sums the products of x and y over the paired axes: an int n (x's last n with y's first n), one list
    (the same axes of both), or two lists (the shorter one extended by the other's tail, as Paddle). A
    size-1 axis paired with a larger one is summed first (broadcast)."""
    _require_tensor("tensordot", "x", x)
    _require_tensor("tensordot", "y", y)
    if x.dtype not in _FLOATS or y.dtype != x.dtype:
        raise TypeError("tensordot: x and y must have the same floating dtype, got {} and {}".format(
            x.dtype.name, y.dtype.name))
    if isinstance(axes, Tensor):
        axes = axes.tolist()
    if isinstance(axes, numbers.Integral) and not isinstance(axes, builtins.bool):
        if not 0 <= axes <= builtins.min(x.ndim, y.ndim):
            raise ValueError("tensordot: axes={} must be in [0, min(x.ndim, y.ndim)]".format(axes))
        ax, ay = list(range(x.ndim - axes, x.ndim)), list(range(axes))
    elif isinstance(axes, (list, tuple)):
        if not axes or isinstance(axes[0], numbers.Integral):
            ax, ay = list(axes), []
        else:
            ax, ay = list(axes[0]), list(axes[1]) if len(axes) > 1 else []
        if len(ax) < len(ay):
            ax += ay[len(ax):]
        else:
            ay += ax[len(ay):]
    else:
        raise TypeError("tensordot: axes must be an int, a list or a tuple, got {!r}".format(axes))
    ax = [_axis("tensordot", a, x.ndim) for a in ax]
    ay = [_axis("tensordot", a, y.ndim) for a in ay]
    if len(set(ax)) != len(ax) or len(set(ay)) != len(ay):
        raise ValueError("tensordot: repeated axes in {}".format(axes))
    for a, b in zip(ax, ay):
        sx, sy = x.shape[a], y.shape[b]
        if sx == 1 and sy != 1:
            y = y.sum(b, keepdim=True)
        elif sy == 1 and sx != 1:
            x = x.sum(a, keepdim=True)
        elif sx != sy:
            raise ValueError("tensordot: x.shape[{}] ({}) does not match y.shape[{}] ({})".format(a, sx, b, sy))
    fx = [d for d in range(x.ndim) if d not in ax]
    fy = [d for d in range(y.ndim) if d not in ay]
    k = 1
    for a in ax:
        k *= x.shape[a]
    xm = manipulation.reshape(manipulation.transpose(x, fx + ax), [-1, k])
    ym = manipulation.reshape(manipulation.transpose(y, ay + fy), [k, -1])
    out = math.matmul(xm, ym)
    return manipulation.reshape(out, [x.shape[d] for d in fx] + [y.shape[d] for d in fy])


def _nan_quantile(fn, x, qs, axis, keepdim):
    """Linear-interpolation quantiles over the non-NaN elements (NaN where a row has none)."""
    if x.dtype not in (_C.float32, _C.float64):
        raise TypeError("{}: x.dtype must be float32 or float64, got {}".format(fn, x.dtype.name))
    nd = x.ndim
    axes = list(range(nd)) if axis is None else [_axis(fn, a, nd) for a in
                                                 (axis if isinstance(axis, (list, tuple)) else [axis])]
    keep = [d for d in range(nd) if d not in axes]
    t = manipulation.reshape(manipulation.transpose(x, keep + axes) if nd else x, [x.shape[d] for d in keep] + [-1])
    a = len(keep)
    if t.shape[a] == 0:
        raise ValueError("{}: cannot take a quantile of an empty axis".format(fn))
    nan = _isnan(t)
    # NaN sorts last; the valid count per row says where the values end
    v = search.sort(_where(nan, creation.full([], float("inf"), x.dtype), t), a)
    count = math.sum(_cast(logic.logical_not(nan), "int64"), a, keepdim=True)
    last = manipulation.reshape(math.maximum(count - 1, creation.full([], 0, _C.int64)), count.shape)
    none = count == 0
    outs = []
    for q in qs:
        pos = _cast(last, x.dtype) * float(q)
        lo = _cast(math.floor(pos), "int64")
        hi = math.minimum(lo + 1, last)
        below = manipulation.take_along_axis(v, lo, a)
        r = below + (manipulation.take_along_axis(v, hi, a) - below) * (pos - _cast(lo, x.dtype))
        r = _where(none, creation.full([], float("nan"), x.dtype), r)
        shape = [1 if d in axes else x.shape[d] for d in range(nd)] if keepdim else [x.shape[d] for d in keep]
        outs.append(manipulation.reshape(r, shape))
    return outs


def _quantile_list(fn, q):
    qs = list(q) if isinstance(q, (list, tuple)) else [q]
    if not qs or builtins.any(isinstance(v, builtins.bool) or not isinstance(v, numbers.Real) or not 0 <= v <= 1
                              for v in qs):
        raise ValueError("{}: q must be a number or a list of numbers in [0, 1], got {!r}".format(fn, q))
    return qs


def nanquantile(x, q, axis=None, keepdim=False, name=None):
    """quantile that ignores NaN: the q-th quantiles over the non-NaN elements along axis (NaN where all
    are NaN). A list q stacks the results on a new first axis. Differentiable."""
    qs = _quantile_list("nanquantile", q)
    outs = _nan_quantile("nanquantile", x, qs, axis, keepdim)
    if not isinstance(q, (list, tuple)):
        return outs[0]
    return manipulation.stack(outs, 0)


def nanmedian(x, axis=None, keepdim=False, name=None):
    """median that ignores NaN: the mean of the two middle non-NaN values when their count is even (the
    gradient splits between them), NaN where all are NaN."""
    if x.dtype not in (_C.float32, _C.float64):
        raise TypeError("nanmedian: x.dtype must be float32 or float64, got {}".format(x.dtype.name))
    return _nan_quantile("nanmedian", x, [0.5], axis, keepdim)[0]


def bucketize(x, sorted_sequence, out_int32=False, right=False, name=None):
    """For each element of x, its bucket index in the 1-D sorted_sequence (searchsorted)."""
    _require_tensor("bucketize", "sorted_sequence", sorted_sequence)
    if sorted_sequence.ndim != 1:
        raise ValueError("bucketize: sorted_sequence must be 1-D, got shape {}".format(sorted_sequence.shape))
    return search.searchsorted(sorted_sequence, x, out_int32=out_int32, right=right)


def _cumextreme(op, fn, x, axis, dtype):
    _require_tensor(fn, "x", x)
    if _C.to_dtype(dtype) not in (_C.int32, _C.int64):
        raise ValueError("{}: dtype must be int32 or int64, got {!r}".format(fn, dtype))
    if axis is None:
        values, indices = op(x, 0, True)
    else:
        values, indices = op(x, _axis(fn, axis, x.ndim), False)
    if _C.to_dtype(dtype) == _C.int32:
        indices = _cast(indices, "int32")
    return values, indices


def cummax(x, axis=None, dtype="int64", name=None):
    """The running maximum along axis (None: of the flattened x) and the index it came from (the later
    one on ties; a NaN stays once met)."""
    return _cumextreme(_cummax, "cummax", x, axis, dtype)


def cummin(x, axis=None, dtype="int64", name=None):
    """The running minimum along axis (None: of the flattened x) and the index it came from."""
    return _cumextreme(_cummin, "cummin", x, axis, dtype)


def multiplex(inputs, index, name=None):
    """Row i of the result is row i of inputs[index[i]]: inputs are same-shaped tensors [M, ...], index
    an int32/int64 tensor of shape [M, 1]."""
    if not isinstance(inputs, (list, tuple)) or len(inputs) < 1:
        raise ValueError("multiplex: inputs must be a non-empty list of tensors")
    for t in inputs:
        _require_tensor("multiplex", "inputs", t)
        if t.shape != inputs[0].shape or t.dtype != inputs[0].dtype:
            raise ValueError("multiplex: every input must have shape {} and dtype {}".format(
                inputs[0].shape, inputs[0].dtype.name))
    if inputs[0].ndim < 1:
        raise ValueError("multiplex: inputs must have at least 1 dimension")
    _require_tensor("multiplex", "index", index)
    m = inputs[0].shape[0]
    if index.dtype not in (_C.int32, _C.int64) or index.size != m:
        raise ValueError("multiplex: index must be an int32/int64 tensor of shape [{}, 1], got {} {}".format(
            m, index.dtype.name, index.shape))
    idx = index.numpy().reshape(-1)
    if m and (idx.min() < 0 or idx.max() >= len(inputs)):
        raise ValueError("multiplex: index values must be in [0, {}), got {}".format(len(inputs), idx.tolist()))
    stacked = manipulation.stack(list(inputs), 1)  # [M, n, ...]
    sel = manipulation.reshape(_cast(index, "int64"), [m, 1] + [1] * (stacked.ndim - 2))
    return manipulation.squeeze(manipulation.take_along_axis(stacked, sel, 1), 1)


def shard_index(input, index_num, nshards, shard_id, ignore_value=-1):
    """Maps indices in [0, index_num) to their position in shard `shard_id` of `nshards` equal shards
    (size ceil(index_num / nshards)); indices of other shards become ignore_value."""
    _require_tensor("shard_index", "input", input)
    if input.dtype not in (_C.int32, _C.int64):
        raise TypeError("shard_index: input must be int32 or int64, got {}".format(input.dtype.name))
    index_num = _int_arg("shard_index", "index_num", index_num)
    nshards = _int_arg("shard_index", "nshards", nshards)
    shard_id = _int_arg("shard_index", "shard_id", shard_id)
    if nshards <= 0 or index_num <= 0:
        raise ValueError("shard_index: index_num ({}) and nshards ({}) must be positive".format(index_num, nshards))
    if not 0 <= shard_id < nshards:
        raise ValueError("shard_index: shard_id ({}) must be in [0, {})".format(shard_id, nshards))
    size = (index_num + nshards - 1) // nshards
    mine = (input // size) == shard_id
    return _where(mine, input % size, creation.full([], ignore_value, input.dtype))


def as_strided(x, shape, stride, offset=0, name=None):
    """The elements of x's (row-major) storage at offset + sum(i_k * stride_k), in `shape`. oar makes a
    copy by gathering them (differentiable: repeated elements accumulate), not a view sharing memory."""
    _require_tensor("as_strided", "x", x)
    shape = [_int_arg("as_strided", "shape", s) for s in shape]
    stride = [_int_arg("as_strided", "stride", s) for s in stride]
    offset = _int_arg("as_strided", "offset", offset)
    if len(shape) != len(stride):
        raise ValueError("as_strided: shape {} and stride {} differ in length".format(shape, stride))
    if builtins.any(s < 0 for s in shape) or builtins.any(s < 0 for s in stride) or offset < 0:
        raise ValueError("as_strided: shape, stride and offset must be non-negative")
    idx = np.full(shape, offset, dtype=np.int64)
    for k, (n, s) in enumerate(zip(shape, stride)):
        idx = idx + (np.arange(n, dtype=np.int64) * s).reshape([n if j == k else 1 for j in range(len(shape))])
    if idx.size and idx.max() >= x.size:
        raise ValueError("as_strided: the view reaches element {} of a tensor of {} elements".format(
            int(idx.max()), x.size))
    flat = manipulation.reshape(x, [-1])
    out = search.index_select(flat, creation.to_tensor(idx.reshape(-1), place=x.place), 0)
    return manipulation.reshape(out, shape)


def unflatten(x, axis, shape, name=None):
    """Splits dimension `axis` of x into `shape` (a list or tuple, one entry may be -1)."""
    _require_tensor("unflatten", "x", x)
    if isinstance(shape, Tensor):
        shape = shape.tolist()
    if not isinstance(shape, (list, tuple)) or len(shape) == 0:
        raise ValueError("unflatten: shape must be a non-empty list or tuple, got {!r}".format(shape))
    a = _axis("unflatten", axis, x.ndim)
    if x.ndim == 0:
        raise ValueError("unflatten: x must have at least 1 dimension")
    shape = [_int_arg("unflatten", "shape", s) for s in shape]
    known = 1
    for s in shape:
        if s != -1:
            known *= s
    n = x.shape[a]
    if shape.count(-1) > 1 or (-1 not in shape and known != n) or (-1 in shape and (known == 0 or n % known)):
        raise ValueError("unflatten: shape {} does not split dimension {} of size {}".format(shape, a, n))
    shape = [n // known if s == -1 else s for s in shape]
    return manipulation.reshape(x, list(x.shape[:a]) + shape + list(x.shape[a + 1:]))


def diff(x, n=1, axis=-1, prepend=None, append=None, name=None):
    """The n-th forward difference along axis, after concatenating prepend and append; bool inputs give
    x[i+1] != x[i]."""
    _require_tensor("diff", "x", x)
    n = _int_arg("diff", "n", n)
    if n < 0:
        raise ValueError("diff: n ({}) must be >= 0".format(n))
    if x.ndim == 0:
        raise ValueError("diff: x must have at least 1 dimension")
    a = _axis("diff", axis, x.ndim)
    parts = [p for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        x = manipulation.concat(parts, a)
    for _ in range(n):
        m = x.shape[a]
        if m == 0:
            break
        hi = manipulation.slice(x, [a], [1], [m])
        lo = manipulation.slice(x, [a], [0], [m - 1])
        x = logic.logical_xor(hi, lo) if x.dtype == _C.bool else hi - lo
    return x


def nan_to_num(x, nan=0.0, posinf=None, neginf=None, name=None):
    """x with NaN replaced by `nan`, +inf by posinf and -inf by neginf (default: the dtype's largest and
    lowest finite values). Differentiable where x is finite."""
    _require_tensor("nan_to_num", "x", x)
    if x.dtype not in _FLOATS:
        return x.clone()
    info = np.finfo(np.float32 if x.dtype in (_C.float32, _C.bfloat16) else
                    np.float16 if x.dtype == _C.float16 else np.float64)
    if x.dtype == _C.bfloat16:
        info_max = 3.3895313892515355e38
    else:
        info_max = float(info.max)
    posinf = info_max if posinf is None else float(posinf)
    neginf = -info_max if neginf is None else float(neginf)
    full = lambda v: creation.full([], v, x.dtype)  # noqa: E731
    out = _where(_isnan(x), full(float(nan)), x)
    out = _where(x == float("inf"), full(posinf), out)
    return _where(x == float("-inf"), full(neginf), out)


def is_floating_point(x):
    """True for float16, bfloat16, float32 and float64 tensors."""
    _require_tensor("is_floating_point", "x", x)
    return x.dtype in _FLOATS


def is_integer(x):
    """True for integer (not bool) tensors."""
    _require_tensor("is_integer", "x", x)
    return x.dtype in _INTS


def view(x, shape_or_dtype, name=None):
    """x with a new shape (a list or tuple: a reshape that shares memory where the layout allows), or
    its bytes read as another dtype of the same element size (a dtype: a copy, not differentiable)."""
    _require_tensor("view", "x", x)
    if isinstance(shape_or_dtype, (list, tuple)):
        return manipulation.reshape(x, list(shape_or_dtype))
    dt = _C.to_dtype(shape_or_dtype)
    a = x.numpy()
    target = creation.to_tensor(np.zeros([], dtype=a.dtype)).astype(dt).numpy().dtype
    if target.itemsize != a.dtype.itemsize:
        raise ValueError("view: dtype {} has a different element size than {}".format(dt.name, x.dtype.name))
    return creation.to_tensor(np.ascontiguousarray(a).view(target), place=x.place)


def view_as(x, other, name=None):
    """x viewed with other's shape."""
    _require_tensor("view_as", "other", other)
    return view(x, list(other.shape))


def index_add(x, index, axis, value, name=None):
    """x with the slices value[..., j, ...] (along axis) added at x's positions index[j]; repeated indices
    accumulate. index is a 1-D int32/int64 tensor, value x's shape with len(index) along axis."""
    _require_tensor("index_add", "x", x)
    _require_tensor("index_add", "index", index)
    _require_tensor("index_add", "value", value)
    if index.ndim != 1 or index.dtype not in (_C.int32, _C.int64):
        raise ValueError("index_add: index must be a 1-D int32 or int64 tensor, got {} of shape {}".format(
            index.dtype.name, index.shape))
    a = _axis("index_add", axis, x.ndim)
    if value.dtype != x.dtype:
        value = _cast(value, x.dtype.name)
    return _index_add(x, index, value, a)


_index_add = _C.Op("index_add", "axis")


# ---- top-level in-place functions -----------------------------------------------------------------
# Paddle 2.6's top-level `name_` functions (and a few Tensor methods, exp_ and flatten_): the
# out-of-place op, then its result written into the target's memory (the same dtype and shape), or the
# target re-pointed at the result when the op changes its shape or dtype (reshape_, cast_, equal_, ...).
def _write_into(fn, target, out):
    if _C.is_grad_enabled() and not target.stop_gradient and target.is_leaf:
        raise ValueError("{}: a leaf tensor that requires gradients cannot be modified in place".format(fn))
    if out.dtype == target.dtype and out.shape == target.shape:
        _C._assign(target, out)
    else:
        target._replace_with(out)
    return target


def _inplace(name, fn, target=0):
    def f(*args, **kwargs):
        return _write_into(name, args[target] if len(args) > target else kwargs["x"], fn(*args, **kwargs))
    f.__name__ = name
    f.__doc__ = "In-place {}: the result written into {} and returned.".format(
        name[:-1], "x" if target else "the first argument")
    return f


_INPLACE_FROM = {
    math: ["abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "cumprod", "cumsum", "digamma",
           "divide", "erf", "expm1", "floor_divide", "floor_mod", "frac", "gcd", "hypot", "lcm", "lgamma", "log10",
           "log1p", "log2", "log", "logit", "mod", "multiply", "neg", "polygamma", "pow", "remainder", "sin", "sinh",
           "square", "tan", "tanh", "trunc", "exp", "sqrt", "rsqrt", "reciprocal", "round", "floor", "ceil", "clip",
           "scale", "subtract", "add", "sigmoid", "erfinv", "lerp"],
    logic: ["bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "equal", "greater_equal", "greater_than",
            "less_equal", "less_than", "logical_and", "logical_not", "logical_or", "logical_xor", "not_equal"],
    manipulation: ["cast", "index_put", "masked_fill", "reshape", "scatter", "squeeze", "transpose",
                   "tril", "triu", "unsqueeze", "flatten", "put_along_axis"],
    linalg: ["addmm", "t"],
}
_INPLACE_NAMES = []
for _mod, _names in _INPLACE_FROM.items():
    for _n in _names:
        if hasattr(_mod, _n):
            globals()[_n + "_"] = _inplace(_n + "_", getattr(_mod, _n))
            _INPLACE_NAMES.append(_n + "_")
nan_to_num_ = _inplace("nan_to_num_", nan_to_num)
index_add_ = _inplace("index_add_", index_add)
where_ = _inplace("where_", search.where, target=1)


def normal_(x, mean=0.0, std=1.0, name=None):
    """Fills x with N(mean, std^2) samples, in place."""
    return _write_into("normal_", x, _cast(random.normal(float(mean), float(std), list(x.shape)), x.dtype.name)
                       if x.dtype != _C.float32 else random.normal(float(mean), float(std), list(x.shape)))


def uniform_(x, min=-1.0, max=1.0, seed=0, name=None):
    """Fills x with U[min, max) samples, in place."""
    return _write_into("uniform_", x, random.uniform(list(x.shape), x.dtype, min, max, seed))


def cauchy_(x, loc=0, scale=1, name=None):
    """Fills x with Cauchy(loc, scale) samples, in place: loc + scale * tan(pi * (u - 0.5)), u ~ U(0, 1).
    (Paddle 2.6.2 draws u from a normal distribution here, which is not Cauchy.)"""
    u = random.uniform(list(x.shape), "float64", 0.0, 1.0)
    c = math.add(math.scale(math.tan(math.scale(math.subtract(u, creation.full([], 0.5, _C.float64)),
                                                 np.pi)), float(scale)), creation.full([], float(loc), _C.float64))
    return _write_into("cauchy_", x, _cast(c, x.dtype.name))


def geometric_(x, probs, name=None):
    """Fills x with log(u) / log1p(-probs), u ~ U(tiny, 1), in place (Paddle 2.6.2's definition: the
    continuous form of the number of trials; floor it + 1 for the integer count)."""
    if isinstance(probs, Tensor):
        p = _cast(probs, "float64") if probs.dtype != _C.float64 else probs
    else:
        p = creation.full([], float(probs), _C.float64)
    u = random.uniform(list(x.shape), "float64", float(np.finfo(np.float64).tiny), 1.0)
    return _write_into("geometric_", x, _cast(math.divide(math.log(u), math.log1p(math.neg(p))), x.dtype.name))


_INPLACE_NAMES += ["nan_to_num_", "index_add_", "where_", "normal_", "uniform_", "cauchy_", "geometric_"]
__all__ += _INPLACE_NAMES
del _mod, _names, _n
