"""Methods of oar.Tensor written in Python: printing, numpy interop, conversions, and the op library as
methods (x.sum(), x.reshape(...), ...). Operators and properties are in the extension module."""
import builtins

import numpy as np

from .. import _C
from .. import _fast
from .._C import Tensor
from . import attribute, complex_ops, extra, linalg, logic, manipulation, math, search

_copy = _C.Op("copy")
_cast = _C.Op("cast", "dtype")


def _host_array(t):
    """A numpy array of t's values for reading (bfloat16 widened to float32): it shares memory with a
    contiguous CPU tensor (no copy), so callers must not write to it."""
    if t.dtype == _C.bfloat16:
        t = _cast(t, _C.float32)
    return t._numpy_view()


# Options set by set_printoptions (None: numpy's current setting).
_print_options = {"precision": None, "threshold": None, "edgeitems": None, "linewidth": None, "sci_mode": None}


def set_printoptions(precision=None, threshold=None, edgeitems=None, sci_mode=None, linewidth=None):
    """How tensors print (Paddle's paddle.set_printoptions): digits after the point, the element count
    above which a tensor is summarised, the items kept at each edge then, scientific notation for
    floats (True/False), and the line width. None leaves an option as it is."""
    for key, value in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                       ("linewidth", linewidth)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise TypeError("set_printoptions: {} must be a non-negative int, got {!r}".format(key, value))
    if sci_mode is not None and not isinstance(sci_mode, bool):
        raise TypeError("set_printoptions: sci_mode must be a bool, got {!r}".format(sci_mode))
    for key, value in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                       ("linewidth", linewidth), ("sci_mode", sci_mode)):
        if value is not None:
            _print_options[key] = value


def _array_to_string(a):
    opts = {k: v for k, v in _print_options.items() if v is not None and k not in ("sci_mode", "linewidth")}
    if _print_options["linewidth"] is not None:
        opts["max_line_width"] = _print_options["linewidth"]
    sci = _print_options["sci_mode"]
    if sci is not None and a.dtype.kind in "fc":
        if sci:
            digits = opts.get("precision", np.get_printoptions()["precision"])
            opts["formatter"] = {"float_kind": lambda v: "{:.{}e}".format(v, digits)}
        else:
            opts["suppress_small"] = True
    return np.array2string(a, separator=", ", prefix="       ", **opts)


# Complex tensors print as Paddle prints them: each element as Python formats it ("(1+2j)"), padded to
# the widest, with a leading space for the non-negative ones when some are negative (numpy's order on
# complex numbers: by real part, then imaginary part), Paddle's defaults for unset options.
def _complex_item(v, width=0, signed=False):
    s = "{}".format(v)
    if width > len(s):
        return s.ljust(width) if not signed or v < 0 else " " + s.ljust(width - 1)
    return s


def _complex_summary(a, edge):
    if a.ndim == 0 or a.shape[0] <= 2 * edge:
        return a if a.ndim <= 1 else np.stack([_complex_summary(x, edge) for x in a])
    if a.ndim == 1:
        return np.concatenate([a[:edge], a[-edge:]])
    return np.stack([_complex_summary(x, edge) for x in list(a[:edge]) + list(a[-edge:])])


def _complex_format(a, summary, indent, width, signed, edge, linewidth):
    if a.ndim == 0:
        return _complex_item(a, width, signed)
    cut = summary and a.shape[0] > 2 * edge
    if a.ndim == 1:
        if cut:
            items = ([_complex_item(v, width, signed) for v in a[:edge]] + ["..."]
                     + [_complex_item(v, width, signed) for v in a[-edge:]])
        else:
            items = [_complex_item(v, width, signed) for v in a]
        per_line = max(1, (linewidth - indent) // (width + 2))
        lines = [items[i:i + per_line] for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(", ".join(line) for line in lines) + "]"
    parts = list(a[:edge]) + [None] + list(a[-edge:]) if cut else list(a)
    subs = ["..." if x is None else _complex_format(x, summary, indent + 1, width, signed, edge, linewidth)
            for x in parts]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(subs) + "]"


def _complex_to_string(a):
    opt = {k: (v if v is not None else d) for (k, v), d in zip(
        ((k, _print_options[k]) for k in ("threshold", "edgeitems", "linewidth")), (1000, 3, 80))}
    summary = a.ndim > 0 and a.size > opt["threshold"]
    small = _complex_summary(a, opt["edgeitems"]) if a.size else np.array([], a.dtype)
    flat = list(small.reshape(-1))
    width = max([len(_complex_item(v)) for v in flat], default=0)
    signed = any(v < 0 for v in flat)
    return _complex_format(a, summary, 7, width, signed, opt["edgeitems"], opt["linewidth"])


def __repr__(self):
    if _C._is_symbolic(self):
        # Paddle prints the shape as a tuple's inside: "-1, 4", "3," for one dim, "" for none.
        return "var {} : LOD_TENSOR.shape({}).dtype({}).stop_gradient({})".format(
            self.name, str(tuple(self.shape))[1:-1], self.dtype.name, self.stop_gradient)
    head = "Tensor(shape={}, dtype={}, place={}, stop_gradient={},\n       ".format(
        self.shape, self.dtype.name, self.place, self.stop_gradient)
    a = _host_array(self)
    return head + (_complex_to_string(a) if a.dtype.kind == "c" else _array_to_string(a)) + ")"


def __format__(self, spec):
    if spec and self.size == 1:
        return format(self.item(), spec)
    return format(repr(self), spec)


def __array__(self, dtype=None, copy=None):
    # np.asarray(t) shares a contiguous CPU tensor's memory (zero-copy, see docs/python.md); np.array(t)
    # (copy=True) and t.numpy() copy.
    if copy is False and not (self.place.is_cpu_place() and self.is_contiguous()):
        raise ValueError("np.asarray(tensor, copy=False): a tensor on {} (or not contiguous) can only be "
                         "copied to numpy".format(self.place))
    a = _host_array(self)
    if copy:
        a = a.copy()
    return a if dtype is None else a.astype(dtype, copy=False)


def item(self, *args):
    """The value of a one-element tensor (or of element `args`) as a Python scalar."""
    if args:
        return _host_array(self).item(*args)
    return self._item()


def tolist(self):
    return _host_array(self).tolist()


def astype(self, dtype):
    """A copy converted to `dtype`."""
    return _cast(self, dtype)


def clone(self):
    """A contiguous copy on the same device."""
    return _copy(self)


def _copy_to(self, place, blocking=True):
    place = _C._to_place(place)
    return self.clone() if self.place == place else self._to_place(place)


def _looks_like_dtype(a):
    if isinstance(a, (_C.dtype, np.dtype)) or (isinstance(a, type) and a in (builtins.bool, builtins.int,
                                                                              builtins.float, builtins.complex)):
        return True
    if isinstance(a, type) and issubclass(a, np.generic):
        return True
    if isinstance(a, str):
        try:
            _C.to_dtype(a)
            return True
        except TypeError:
            return False
    return False


def to(self, *args, **kwargs):
    """to(device), to(dtype), to(device, dtype), to(other_tensor); keywords device, dtype, blocking."""
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("blocking", None)
    if kwargs:
        raise TypeError("to() got unexpected keyword arguments {}".format(sorted(kwargs)))
    for a in args:
        if isinstance(a, Tensor):
            device, dtype = a.place, a.dtype
        elif isinstance(a, builtins.bool) or a is None:
            continue  # blocking
        elif _looks_like_dtype(a):
            dtype = a
        else:
            device = a
    t = self
    if dtype is not None and t.dtype != _C.to_dtype(dtype):
        t = _cast(t, dtype)
    if device is not None:
        t = t._to_place(device)
    return t


# ---- writing in place ---------------------------------------------------------------------------------
def set_value(self, value, scope=None):
    """Overwrites the tensor's values with `value` (a Tensor, numpy array, nested list or scalar of the
    same shape), keeping its dtype and place. A data write, as in Paddle: not recorded by autograd, so
    it also works on parameters; tensors saved for backward notice it through their version.
    On a static program's variable (a Parameter after the startup program ran) it writes the value
    held for it in `scope` (default: the global scope), as Paddle's Variable.set_value does."""
    if _C._is_symbolic(self):
        return _set_scope_value(self, value, scope)
    if not isinstance(value, Tensor):
        value = np.asarray(value)
        if list(value.shape) != self.shape and value.size != 1:
            raise ValueError("set_value: value of shape {} does not match the tensor's shape {}".format(
                list(value.shape), self.shape))
        value = _C._from_numpy(np.ascontiguousarray(value), self.place)
    elif value.shape != self.shape:
        raise ValueError("set_value: value of shape {} does not match the tensor's shape {}".format(
            value.shape, self.shape))
    if value.dtype != self.dtype:
        value = _cast(value, self.dtype)
    if value.place != self.place:
        value = value._to_place(self.place)
    prev = _C.is_grad_enabled()
    _C._set_grad_enabled(False)
    # a data write now, also while a program is being built (a Parameter in static mode): never an op
    builder = _C._set_builder(None)
    try:
        _C._assign(self, value)
    finally:
        _C._set_builder(builder)
        _C._set_grad_enabled(prev)
    return self


def _set_scope_value(var, value, scope):
    from ..static import program as _prog
    scope = scope if scope is not None else _prog.global_scope()
    held = scope.find_var(var.name)
    if held is None:
        raise ValueError("set_value: the program variable '{}' has no value in the scope yet (run the startup "
                         "program first)".format(var.name))
    value = np.asarray(value.numpy() if isinstance(value, Tensor) else value)
    if list(value.shape) != list(var.shape):
        raise ValueError("set_value: value of shape {} does not match the variable '{}' of shape {}".format(
            list(value.shape), var.name, list(var.shape)))
    held.get_tensor().set(value)


def _write_back(self, out, name):
    """The in-place form of an op: out (same dtype and shape as self) written into self's memory."""
    if out.dtype != self.dtype:
        raise TypeError("{}: the result dtype {} cannot be written in place into a {} tensor".format(
            name, out.dtype.name, self.dtype.name))
    if out.shape != self.shape:
        raise ValueError("{}: the result shape {} differs from the tensor's shape {}".format(
            name, out.shape, self.shape))
    _C._assign(self, out)
    return self


def _make_inplace(name, fn):
    def method(self, *args, **kwargs):
        return _write_back(self, fn(self, *args, **kwargs), name)
    method.__name__ = name
    method.__doc__ = "In-place {}: writes the result into this tensor and returns it.".format(name[:-1])
    return method


def zero_(self):
    """Sets every element to 0, in place."""
    _C._assign(self, _C._scalar_tensor(0, self.dtype, self.place))
    return self


def fill_(self, value):
    """Sets every element to `value`, in place."""
    _C._assign(self, _C._scalar_tensor(value, self.dtype, self.place))
    return self


# ---- autograd (stop_gradient, is_leaf, grad, detach and retain_grads are properties/methods in C++) ----
def backward(self, grad_tensor=None, retain_graph=False):
    """Accumulates d(self)/d(leaf) into the .grad of every leaf that requires gradients.

    `grad_tensor` is the starting gradient (default: ones of self's shape, as in Paddle). Without
    `retain_graph` the graph is freed, and a second backward through it raises RuntimeError.
    """
    self._backward(grad_tensor, bool(retain_graph))


def clear_gradient(self, set_to_zero=True):
    """Resets .grad: to zeros (the default, as in Paddle), or to None with set_to_zero=False."""
    self._clear_gradient(bool(set_to_zero))


def clear_grad(self):
    """Alias of clear_gradient() (zeroes .grad)."""
    self._clear_gradient(True)


def gradient(self):
    """.grad as a numpy array, or None."""
    g = self.grad
    return None if g is None else g.numpy()


class _HookRemoveHelper:
    """What register_hook returns: remove() disables the hook."""

    def __init__(self, hook):
        self._hook = hook

    def __call__(self, grad):
        hook = self._hook
        return None if hook is None else hook(grad)

    def remove(self):
        removed = self._hook is not None
        self._hook = None
        return removed


def register_hook(self, hook):
    """Calls `hook(grad)` when the gradient of this tensor is computed; a returned Tensor replaces it.

    Returns a helper whose remove() disables the hook. Raises RuntimeError on a tensor with
    stop_gradient True.
    """
    if not callable(hook):
        raise TypeError("register_hook: hook must be callable, got {}".format(type(hook).__name__))
    helper = _HookRemoveHelper(hook)
    self._register_hook(helper)
    return helper


for _name, _fn in [("set_value", set_value), ("zero_", zero_), ("fill_", fill_), ("backward", backward), ("clear_gradient", clear_gradient), ("clear_grad", clear_grad),
                   ("gradient", gradient), ("register_hook", register_hook)]:
    setattr(Tensor, _name, _fn)


_astype = _fast.method(_fast.fast("cast", astype, "cast", ["dtype"]))  # (decision 134)
for _name, _fn in [("__repr__", __repr__), ("__str__", __repr__), ("__format__", __format__),
                   ("__array__", __array__), ("item", item), ("tolist", tolist), ("astype", _astype),
                   ("cast", _astype), ("clone", clone), ("_copy_to", _copy_to), ("to", to)]:
    setattr(Tensor, _name, _fn)

# Names and persistence (Paddle's Tensor.name / .persistable). Kept in the object's __dict__, so only
# tensors that are asked for a name pay for one; unnamed tensors get "generated_tensor_<n>".
_name_counter = [0]


def _get_name(self):
    if _C._is_symbolic(self):  # a program variable's name is its variable's
        return _C._symbolic_name(self)
    name = self.__dict__.get("_name")
    if name is None:
        name = "generated_tensor_{}".format(_name_counter[0])
        _name_counter[0] += 1
        self.__dict__["_name"] = name
    return name


def _set_name(self, value):
    if not isinstance(value, str):
        raise TypeError("Tensor.name must be a str, got {}".format(type(value).__name__))
    self.__dict__["_name"] = value


Tensor.name = property(_get_name, _set_name, doc="The tensor's name (a parameter's unique name, e.g. linear_0.w_0).")
Tensor.persistable = property(lambda self: self.__dict__.get("_persistable", False),
                              lambda self, v: self.__dict__.__setitem__("_persistable", bool(v)),
                              doc="True for tensors saved with a model (parameters and persistable buffers).")


def __deepcopy__(self, memo):
    """A detached copy with the same stop_gradient and attributes (name, Parameter fields, ...)."""
    new = type(self)(self.detach().clone()) if type(self) is not Tensor else self.detach().clone()
    new.stop_gradient = self.stop_gradient
    memo[id(self)] = new
    import copy
    for k, v in self.__dict__.items():
        new.__dict__[k] = copy.deepcopy(v, memo)
    return new


Tensor.__deepcopy__ = __deepcopy__

# numpy must not swallow tensors in mixed expressions (np_scalar * tensor calls Tensor.__rmul__).
Tensor.__array_ufunc__ = None

# The op library as methods: x.sum(axis=0), x.reshape([2, 3]), x.matmul(y), ... Every public function of
# these modules becomes a method (Paddle's Tensor has them all), except those listed in _NOT_METHODS.
# tolist: its own method above; complex: a function of two tensors (paddle.complex)
_NOT_METHODS = {"is_tensor", "einsum", "shape", "broadcast_shape", "assign", "where_", "tolist", "complex"}
_METHODS = {mod: [n for n in mod.__all__ if n not in _NOT_METHODS]
            for mod in (attribute, complex_ops, math, logic, manipulation, search, linalg, extra)}
for _mod, _names in _METHODS.items():
    for _name in _names:
        setattr(Tensor, _name, _fast.method(getattr(_mod, _name)))  # a fast function's method descriptor
Tensor.element_size = attribute.element_size


def _where_method(self, x=None, y=None, name=None):
    return search.where(self, x, y)


Tensor.where = _where_method
del _mod, _names, _name, _fn

# In-place variants (x.add_(y), x.exp_(), ...) of the ops that have them in Paddle.
_INPLACE = ["add", "subtract", "multiply", "divide", "floor_divide", "remainder", "pow", "exp", "log", "sqrt",
            "rsqrt", "square", "reciprocal", "abs", "neg", "floor", "ceil", "round", "tanh", "sigmoid", "sin", "cos",
            "erf", "scale", "clip", "lerp", "sign"]
# The binary ones and the unary ones made by math._unary take the C fast path (decision 134), which runs
# the op and writes back as _write_back does, and leaves everything else to the Python method.
_INPLACE_BINARY = {"add", "subtract", "multiply", "divide", "floor_divide", "remainder", "pow"}
for _name in _INPLACE:
    if hasattr(math, _name):
        _method = _make_inplace(_name + "_", getattr(math, _name))
        if _name in _INPLACE_BINARY:
            _method = _fast.method(_fast.fast("inplace_binary", _method, _name, flag=_name == "divide",
                                              params=["self", "y", "name"]))
        elif _name in math._UNARY_OPS:
            _op, _int_to_float32 = math._UNARY_OPS[_name]
            _method = _fast.method(_fast.fast("inplace_unary", _method, _op, flag=_int_to_float32,
                                              params=["self", "name"]))
        setattr(Tensor, _name + "_", _method)
