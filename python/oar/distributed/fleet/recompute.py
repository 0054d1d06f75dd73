"""Activation recomputation (Paddle's paddle.distributed.fleet.utils.recompute).

`recompute(function, *args)` runs `function` without recording its graph, so none of its intermediate
activations stay alive until backward; backward runs it again with recording on, from the same inputs
and the same random-generator state (dropout draws the same mask), and back-propagates through that
second run. Gradients are the ones the plain run gives; the cost is one more forward of `function`.

It is one PyLayer node: forward is `function` under no_grad, backward re-runs it and calls the engine
on the re-run's outputs (the engine is re-entrant), which accumulates the parameters' .grad directly and
returns the inputs' gradients to the outer graph.
"""
from ... import _C
from ..._C import Tensor
from ...autograd import PyLayer, backward as _backward, enable_grad

__all__ = ["recompute", "recompute_sequential"]


def _rng_state():
    """(seed, offset) of the global generator (every random op of every device draws from it)."""
    seed, offset = _C._reserve_random(0)  # reserving 0 counters reads the state without moving it
    return int(seed), int(offset)


def _set_rng_state(state):
    seed, offset = state
    _C.seed(seed)  # offset back to 0 ...
    if offset:
        _C._reserve_random(offset)  # ... then forward to the saved offset


def _call(function, args, kwargs, tensor_keys):
    n = len(args) - len(tensor_keys)
    return function(*args[:n], **kwargs, **dict(zip(tensor_keys, args[n:])))


class _Recompute(PyLayer):
    # args = the positional arguments, then the values of the Tensor keyword arguments named in
    # tensor_keys: as PyLayer inputs those get their gradients too.
    @staticmethod
    def forward(ctx, function, rng, kwargs, tensor_keys, anchor, *args):
        ctx.function, ctx.rng, ctx.kwargs, ctx.tensor_keys, ctx.args = function, rng, kwargs, tensor_keys, args
        return _call(function, args, kwargs, tensor_keys)

    @staticmethod
    def backward(ctx, *grads):
        args = []
        for a in ctx.args:
            if isinstance(a, Tensor):
                d = a.detach()
                d.stop_gradient = a.stop_gradient
                a = d
            args.append(a)
        current = _rng_state() if ctx.rng is not None else None
        if ctx.rng is not None:
            _set_rng_state(ctx.rng)
        try:
            with enable_grad():
                outputs = _call(ctx.function, args, ctx.kwargs, ctx.tensor_keys)
        finally:
            if current is not None:
                _set_rng_state(current)  # the generator goes on as if backward had drawn nothing
        outputs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
        pairs = [(o, g) for o, g in zip(outputs, grads)
                 if isinstance(o, Tensor) and not o.stop_gradient and g is not None]
        if pairs:
            _backward([o for o, _ in pairs], [g for _, g in pairs])
        tensor_args = [a for a in args if isinstance(a, Tensor)]
        return (None,) + tuple(None if a.stop_gradient else a.grad for a in tensor_args)


def recompute(function, *args, **kwargs):
    """Runs `function(*args, **kwargs)` keeping no intermediate activation; backward recomputes them.

    `preserve_rng_state` (default True): backward's re-run starts from the generator state the forward
    started from, so random ops (dropout) repeat exactly; the generator is then put back where it was.
    `use_reentrant` (default True) is accepted for Paddle compatibility: both values run this one
    implementation, which passes other keyword arguments on to `function` (Tensor ones get gradients as
    the positional ones do). Under no_grad, or when
    recording is off, it is a plain call. Parameters used inside `function` get their gradients even
    when no input needs one (a one-element anchor input keeps the node in the graph)."""
    preserve = kwargs.pop("preserve_rng_state", True)
    kwargs.pop("use_reentrant", True)
    if not callable(function):
        raise TypeError(f"recompute: function must be callable (a Layer or a function), got "
                        f"{type(function).__name__}")
    if not isinstance(preserve, bool):
        raise TypeError(f"recompute: preserve_rng_state must be a bool, got {preserve!r}")
    if not _C.is_grad_enabled():
        return function(*args, **kwargs)
    from ... import zeros
    anchor = zeros([1], dtype="float32")
    anchor.stop_gradient = False
    rng = _rng_state() if preserve else None
    tensor_keys = tuple(k for k, v in kwargs.items() if isinstance(v, Tensor))
    plain = {k: v for k, v in kwargs.items() if k not in tensor_keys}
    return _Recompute.apply(function, rng, plain, tensor_keys, anchor, *args, *(kwargs[k] for k in tensor_keys))


def recompute_sequential(ctx, functions, *args, **kwargs):
    """Paddle's helper: runs a Sequential (or a list of layers) in `ctx["segments"]` segments, each
    through recompute (`ctx["preserve_rng_state"]`, default True)."""
    if not isinstance(ctx, dict):
        raise TypeError(f"recompute_sequential: ctx must be a dict, got {type(ctx).__name__}")
    segments = ctx.get("segments", 1)
    preserve = ctx.get("preserve_rng_state", True)
    layers = list(functions.children()) if hasattr(functions, "children") else list(functions)
    if not isinstance(segments, int) or isinstance(segments, bool) or not 1 <= segments <= max(len(layers), 1):
        raise ValueError(f"recompute_sequential: segments must be an int in [1, {len(layers)}], got {segments!r}")
    size = (len(layers) + segments - 1) // segments

    def run(begin, end):
        def segment(*xs):
            for layer in layers[begin:end]:
                xs = layer(*xs)
                xs = (xs,) if isinstance(xs, Tensor) else tuple(xs)
            return xs[0] if len(xs) == 1 else xs
        return segment

    out = args
    for begin in range(0, len(layers), size):
        out = recompute(run(begin, begin + size), *((out,) if isinstance(out, Tensor) else out),
                        preserve_rng_state=preserve, **kwargs)
    return out
