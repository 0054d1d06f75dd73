"""Activations."""
from ... import _C

__all__ = ["relu", "sigmoid", "tanh", "softmax", "log_softmax"]

_relu = _C.Op("relu")
_sigmoid = _C.Op("sigmoid")
_tanh = _C.Op("tanh")
_softmax = _C.Op("softmax")
_log_softmax = _C.Op("log_softmax")
_cast = _C.Op("cast")


def relu(x, name=None):
    """max(x, 0), elementwise."""
    return _relu(x)


def sigmoid(x, name=None):
    return _sigmoid(x)


def tanh(x, name=None):
    return _tanh(x)


def softmax(x, axis=-1, dtype=None, name=None):
    """exp(x) / sum(exp(x)) along `axis`; `dtype` casts x first."""
    if dtype is not None:
        x = _cast(x, dtype)
    return _softmax(x, axis)


def log_softmax(x, axis=-1, dtype=None, name=None):
    if dtype is not None:
        x = _cast(x, dtype)
    return _log_softmax(x, axis)
