"""oar.autograd: reverse-mode differentiation, as paddle.autograd.

The engine is the C++ core's (oar::autograd); this module gives Paddle 2.x's Python API over it:
`backward`, `grad`, and the grad-mode switches `no_grad`, `enable_grad`, `set_grad_enabled` and
`is_grad_enabled` (also at the top level: `oar.no_grad`, `oar.grad`, ...), and PyLayer (custom
forward/backward in Python, py_layer.py).
"""
import functools
import inspect

from .. import _C

from .py_layer import PyLayer, PyLayerContext

__all__ = ["backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "PyLayer",
           "PyLayerContext"]

is_grad_enabled = _C.is_grad_enabled


class _GradModeContext:
    """A context manager that is also a decorator; the mode is set on entry and restored on exit."""

    _mode = None

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(self._mode)
        return self

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False

    def __call__(self, func):
        if inspect.isgeneratorfunction(func):
            @functools.wraps(func)
            def gen_wrapper(*args, **kwargs):
                gen = func(*args, **kwargs)
                with self.__class__.__new__(self.__class__)._copy_from(self):
                    value = next(gen)
                while True:
                    try:
                        with self.__class__.__new__(self.__class__)._copy_from(self):
                            sent = yield value
                    except GeneratorExit:
                        gen.close()
                        raise
                    try:
                        with self.__class__.__new__(self.__class__)._copy_from(self):
                            value = gen.send(sent)
                    except StopIteration as e:
                        return e.value
            return gen_wrapper

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.__class__.__new__(self.__class__)._copy_from(self):
                return func(*args, **kwargs)
        return wrapper

    def _copy_from(self, other):
        self._mode = other._mode
        return self


class no_grad(_GradModeContext):
    """Turns gradient recording off: ops run inside produce tensors with stop_gradient True.

    As in Paddle, a context manager (`with oar.no_grad():`) and a decorator (`@oar.no_grad()`; the bare
    form `@oar.no_grad` works too).
    """

    _mode = False

    def __new__(cls, func=None):
        self = super().__new__(cls)
        if func is not None and callable(func):
            return self(func)  # used as a bare decorator: @oar.no_grad
        return self

    def __init__(self, func=None):
        pass


class enable_grad(no_grad):
    """Turns gradient recording back on (inside no_grad); a context manager and a decorator."""

    _mode = True


class set_grad_enabled(_GradModeContext):
    """`with oar.set_grad_enabled(mode):` turns gradient recording on or off for the block."""

    def __init__(self, mode):
        self._mode = bool(mode)


def backward(tensors, grad_tensors=None, retain_graph=False):
    """Computes the gradients of `tensors` (a Tensor or a list) and accumulates them into the leaves' .grad.

    `grad_tensors` gives the starting gradient of each tensor (None entries and a missing list mean
    ones of the tensor's shape). Without `retain_graph`, the graph is freed and a second backward
    through it raises RuntimeError.
    """
    if isinstance(tensors, (list, tuple)) and len(tensors) == 0:
        raise ValueError("backward: tensors must not be empty")
    if grad_tensors is not None and not isinstance(grad_tensors, (list, tuple)):
        grad_tensors = [grad_tensors]
    _C._backward(tensors, grad_tensors, bool(retain_graph))


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=False, no_grad_vars=None):
    """The gradients of `outputs` with respect to `inputs`, as a list with one entry per input.

    .grad of the inputs is left untouched. `grad_outputs` gives the starting gradients (None entries
    mean ones). `retain_graph` defaults to `create_graph`; with `create_graph` the result is itself
    differentiable. An input not reachable from the outputs is an error unless `allow_unused`, which
    gives None for it.
    """
    if not only_inputs:
        raise NotImplementedError("grad: only_inputs=False is not supported (as in Paddle)")
    if no_grad_vars is not None and (not isinstance(no_grad_vars, (list, tuple, set)) or len(no_grad_vars)):
        raise NotImplementedError("grad: no_grad_vars is not supported yet; detach() those tensors instead")
    if retain_graph is None:
        retain_graph = create_graph
    if isinstance(outputs, (list, tuple)) and len(outputs) == 0:
        raise ValueError("grad: outputs must not be empty")
    if grad_outputs is not None and not isinstance(grad_outputs, (list, tuple)):
        grad_outputs = [grad_outputs]
    if grad_outputs is not None:
        n = len(outputs) if isinstance(outputs, (list, tuple)) else 1
        if len(grad_outputs) != n:
            raise ValueError("grad: got {} grad_outputs for {} outputs".format(len(grad_outputs), n))
    from ..framework import selected_rows
    selected_rows._functional_grad[0] += 1  # row-sparse lookups hand back dense gradients meanwhile
    try:
        return _C._grad(outputs, inputs, grad_outputs, bool(retain_graph), bool(create_graph), bool(allow_unused))
    finally:
        selected_rows._functional_grad[0] -= 1
