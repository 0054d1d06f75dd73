"""PyLayer: an op whose forward and backward are Python code (Paddle's paddle.autograd.PyLayer).

    class Cube(PyLayer):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, grad):
            x, = ctx.saved_tensor()
            return grad * 3 * x ** 2

    y = Cube.apply(x)

forward runs without recording; its Tensor outputs get one node whose backward is `backward`, which
gets one gradient per forward output and returns one per Tensor input of forward (None where there is
none). The engine itself stays in C++; only this backward runs Python.
"""
from .. import _C
from .._C import Tensor

__all__ = ["PyLayer", "PyLayerContext"]


class PyLayerContext:
    """The `ctx` of forward and backward: carries what backward needs."""

    def __init__(self):
        self._saved = ()
        self._non_differentiable = []
        self._materialize_grads = True
        self.container = None  # free for user data, as in Paddle

    def save_for_backward(self, *tensors):
        """Keeps tensors for backward (get them back with saved_tensor())."""
        self._saved = tensors

    def saved_tensor(self):
        """The tensors given to save_for_backward, as a tuple."""
        return self._saved

    def mark_not_inplace(self, *args):
        """Accepted for compatibility: oar's PyLayer outputs are always fresh tensors."""

    def mark_non_differentiable(self, *tensors):
        """These outputs get no gradient (they keep stop_gradient=True)."""
        self._non_differentiable.extend(tensors)

    def set_materialize_grads(self, value):
        """True (default): gradients backward did not receive arrive as zeros; False: as None."""
        self._materialize_grads = bool(value)


class PyLayer:
    """Subclass it with static `forward(ctx, *args, **kwargs)` and `backward(ctx, *grads)`; call
    `YourLayer.apply(*args, **kwargs)`."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("PyLayer subclasses must define a static forward(ctx, ...)")

    @staticmethod
    def backward(ctx, *args):
        raise NotImplementedError("PyLayer subclasses must define a static backward(ctx, *grads)")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = PyLayerContext()
        inputs = [a for a in args if isinstance(a, Tensor)]
        prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)
        try:
            result = cls.forward(ctx, *args, **kwargs)
        finally:
            _C._set_grad_enabled(prev)
        if not (prev and any(not t.stop_gradient for t in inputs)):
            return result
        single = isinstance(result, Tensor)
        items = [result] if single else list(result) if isinstance(result, (tuple, list)) else None
        if items is None:
            raise TypeError("{}.forward must return a Tensor or a tuple/list of Tensors, got {}".format(
                cls.__name__, type(result).__name__))
        non_diff = {id(t) for t in ctx._non_differentiable}
        recorded = [t if isinstance(t, Tensor) and id(t) not in non_diff and _differentiable(t) else None
                    for t in items]
        outs = _C._pylayer_record(cls.backward, ctx, inputs, recorded, ctx._materialize_grads, cls.__name__)
        merged = [o if o is not None else i for o, i in zip(outs, items)]
        if single:
            return merged[0]
        return tuple(merged) if isinstance(result, tuple) else merged


def _differentiable(t):
    return t.dtype in (_C.float16, _C.bfloat16, _C.float32, _C.float64, _C.complex64, _C.complex128)
