"""C fast paths of everyday API functions (python/src/fast_api.cc, decision 134).

fast(kind, fn) returns a builtin function that runs the common case of `fn` in C and hands every other
call to `fn` itself (so unusual arguments, static-graph variables and every error stay fn's). Builtin
functions do not bind `self`, so Tensor methods use method(f), the same path as a method descriptor.
OAR_FAST_API=0 in the environment turns them off (every call runs the Python function).
"""
import inspect
import os

from . import _C

_ENABLED = os.environ.get("OAR_FAST_API", "1") != "0"
_METHODS = {}   # fast function -> its Tensor method
_FALLBACK = {}  # fast function -> the Python function it wraps (for tests)


def fast(kind, fn, op=None, op_attrs=(), value=0.0, flag=False, params=None):
    """The fast path `kind` of fn (op / op_attrs: the op it runs, as _C.Op(op, *op_attrs); value, flag:
    kind-specific). params: fn's parameter names, when its signature does not list them."""
    if not _ENABLED:
        return fn
    if params is None:
        params = []
        for p in inspect.signature(fn).parameters.values():
            if p.kind is not p.POSITIONAL_OR_KEYWORD:
                raise TypeError("fast: {} takes *args/**kwargs or keyword-only parameters; pass params".format(
                    fn.__name__))
            params.append(p.name)
    f, m = _C._fast_api(kind, fn, list(params), op, list(op_attrs), float(value), bool(flag))
    _METHODS[f] = m
    _FALLBACK[f] = fn
    return f


def method(f):
    """What to set on Tensor for the function f: its method descriptor when f is a fast function."""
    try:
        return _METHODS.get(f, f)
    except TypeError:  # unhashable
        return f


def fallback(f):
    """The Python function a fast function wraps (f itself otherwise)."""
    try:
        return _FALLBACK.get(f, f)
    except TypeError:
        return f
