"""oar.static.nn: layers as functions for static programs (Paddle's paddle.static.nn) and control flow.

The layer functions create their parameters right away (initialised, bound to the current main
program under their names) and record the computation into the program.
"""
import numpy as np

from .. import _C
from . import program as _prog

__all__ = ["fc", "conv2d", "batch_norm", "embedding", "layer_norm", "cond", "while_loop", "switch_case", "case"]


def _param(shape, dtype, attr, is_bias, default_initializer=None):
    from ..framework.parameter import create_parameter
    with _prog._eager_guard():
        p = create_parameter(list(shape), dtype, attr=attr, is_bias=is_bias, default_initializer=default_initializer)
    _prog.default_main_program()._bind_parameter(p)
    return p


def _activation(x, act):
    if act is None:
        return x
    from ..nn import functional as F
    fn = getattr(F, act, None)
    if fn is None:
        raise ValueError("unknown activation '{}'".format(act))
    return fn(x)


def fc(x, size, num_flatten_dims=1, weight_attr=None, bias_attr=None, activation=None, name=None):
    """x flattened to 2-D at num_flatten_dims, times a new [in, size] weight, plus a bias, then act."""
    from ..nn import functional as F
    xs = x if isinstance(x, (list, tuple)) else [x]
    outs = []
    for xi in xs:
        shape = xi.shape
        if num_flatten_dims < 1 or num_flatten_dims >= len(shape):
            raise ValueError("fc: num_flatten_dims {} is out of range for input of rank {}".format(num_flatten_dims,
                                                                                                len(shape)))
        in_features = int(np.prod(shape[num_flatten_dims:]))
        if in_features <= 0:
            raise ValueError("fc: the input's trailing dims {} must be known".format(shape[num_flatten_dims:]))
        w = _param([in_features, size], xi.dtype, weight_attr, False)
        if len(shape) != num_flatten_dims + 1:
            xi = xi.reshape(list(shape[:num_flatten_dims]) + [in_features])
        outs.append(F.linear(xi, w))
    out = outs[0]
    for o in outs[1:]:
        out = out + o
    if bias_attr is not False:
        out = out + _param([size], out.dtype, bias_attr, True)
    return _activation(out, activation)


def conv2d(input, num_filters, filter_size, stride=1, padding=0, dilation=1, groups=1, param_attr=None,
           bias_attr=None, act=None, name=None, data_format="NCHW"):
    from ..nn import functional as F
    c_in = input.shape[1 if data_format == "NCHW" else 3]
    k = [filter_size, filter_size] if isinstance(filter_size, int) else list(filter_size)
    w = _param([num_filters, c_in // groups] + k, input.dtype, param_attr, False)
    b = None if bias_attr is False else _param([num_filters], input.dtype, bias_attr, True)
    out = F.conv2d(input, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups,
                   data_format=data_format)
    return _activation(out, act)


def batch_norm(input, act=None, is_test=False, momentum=0.9, epsilon=1e-5, param_attr=None, bias_attr=None,
               data_layout="NCHW", name=None, moving_mean_name=None, moving_variance_name=None,
               use_global_stats=False):
    from ..nn import functional as F
    from ..nn.initializer import Constant
    c = input.shape[1 if data_layout == "NCHW" else -1]
    scale = _param([c], input.dtype, param_attr, False, Constant(1.0))
    bias = _param([c], input.dtype, bias_attr, True)
    prog = _prog.default_main_program()
    mean = _prog.create_global_var([c], 0.0, input.dtype, persistable=True,
                                   name=moving_mean_name or prog._builder.unique_name("batch_norm.mean"))
    var = _prog.create_global_var([c], 1.0, input.dtype, persistable=True,
                                  name=moving_variance_name or prog._builder.unique_name("batch_norm.var"))
    out = F.batch_norm(input, mean, var, scale, bias, training=not is_test and not use_global_stats,
                       momentum=momentum, epsilon=epsilon, data_format=data_layout,
                       use_global_stats=use_global_stats or None)
    return _activation(out, act)


def layer_norm(input, scale=True, shift=True, begin_norm_axis=1, epsilon=1e-5, param_attr=None, bias_attr=None,
               act=None, name=None):
    from ..nn import functional as F
    from ..nn.initializer import Constant
    shape = input.shape[begin_norm_axis:]
    n = int(np.prod(shape))
    w = _param([n], input.dtype, param_attr, False, Constant(1.0)) if scale else None
    b = _param([n], input.dtype, bias_attr, True) if shift else None
    out = F.layer_norm(input, shape, w.reshape(shape) if w is not None else None,
                       b.reshape(shape) if b is not None else None, epsilon)
    return _activation(out, act)


def embedding(input, size, is_sparse=False, is_distributed=False, padding_idx=None, param_attr=None,
              dtype="float32"):
    from ..nn import functional as F
    w = _param(list(size), _C.to_dtype(dtype), param_attr, False)
    return F.embedding(input, w, padding_idx=padding_idx)


# ---- control flow -------------------------------------------------------------------------------------------
def _concrete_bool(pred, what):
    if isinstance(pred, _C.Tensor):
        if pred.size != 1:
            raise ValueError("{}: the condition must have one element, got shape {}".format(what, pred.shape))
        return bool(pred)
    return bool(pred)


def cond(pred, true_fn=None, false_fn=None, name=None, return_names=None):
    """true_fn() if pred else false_fn(). A condition that is a program variable becomes program control
    flow (a conditional_block per branch, outputs selected at run time); a concrete one picks a branch now."""
    if _prog.is_symbolic(pred):
        from . import control_flow
        return control_flow.cond(pred, true_fn, false_fn)
    if _concrete_bool(pred, "cond"):
        return true_fn() if true_fn is not None else None
    return false_fn() if false_fn is not None else None


def while_loop(cond, body, loop_vars, is_test=False, name=None):
    """Runs `loop_vars = body(*loop_vars)` while cond(*loop_vars); returns the final loop_vars. A
    condition that is a program variable becomes a program `while` op."""
    if not callable(cond) or not callable(body):
        raise TypeError("while_loop: cond and body must be callable")
    if not isinstance(loop_vars, (list, tuple)) or not loop_vars:
        raise ValueError("while_loop: loop_vars must be a non-empty list or tuple")
    loop_vars = list(loop_vars)
    c = cond(*loop_vars)
    if _prog.is_symbolic(c):
        from . import control_flow
        return control_flow.while_loop(cond, body, loop_vars, name)
    while _concrete_bool(c, "while_loop"):
        out = body(*loop_vars)
        loop_vars = list(out) if isinstance(out, (list, tuple)) else [out]
        c = cond(*loop_vars)
    return loop_vars


def case(pred_fn_pairs, default=None, name=None):
    """The fn of the first true pred (default's, or the last pair's, when none)."""
    if not pred_fn_pairs:
        raise ValueError("case: pred_fn_pairs must not be empty")
    pairs = list(pred_fn_pairs)
    if default is None:
        default = pairs[-1][1]
        pairs = pairs[:-1]
    out = default
    for pred, fn in reversed(pairs):
        out = (lambda p, f, rest: (lambda: cond(p, f, rest)))(pred, fn, out)
    return out()


def switch_case(branch_index, branch_fns, default=None, name=None):
    """branch_fns[branch_index]() (a dict or a list of (index, fn) or fns); default when no index matches."""
    if isinstance(branch_fns, dict):
        items = sorted(branch_fns.items())
    else:
        fns = list(branch_fns)
        items = list(fns) if fns and isinstance(fns[0], (list, tuple)) else list(enumerate(fns))
    if default is None:
        default = items[-1][1]
    from ..tensor.logic import equal
    pairs = [(equal(branch_index, int(i)) if isinstance(branch_index, _C.Tensor) else branch_index == i, fn)
             for i, fn in items]
    return case(pairs, default)
