"""Random tensors. Numbers are counter-based, so every device gives the same numbers for the same seed."""
from .. import _C
from .._C import Tensor, seed
from .creation import _shape_list, _dtype_or_default

__all__ = ["rand", "randn", "uniform", "normal", "seed",
           # the math family (docs/ops_math.md)
           "standard_normal", "randint", "randint_like", "bernoulli", "poisson", "multinomial",
           "randperm"]


def uniform(shape, dtype=None, min=-1.0, max=1.0, seed=0, name=None):
    """U[min, max); seed 0 draws from the global generator (oar.seed)."""
    return _C._uniform(_shape_list(shape), float(min), float(max), _dtype_or_default(dtype), int(seed), None)


def rand(shape, dtype=None, name=None):
    """U[0, 1)."""
    return _C._uniform(_shape_list(shape), 0.0, 1.0, _dtype_or_default(dtype), 0, None)


def randn(shape, dtype=None, name=None):
    """Standard normal."""
    return _C._normal(_shape_list(shape), 0.0, 1.0, _dtype_or_default(dtype), 0, None)


from .._fast import fast as _fast  # noqa: E402

randn = _fast("randn", randn)
rand = _fast("rand", rand)


def normal(mean=0.0, std=1.0, shape=None, name=None):
    """N(mean, std^2). mean and std may be tensors, which then give the shape (broadcast)."""
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        ref = mean if isinstance(mean, Tensor) else std
        shape = list(ref.shape)
        if isinstance(mean, Tensor) and isinstance(std, Tensor):
            shape = list((mean + std * 0).shape)
        z = _C._normal(shape, 0.0, 1.0, ref.dtype, 0, ref.place)
        return z * std + mean
    if shape is None:
        raise ValueError("normal: shape is required when mean and std are numbers")
    return _C._normal(_shape_list(shape), float(mean), float(std), _dtype_or_default(None), 0, None)



# ---- the math family (docs/ops_math.md) -------------------------------------------------------------
import builtins as _builtins
import numbers as _numbers

_bernoulli = _C.Op("bernoulli", "seed", "offset")
_multinomial = _C.Op("multinomial", "num_samples", "replacement", "seed", "offset")
_randperm = _C.Op("randperm", "n", "seed", "offset", "dtype")
_cast = _C.Op("cast", "dtype")


def _reserve(count):
    """(seed, offset) for one random op: `count` counters of the global generator's stream, so oar.seed
    makes the op reproducible, each call advances the generator, and every device gives the same
    numbers (the kernels use counters offset .. offset + count - 1)."""
    seed, offset = _C._reserve_random(_builtins.max(_builtins.int(count), 1))
    return _builtins.int(seed), _builtins.int(offset)


def standard_normal(shape, dtype=None, name=None):
    return randn(shape, dtype)


def randint(low=0, high=None, shape=[1], dtype=None, name=None):
    """Integers uniform in [low, high) (or [0, low) when high is None); dtype default int64."""
    if high is None:
        low, high = 0, low
    if high <= low:
        raise ValueError("randint: high ({}) must be greater than low ({})".format(high, low))
    dtype = _C.int64 if dtype is None else _C.to_dtype(dtype)
    u = _C._uniform(_shape_list(shape), float(low), float(high), _C.float64, 0, None)
    return _cast(_C.Op("floor")(u), dtype)


def randint_like(x, low=0, high=None, dtype=None, name=None):
    """randint with x's shape (dtype default: x's dtype)."""
    if high is None:
        low, high = 0, low
    if high <= low:
        raise ValueError("randint_like: high ({}) must be greater than low ({})".format(high, low))
    dtype = x.dtype if dtype is None else _C.to_dtype(dtype)
    u = _C._uniform(list(x.shape), float(low), float(high), _C.float64, 0, x.place)
    return _cast(_C.Op("floor")(u), dtype)


def bernoulli(x, name=None):
    """1 with probability x (elementwise), else 0, in x's dtype."""
    return _bernoulli(x, *_reserve(2 * x.size))


def poisson(x, name=None):
    """Poisson samples with rates x (elementwise), in x's dtype. The gradient is zero, as in Paddle."""
    return _C.Op("poisson", "seed", "offset")(x, *_reserve(x.size))


def multinomial(x, num_samples=1, replacement=False, name=None):
    """Draws num_samples category indices per row of x (1-D or 2-D weights, not necessarily
    normalised); int64."""
    return _multinomial(x, num_samples, replacement, *_reserve(2 * x.size * _builtins.max(num_samples, 1)))


def randperm(n, dtype="int64", name=None):
    """A random permutation of 0 .. n-1."""
    if not isinstance(n, _numbers.Integral) or isinstance(n, bool):
        raise TypeError("randperm: n must be an int, got {!r}".format(n))
    return _randperm(_builtins.int(n), *_reserve(2 * n), dtype)
