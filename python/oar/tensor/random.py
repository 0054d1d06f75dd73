"""Random tensors. Numbers are counter-based, so every device gives the same numbers for the same seed."""
from .. import _C
from .._C import Tensor, seed
from .creation import _shape_list, _dtype_or_default

__all__ = ["rand", "randn", "uniform", "normal", "seed"]


def uniform(shape, dtype=None, min=-1.0, max=1.0, seed=0, name=None):
    """U[min, max); seed 0 draws from the global generator (oar.seed)."""
    return _C._uniform(_shape_list(shape), float(min), float(max), _dtype_or_default(dtype), int(seed), None)


def rand(shape, dtype=None, name=None):
    """U[0, 1)."""
    return _C._uniform(_shape_list(shape), 0.0, 1.0, _dtype_or_default(dtype), 0, None)


def randn(shape, dtype=None, name=None):
    """Standard normal."""
    return _C._normal(_shape_list(shape), 0.0, 1.0, _dtype_or_default(dtype), 0, None)


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
