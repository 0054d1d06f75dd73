"""oar.sparse.nn: activation layers on sparse tensors (Paddle's paddle.sparse.nn)."""
from ...nn.layer.layers import Layer
from . import functional  # noqa: F401

__all__ = ["ReLU", "ReLU6", "LeakyReLU", "Softmax"]


class ReLU(Layer):
    """max(x, 0) on the stored values of a sparse tensor."""

    def __init__(self, name=None):
        super().__init__()

    def forward(self, x):
        return functional.relu(x)


class ReLU6(Layer):
    """min(max(x, 0), 6) on the stored values."""

    def __init__(self, name=None):
        super().__init__()

    def forward(self, x):
        return functional.relu6(x)


class LeakyReLU(Layer):
    """x if x >= 0 else negative_slope * x, on the stored values."""

    def __init__(self, negative_slope=0.01, name=None):
        super().__init__()
        self._negative_slope = negative_slope

    def forward(self, x):
        return functional.leaky_relu(x, self._negative_slope)


class Softmax(Layer):
    """Softmax over the stored entries of each row (last axis); absent entries count as -inf."""

    def __init__(self, axis=-1, name=None):
        super().__init__()
        self._axis = axis

    def forward(self, x):
        return functional.softmax(x, self._axis)
