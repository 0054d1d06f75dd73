"""InputSpec: the shape, dtype and name of a program input (Paddle's paddle.static.InputSpec)."""
import numpy as np

from .. import _C

__all__ = ["InputSpec"]


class InputSpec:
    """Describes an input of a to_static function or a saved model: `shape` may hold None (or -1) for
    extents known only at run time."""

    def __init__(self, shape, dtype="float32", name=None, stop_gradient=False):
        if isinstance(shape, int):
            shape = [shape]
        if not isinstance(shape, (list, tuple)):
            raise TypeError("InputSpec: shape must be a list or tuple, got {}".format(type(shape).__name__))
        dims = []
        for d in shape:
            if d is None or d == -1:
                dims.append(None)
            elif isinstance(d, (int, np.integer)) and d >= 0:
                dims.append(int(d))
            else:
                raise ValueError("InputSpec: bad extent {!r} in shape {!r}".format(d, shape))
        self.shape = tuple(dims)
        self.dtype = _C.to_dtype(dtype)
        self.name = name
        self.stop_gradient = stop_gradient

    @classmethod
    def from_tensor(cls, tensor, name=None):
        if not isinstance(tensor, _C.Tensor):
            raise TypeError("InputSpec.from_tensor: expected a Tensor, got {}".format(type(tensor).__name__))
        return cls(tensor.shape, tensor.dtype, name or getattr(tensor, "_name", None))

    @classmethod
    def from_numpy(cls, ndarray, name=None):
        return cls(ndarray.shape, str(ndarray.dtype), name)

    def batch(self, batch_size):
        if isinstance(batch_size, (list, tuple)):
            if len(batch_size) != 1:
                raise ValueError("InputSpec.batch: one batch size, got {}".format(batch_size))
            batch_size = batch_size[0]
        self.shape = (batch_size,) + self.shape
        return self

    def unbatch(self):
        if not self.shape:
            raise ValueError("InputSpec.unbatch: the shape is empty")
        self.shape = self.shape[1:]
        return self

    def _dims(self):
        return [-1 if d is None else d for d in self.shape]

    def __eq__(self, other):
        return (isinstance(other, InputSpec) and self.shape == other.shape and self.dtype == other.dtype
                and self.name == other.name)

    def __hash__(self):
        return hash((self.shape, self.dtype.name, self.name))

    def __repr__(self):
        return "InputSpec(shape={}, dtype={}, name={}, stop_gradient={})".format(
            self.shape, "paddle." + self.dtype.name, self.name, self.stop_gradient)
