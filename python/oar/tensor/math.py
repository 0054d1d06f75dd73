"""Elementwise math and reductions, with Paddle 2.x names, arguments and defaults."""
from .. import _C
from .._fast import fast as _fast

# name -> (op, int_to_float32) of the unary functions made by _unary (tensor_methods: their in-place forms)
_UNARY_OPS = {}

__all__ = [
    "add", "subtract", "multiply", "divide", "floor_divide", "remainder", "mod", "floor_mod", "maximum", "minimum",
    "pow", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "square", "sign", "sin", "cos", "tanh", "sigmoid",
    "floor", "ceil", "round", "reciprocal", "erf", "abs", "neg", "sum", "mean", "max", "min", "prod", "matmul",
    # the math family (docs/ops_math.md)
    "sinh", "cosh", "tan", "asin", "acos", "atan", "asinh", "acosh", "atanh", "log2", "log10", "trunc", "lgamma",
    "digamma", "polygamma", "erfinv", "frac", "deg2rad", "rad2deg", "logit", "stanh", "scale", "sgn", "atan2", "fmax", "fmin", "copysign",
    "heaviside", "gcd", "lcm", "logaddexp", "add_n", "lerp", "hypot", "clip", "increment", "histogram", "cumsum", "cumprod", "logcumsumexp", "all", "any",
    "count_nonzero", "nansum", "nanmean", "std", "var", "logsumexp", "amax", "amin",
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
_matmul = _C.Op("matmul", "transpose_x", "transpose_y")
_cast = _C.Op("cast", "dtype")


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


def _unary(op_name, doc=None, int_to_float32=False):
    """int_to_float32: int32/int64 inputs are computed as float32, as Paddle's exp/log family does."""
    op = _C.Op(op_name)

    def fn(x, name=None):
        if int_to_float32 and isinstance(x, _C.Tensor) and x.dtype in (_C.int32, _C.int64):
            x = _C.Op("cast", "dtype")(x, _C.float32)
        return op(x)

    fn.__name__ = fn.__qualname__ = op_name
    fn.__doc__ = doc or "Elementwise {}(x).".format(op_name)
    _UNARY_OPS[op_name] = (op_name, int_to_float32)
    return _fast("unary", fn, op_name, flag=int_to_float32)


exp = _unary("exp", int_to_float32=True)
log = _unary("log", "Natural logarithm, elementwise.", int_to_float32=True)
log1p = _unary("log1p", int_to_float32=True)
expm1 = _unary("expm1", int_to_float32=True)
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


def _tensor_axis(axis):
    """Paddle takes a reduction's axis as a Tensor too (its values)."""
    return axis.tolist() if isinstance(axis, _C.Tensor) else axis


def _reduce(op_name, doc):
    op = _C.Op(op_name, "axis", "keepdim")

    def fn(x, axis=None, keepdim=False, name=None):
        return op(x, _tensor_axis(axis), keepdim)

    fn.__name__ = fn.__qualname__ = op_name
    fn.__doc__ = doc
    return _fast("reduce", fn, op_name, ["axis", "keepdim"])


mean = _reduce("mean", "Mean over `axis` (int, list or None for all axes); floating dtypes only.")
max = _reduce("max", "Maximum over `axis` (int, list or None for all axes).")
min = _reduce("min", "Minimum over `axis` (int, list or None for all axes).")
_sum = _C.Op("sum", "axis", "keepdim")
_prod = _C.Op("prod", "axis", "keepdim")


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



# ---- the math family (docs/ops_math.md) -------------------------------------------------------------
import builtins as _builtins
import math as _math
import numbers as _numbers

import numpy as np

from .._C import Tensor as _Tensor
from ..framework.errors import invalid_argument

_where = _C.Op("where")
_isnan = _C.Op("isnan")
_not_equal = _C.Op("not_equal")
_fill = _C.Op("fill", "shape", "value", "dtype")


def _is_float(t):
    return t.dtype in (_C.float16, _C.bfloat16, _C.float32, _C.float64)


def _like(v, t):
    """A 0-d tensor of value v with t's dtype and place."""
    return _fill([], _builtins.float(v), t.dtype, place=t.place)


sinh = _unary("sinh")
cosh = _unary("cosh")
tan = _unary("tan")
asin = _unary("asin")
acos = _unary("acos")
atan = _unary("atan")
asinh = _unary("asinh")
acosh = _unary("acosh")
atanh = _unary("atanh")
log2 = _unary("log2", int_to_float32=True)
log10 = _unary("log10", int_to_float32=True)
_trunc = _unary("trunc")


def trunc(input, name=None):
    """Rounds toward zero; integer inputs are returned unchanged. Paddle names the argument `input`."""
    return _trunc(input)
lgamma = _unary("lgamma", "log|Gamma(x)|, elementwise.")
digamma = _unary("digamma", "The logarithmic derivative of Gamma (its gradient is polygamma(x, 1)).")
_polygamma = _C.Op("polygamma", "n")


def polygamma(x, n, name=None):
    """The n-th derivative of digamma (n >= 0; n = 0 is digamma)."""
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError("polygamma: n must be an int, got {!r}".format(n))
    return _polygamma(x, n)
erfinv = _unary("erfinv", "The inverse of erf on (-1, 1); +-inf at +-1, NaN outside.")


def frac(x, name=None):
    """x - trunc(x): the fractional part, with x's sign."""
    return _subtract(x, trunc(x))


def deg2rad(x, name=None):
    if not _is_float(x):
        x = _cast(x, _C.float32)
    return _multiply(x, _like(_math.pi / 180.0, x))


def rad2deg(x, name=None):
    if not _is_float(x):
        x = _cast(x, _C.float32)
    return _multiply(x, _like(180.0 / _math.pi, x))


def logit(x, eps=None, name=None):
    """log(x / (1 - x)); with eps, x is first clipped to [eps, 1 - eps]."""
    if eps is not None:
        x = clip(x, eps, 1.0 - eps)
    return log(_divide(x, _subtract(_like(1, x), x)))


def stanh(x, scale_a=0.67, scale_b=1.7159, name=None):
    """scale_b * tanh(scale_a * x)."""
    return _multiply(tanh(_multiply(x, _like(scale_a, x))), _like(scale_b, x))


def scale(x, scale=1.0, bias=0.0, bias_after_scale=True, act=None, name=None):
    """scale * x + bias (bias_after_scale) or scale * (x + bias); `scale` may be a one-element tensor."""
    s = _cast(scale, x.dtype) if isinstance(scale, _Tensor) else _like(scale, x)
    b = _like(bias, x)
    out = _add(_multiply(x, s), b) if bias_after_scale else _multiply(_add(x, b), s)
    if act is not None:
        from ..nn import functional as F
        out = getattr(F, act)(out)
    return out


def sgn(x, name=None):
    """sign(x): -1, 0 or 1 for real x; z / |z| (0 at 0) for complex z."""
    return sign(x)


def _float_pair(op_name, x, y):
    """Promotes x and y like Paddle's binary ops; integer inputs compute in float64 (as Paddle's atan2)."""
    x, y = _C._promote(x, y)
    if not _is_float(x):
        x, y = _cast(x, _C.float64), _cast(y, _C.float64)
    return x, y


_atan2 = _C.Op("atan2")
_heaviside = _C.Op("heaviside")
_fmax = _C.Op("fmax")
_copysign = _C.Op("copysign")
_fmin = _C.Op("fmin")
_gcd = _C.Op("gcd")
_lcm = _C.Op("lcm")


def atan2(x, y, name=None):
    """Elementwise atan(x / y) with the quadrant of (y, x); integer inputs give float64."""
    return _atan2(*_float_pair("atan2", x, y))


def heaviside(x, y, name=None):
    """0 where x < 0, y where x == 0, 1 where x > 0."""
    x, y = _C._promote(x, y)
    return _heaviside(x, y)


def fmax(x, y, name=None):
    """Elementwise maximum that ignores NaN (NaN only where both are NaN)."""
    return _fmax(*_C._promote(x, y))


def fmin(x, y, name=None):
    """Elementwise minimum that ignores NaN (NaN only where both are NaN)."""
    return _fmin(*_C._promote(x, y))


def copysign(x, y, name=None):
    """|x| with the sign of y, elementwise (y = -0.0 counts as negative); integer and float dtypes."""
    return _copysign(*_C._promote(x, y))


def gcd(x, y, name=None):
    return _gcd(*_C._promote(x, y))


def lcm(x, y, name=None):
    return _lcm(*_C._promote(x, y))


def logaddexp(x, y, name=None):
    """log(exp(x) + exp(y)), stable: max(x, y) + log1p(exp(-|x - y|))."""
    x, y = _float_pair("logaddexp", x, y)
    m = maximum(x, y)
    return _add(m, log1p(exp(neg(abs(_subtract(x, y))))))


def add_n(inputs, name=None):
    """The sum of a list of tensors of the same shape and dtype."""
    if isinstance(inputs, _Tensor):
        return inputs
    if len(inputs) == 0:
        raise ValueError("add_n: inputs must not be empty")
    out = inputs[0]
    for t in inputs[1:]:
        out = _add(out, t)
    return out


def lerp(x, y, weight, name=None):
    """x + weight * (y - x); weight is a float or a tensor (broadcast)."""
    if not isinstance(weight, _Tensor):
        weight = _like(weight, x)
    return _add(x, _multiply(weight, _subtract(y, x)))


def hypot(x, y, name=None):
    """sqrt(x^2 + y^2), scaled by max(|x|, |y|) so it neither overflows nor underflows."""
    x, y = _float_pair("hypot", x, y)
    ax, ay = abs(x), abs(y)
    big, small = maximum(ax, ay), minimum(ax, ay)
    safe = _where(_C.Op("equal")(big, _like(0, big)), _like(1, big), big)
    r = _divide(small, safe)
    return _multiply(big, sqrt(_add(_like(1, r), _multiply(r, r))))


_clip = _C.Op("clip", "min", "max")


def _bound(v, name):
    """None, a float, or (a program variable: its value is known only when the program runs) the variable."""
    if v is None:
        return None
    if isinstance(v, (_Tensor, np.ndarray, np.generic)):
        if int(np.prod(v.shape)) != 1:
            raise ValueError("clip: {} must be a number or a one-element tensor, got shape {}".format(
                name, list(v.shape)))
        if isinstance(v, _Tensor) and _C._is_symbolic(v):
            return v
        return _builtins.float(v.item())
    return _builtins.float(v)


def clip(x, min=None, max=None, name=None):
    """Clamps x to [min, max]; None leaves that side unbounded. The gradient passes where min < x < max."""
    lo, hi = _bound(min, "min"), _bound(max, "max")
    if isinstance(lo, _Tensor) or isinstance(hi, _Tensor):
        return _clip_by_variables(x, lo, hi)
    return _clip(x, lo, hi)


def increment(x, value=1.0, name=None):
    """x += value for a one-element x (Paddle's loop counter op): in place eagerly, returning x; while a
    program is built, the incremented variable."""
    if int(np.prod(x.shape)) != 1:
        raise ValueError("increment: x must have one element, got shape {}".format(list(x.shape)))
    step = _fill([], _builtins.float(value), x.dtype, place=x.place)
    if _C._is_symbolic(x):
        return _add(x, step)
    x += step
    return x


def histogram(input, bins=100, min=0, max=0, name=None):
    """Counts (int64, [bins]) of input's elements in `bins` equal bins over [min, max] (both 0: the data's
    range, widened by 1 each way when constant). Elements outside the range (and NaN) are not counted;
    max goes to the last bin. The bin is Paddle's: int((x - min) * bins / (max - min)) in input's dtype
    (integer division for integers). Built from ops, so it also runs inside a program."""
    if isinstance(bins, bool) or not isinstance(bins, _numbers.Integral) or bins < 1:
        raise invalid_argument("histogram: bins must be an int >= 1, got {!r}".format(bins))
    lo_v, hi_v = _builtins.float(min), _builtins.float(max)
    if lo_v > hi_v:
        raise invalid_argument("histogram: max must be >= min, got min {} and max {}".format(min, max))
    x = _C._reshape(input, [-1])
    if not _is_float(x):
        x = _cast(x, _C.int64)
    if lo_v == hi_v == 0:  # the data's range, NaN ignored
        finite = _where(_isnan(x), _like(_math.inf, x), x) if _is_float(x) else x
        lo = _C.Op("min", "axis", "keepdim")(finite, [], False)
        finite = _where(_isnan(x), _like(-_math.inf, x), x) if _is_float(x) else x
        hi = _C.Op("max", "axis", "keepdim")(finite, [], False)
    else:
        lo, hi = _like(lo_v, x), _like(hi_v, x)
    same = _C.Op("equal")(lo, hi)
    lo = _where(same, _subtract(lo, _like(1, lo)), lo)
    hi = _where(same, _add(hi, _like(1, hi)), hi)
    scaled = _multiply(_subtract(x, lo), _like(bins, x))
    width = _subtract(hi, lo)
    idx = _floor_divide(scaled, width) if not _is_float(x) else _divide(scaled, width)
    idx = _cast(idx, _C.int64)
    inside = _C.Op("logical_and")(_C.Op("greater_equal")(x, lo), _C.Op("less_equal")(x, hi))
    # outside elements are counted 0 times, at a clamped (valid) index
    idx = _clip(_where(inside, idx, _like(0, idx)), 0.0, _builtins.float(bins - 1))
    counts = _fill([bins], 0.0, _C.int64, place=x.place)
    return _C.Op("scatter_nd_add")(counts, _C._reshape(idx, [-1, 1]), _cast(inside, _C.int64))


def _clip_by_variables(x, lo, hi):
    """clip with a bound held by a program variable, from comparisons and where: the kernel's value
    (x < lo ? lo : x > hi ? hi : x) and its gradient (dy where lo < x < hi)."""
    def scalar(v):
        if isinstance(v, _Tensor):
            v = _C._reshape(v, [])
            return v if v.dtype == x.dtype else _cast(v, x.dtype)
        return _fill([], v, x.dtype, place=x.place)
    lo = None if lo is None else scalar(lo)
    hi = None if hi is None else scalar(hi)
    above = None if lo is None else _C.Op("greater_than")(x, lo)
    below = None if hi is None else _C.Op("less_than")(x, hi)
    inside = above if below is None else below if above is None else _C.Op("logical_and")(above, below)
    out = _where(inside, x, x.detach())  # the value x everywhere, the gradient only inside
    if hi is not None:
        out = _where(_C.Op("greater_than")(x, hi), hi, out)
    if lo is not None:
        out = _where(_C.Op("less_than")(x, lo), lo, out)
    return out


_cumsum = _C.Op("cumsum", "axis", "flatten")
_cumprod = _C.Op("cumprod", "axis", "flatten")


def cumsum(x, axis=None, dtype=None, name=None):
    """Cumulative sum along `axis`; axis None scans the flattened tensor. bool inputs sum as int64."""
    if dtype is not None:
        if x.dtype != _C.to_dtype(dtype):
            x = _cast(x, dtype)
    elif x.dtype == _C.bool:
        x = _cast(x, _C.int64)
    if axis is None:
        return _cumsum(x, 0, True)
    return _cumsum(x, axis, False)


def cumprod(x, dim=None, dtype=None, name=None):
    """Cumulative product along `dim`; dim None scans the flattened tensor. The gradient is exact for
    nonzero x (a zero in x gives inf/NaN gradients; docs/ops_math.md)."""
    if dtype is not None and x.dtype != _C.to_dtype(dtype):
        x = _cast(x, dtype)
    if dim is None:
        return _cumprod(x, 0, True)
    return _cumprod(x, dim, False)


_logcumsumexp = _C.Op("logcumsumexp", "axis", "flatten")


def logcumsumexp(x, axis=None, dtype=None, name=None):
    """log(cumsum(exp(x))) along `axis`, computed stably; axis None scans the flattened tensor."""
    if dtype is not None and x.dtype != _C.to_dtype(dtype):
        x = _cast(x, dtype)
    if axis is None:
        return _logcumsumexp(x, 0, True)
    return _logcumsumexp(x, axis, False)


_all = _C.Op("all", "axis", "keepdim")
_any = _C.Op("any", "axis", "keepdim")


def _axis_int(a, axis):
    if isinstance(a, _Tensor) and a.size == 1:
        a = a.item()
    if not isinstance(a, _numbers.Integral) or isinstance(a, _builtins.bool):
        raise TypeError("axis must be an int, a list of ints or None, got {!r}".format(axis))
    return _builtins.int(a)


def _axes(axis):
    axis = _tensor_axis(axis)
    if axis is None:
        return None
    if isinstance(axis, (list, tuple)):
        return [_axis_int(a, axis) for a in axis]
    return [_axis_int(axis, axis)]


def all(x, axis=None, keepdim=False, name=None):
    """True where every element along `axis` (int, list or None for all) is nonzero."""
    return _all(x, _axes(axis), keepdim)


def any(x, axis=None, keepdim=False, name=None):
    """True where some element along `axis` (int, list or None for all) is nonzero."""
    return _any(x, _axes(axis), keepdim)


def count_nonzero(x, axis=None, keepdim=False, name=None):
    """The number of nonzero elements along `axis`, as int64."""
    nz = _cast(_not_equal(x, _like(0, x)), _C.int64)
    return _sum(nz, _axes(axis), keepdim)


def nansum(x, axis=None, dtype=None, keepdim=False, name=None):
    """sum with NaN counted as zero."""
    if _is_float(x):
        x = _where(_isnan(x), _like(0, x), x)
    return sum(x, axis, dtype, keepdim)


def nanmean(x, axis=None, keepdim=False, name=None):
    """mean over the non-NaN elements (NaN where all are NaN)."""
    if not _is_float(x):
        raise TypeError("nanmean: x.dtype {} is not supported; expected a floating dtype".format(x.dtype))
    keep = _C.Op("logical_not")(_isnan(x))
    total = _sum(_where(keep, x, _like(0, x)), _axes(axis), keepdim)
    count = _sum(_cast(keep, x.dtype), _axes(axis), keepdim)
    return _divide(total, count)


def _reduced_count(x, axis):
    axes = _axes(axis)
    if axes is None or len(axes) == 0:
        return x.size
    n = 1
    for a in set(a % _builtins.max(x.ndim, 1) for a in axes):
        n *= x.shape[a] if x.ndim else 1
    return n


def var(x, axis=None, unbiased=True, keepdim=False, name=None):
    """Variance over `axis`; unbiased divides by N - 1."""
    if not _is_float(x):
        raise TypeError("var: x.dtype {} is not supported; expected a floating dtype".format(x.dtype))
    n = _reduced_count(x, axis)
    d = _subtract(x, mean(x, _axes(axis), True))
    ss = _sum(_multiply(d, d), _axes(axis), keepdim)
    return _divide(ss, _like(_builtins.max(n - 1, 0) if unbiased else n, ss))


def std(x, axis=None, unbiased=True, keepdim=False, name=None):
    """Standard deviation over `axis`; unbiased divides by N - 1."""
    return sqrt(var(x, axis, unbiased, keepdim))


_logsumexp = _C.Op("logsumexp", "axis", "keepdim")


def logsumexp(x, axis=None, keepdim=False, name=None):
    """log(sum(exp(x))) over `axis` (int, list or None for all), one op computed stably (a running max
    and a rescaled sum); an all -inf extent gives -inf and +inf gives +inf, as numpy."""
    if not _is_float(x):
        raise TypeError("logsumexp: x.dtype {} is not supported; expected a floating dtype".format(x.dtype))
    return _logsumexp(x, _axes(axis), keepdim)


def amax(x, axis=None, keepdim=False, name=None):
    """Maximum over `axis`; the gradient is split evenly among tied maxima."""
    return max(x, axis, keepdim)


def amin(x, axis=None, keepdim=False, name=None):
    """Minimum over `axis`; the gradient is split evenly among tied minima."""
    return min(x, axis, keepdim)
