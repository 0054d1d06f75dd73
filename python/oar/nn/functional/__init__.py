"""oar.nn.functional: the functional forms of layers (Paddle's paddle.nn.functional).

So far: relu, sigmoid, tanh, softmax, log_softmax. Convolutions, pooling, normalisation, dropout and the
losses come in later work.
"""
from .activation import log_softmax, relu, sigmoid, softmax, tanh  # noqa: F401

__all__ = ["relu", "sigmoid", "tanh", "softmax", "log_softmax"]
