"""Distance layers (Paddle's paddle.nn.layer.distance)."""
from .. import functional as F
from .layers import Layer

__all__ = ["PairwiseDistance"]


class PairwiseDistance(Layer):
    """The p-norm of x - y + epsilon along the last axis."""

    def __init__(self, p=2.0, epsilon=1e-6, keepdim=False, name=None):
        super().__init__()
        self.p = p
        self.epsilon = epsilon
        self.keepdim = keepdim
        self.name = name

    def forward(self, x, y):
        return F.pairwise_distance(x, y, self.p, self.epsilon, self.keepdim)

    def extra_repr(self):
        s = "p={}".format(self.p)
        if self.epsilon != 1e-6:
            s += ", epsilon={}".format(self.epsilon)
        if self.keepdim is not False:
            s += ", keepdim={}".format(self.keepdim)
        if self.name is not None:
            s += ", name={}".format(self.name)
        return s
