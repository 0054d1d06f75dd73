"""append_backward and gradients: gradient ops for a static program.

The gradient of a program is built by the same rules as eager autograd: while a program is built, each
recorded op also records its autograd node, so running the autograd engine on the program's symbolic
variables records the backward ops (op_role 1) into the program. Gradient variables are named
`<var>@GRAD` as in Paddle.
"""
from .. import _C
from . import program as _prog

__all__ = ["append_backward", "gradients"]

_BACKWARD = 1


def _program_of(t, what):
    if not _prog.is_symbolic(t):
        raise TypeError("{}: expected a variable of a static program, got a concrete Tensor".format(what))
    prog = _prog.default_main_program()
    if not prog.global_block().has_var(_C._symbolic_name(t)) and not _has_var_any_block(prog, t):
        raise ValueError("{}: '{}' is not a variable of the current main program (use program_guard)".format(
            what, _C._symbolic_name(t)))
    return prog


def _has_var_any_block(prog, t):
    name = _C._symbolic_name(t)
    return any(prog.block(i).has_var(name) for i in range(prog.num_blocks))


def _names(items):
    out = set()
    for x in items or ():
        out.add(x if isinstance(x, str) else x.name)
    return out


def _grads(prog, targets, inputs, target_gradients):
    builder = prog._builder
    role = builder.op_role
    builder.op_role = _BACKWARD
    prev = _C._set_builder(builder)
    try:
        grads = _C._grad(list(targets), list(inputs), target_gradients, True, False, True)
    finally:
        _C._set_builder(prev)
        builder.op_role = role
    for x, g in zip(inputs, grads):
        if g is None or not _prog.is_symbolic(g):
            continue
        wanted = x.name + "@GRAD"
        if not _has_name(prog, wanted):
            builder.rename(g, wanted)
    return grads


def _has_name(prog, name):
    return any(prog.block(i).has_var(name) for i in range(prog.num_blocks))


def append_backward(loss, parameter_list=None, no_grad_set=None, callbacks=None, checkpoints=None):
    """Appends the gradient ops of `loss` (a one-element variable) with respect to the trainable
    parameters (or `parameter_list`, parameters or names) and returns [(param, grad), ...]."""
    prog = _program_of(loss, "append_backward")
    if loss.size != 1 and -1 not in loss.shape:
        raise ValueError("append_backward: loss must have one element, got shape {}".format(loss.shape))
    params = prog.all_parameters()
    if parameter_list is not None:
        wanted = _names(parameter_list)
        missing = wanted - {p.name for p in params}
        if missing:
            raise ValueError("append_backward: the program uses no parameter named {}".format(sorted(missing)))
        params = [p for p in params if p.name in wanted]
    skip = _names(no_grad_set)
    params = [p for p in params if p.trainable and p.name not in skip]
    if not params:
        raise ValueError("append_backward: the program has no trainable parameter to differentiate")
    grads = _grads(prog, [loss], params, None)
    return [(p, g) for p, g in zip(params, grads) if g is not None]


def gradients(targets, inputs, target_gradients=None, no_grad_set=None):
    """Gradient variables of sum(targets) with respect to `inputs` (None where one does not depend)."""
    single = not isinstance(targets, (list, tuple))
    targets = [targets] if single else list(targets)
    inputs_list = [inputs] if not isinstance(inputs, (list, tuple)) else list(inputs)
    prog = _program_of(targets[0], "gradients")
    if target_gradients is not None and not isinstance(target_gradients, (list, tuple)):
        target_gradients = [target_gradients]
    for x in inputs_list:
        if x.stop_gradient:
            raise ValueError("gradients: '{}' has stop_gradient=True, so the program recorded no gradient path "
                             "from it; set {}.stop_gradient = False before building the ops that use it".format(
                                 x.name, x.name))
    return _grads(prog, targets, inputs_list, target_gradients)
