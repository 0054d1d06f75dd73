"""Loading prebuilt custom op libraries (docs/custom_op.md).

``load_op_library(path)`` loads a shared library built against ``oar/extension.h`` (or Paddle's
``paddle/extension.h`` spellings) and returns a module with one function per forward op. A function
takes the op's inputs in declared order (a Tensor; None for an absent optional input; a list of
Tensors for a vector input), then its attributes in declared order (also by keyword), and returns a
Tensor, or a list of Tensors for several outputs. The functions are differentiable through the
library's grad ops, record into static programs and work under ``oar.jit.to_static``.
"""
import os
import types

from .. import _C

_MISSING = object()
_modules = {}  # by real path: loading twice returns the same module


def _make_function(info):
    name = info["name"]
    inputs = list(info["inputs"])
    attrs = list(info["attrs"])
    kinds = list(info["input_kinds"])
    inplace = list(info["inplace"])
    n_in, n_attr = len(inputs), len(attrs)
    # Keywords: the declared names, and their lower-case forms (Paddle's generated API uses x for "X").
    by_key = {}
    for i, n in enumerate(inputs):
        by_key.setdefault(n, ("in", i))
        by_key.setdefault(n.lower(), ("in", i))
    for i, n in enumerate(attrs):
        by_key.setdefault(n, ("attr", i))

    def op(*args, **kwargs):
        if len(args) > n_in + n_attr:
            raise TypeError("{}() takes {} input(s) ({}) and {} attribute(s) ({}), got {} positional arguments".format(
                name, n_in, ", ".join(inputs), n_attr, ", ".join(attrs), len(args)))
        ins = list(args[:n_in]) + [_MISSING] * max(0, n_in - len(args))
        vals = list(args[n_in:]) + [_MISSING] * (n_attr - max(0, len(args) - n_in))
        for key, value in kwargs.items():
            where = by_key.get(key)
            if where is None:
                raise TypeError("{}() got an unexpected keyword argument '{}'".format(name, key))
            target = ins if where[0] == "in" else vals
            if target[where[1]] is not _MISSING:
                raise TypeError("{}() got multiple values for argument '{}'".format(name, key))
            target[where[1]] = value
        for i, v in enumerate(ins):
            if v is _MISSING:
                if kinds[i] != "optional":
                    raise TypeError("{}() missing input '{}'".format(name, inputs[i]))
                ins[i] = None
        missing = [attrs[i] for i, v in enumerate(vals) if v is _MISSING]
        if missing:
            raise TypeError("{}() missing attribute(s): {}".format(name, ", ".join(missing)))
        outs = list(_C._custom_op_call(name, ins, vals))
        for o, slot in enumerate(inplace):
            if slot >= 0:  # the output is the input it was written into
                outs[o] = ins[slot]
        return outs[0] if len(outs) == 1 else outs

    op.__name__ = op.__qualname__ = name
    op.__doc__ = "Custom op {} from {}.\n\n{}({}{})".format(
        name, info["library"], name, ", ".join(inputs),
        "".join(", {}".format(a) for a in attrs))
    return op


def load_op_library(path):
    """Loads the custom op library at ``path`` and returns a module with one function per forward op."""
    path = os.fspath(path)
    key = os.path.realpath(path)
    if key in _modules:
        return _modules[key]
    infos = _C._load_custom_op_library(path)
    stem = os.path.basename(path).split(".")[0]
    if stem.startswith("lib"):
        stem = stem[3:]
    module = types.ModuleType(stem, "custom ops from {}".format(path))
    module.__file__ = path
    names = {i["name"] for i in infos}
    module.__all__ = []
    module._ops = infos
    for info in infos:
        n = info["name"]
        if n.endswith("_grad") and n[: -len("_grad")] in names:
            continue  # grad ops run through autograd, not from Python
        setattr(module, n, _make_function(info))
        module.__all__.append(n)
    _modules[key] = module
    return module
