"""Parameter: a trainable tensor owned by a layer (Paddle's EagerParamBase), and oar.create_parameter."""
import copy

from .. import _C
from .._C import Tensor
from . import selected_rows as _selected_rows
from . import unique_name
from .param_attr import ParamAttr

__all__ = ["Parameter", "create_parameter"]

# Bumped whenever an attribute optimizers read (optimize_attr and its entries, regularizer, need_clip)
# changes on any Parameter: an optimizer's cached per-parameter plan (oar.optimizer) is valid while this
# count is unchanged, so a step need not re-read every parameter's attributes.
_attr_version = [0]


def _bump():
    _attr_version[0] += 1


def _bumping(name):
    """dict's method `name`, bumping _attr_version first."""
    base = getattr(dict, name)

    def method(self, *args, **kwargs):
        _bump()
        return base(self, *args, **kwargs)

    method.__name__ = name
    return method


class _OptimizeAttr(dict):
    """A Parameter's optimize_attr: a dict that bumps _attr_version on every change."""

    __setitem__ = _bumping("__setitem__")
    __delitem__ = _bumping("__delitem__")
    __ior__ = _bumping("__ior__")
    update = _bumping("update")
    pop = _bumping("pop")
    popitem = _bumping("popitem")
    setdefault = _bumping("setdefault")
    clear = _bumping("clear")

    def __deepcopy__(self, memo):
        return _OptimizeAttr(copy.deepcopy(dict(self), memo))

    def __reduce__(self):
        return (_OptimizeAttr, (dict(self),))


def _tracked(name):
    """A Parameter attribute stored in the instance dict under `name` whose changes bump _attr_version."""
    key = "_" + name

    def get(self):
        try:
            return self.__dict__[key]
        except KeyError:
            raise AttributeError(name) from None

    def set(self, value):
        _bump()
        if name == "optimize_attr" and isinstance(value, dict) and not isinstance(value, _OptimizeAttr):
            value = _OptimizeAttr(value)
        self.__dict__[key] = value

    return property(get, set)


_tensor_grad = Tensor.grad.fget


class Parameter(Tensor):
    """A leaf tensor with a unique name and training attributes.

    isinstance(p, oar.Tensor) holds; every tensor method and op accepts it. `trainable` is the inverse of
    `stop_gradient`. Optimizers read `optimize_attr["learning_rate"]` (a multiplier), `regularizer` and
    `need_clip`.
    """

    optimize_attr = _tracked("optimize_attr")
    regularizer = _tracked("regularizer")
    need_clip = _tracked("need_clip")

    def __init__(self, value, name=None, trainable=True, optimize_attr=None, regularizer=None,
                 do_model_average=True, need_clip=True):
        if not isinstance(value, Tensor):
            raise TypeError("Parameter: value must be a Tensor, got {}".format(type(value).__name__))
        super().__init__(value.detach())
        self.name = name if name is not None else unique_name.generate("_param_base")
        self.persistable = True
        self.trainable = trainable
        self.optimize_attr = dict(optimize_attr) if optimize_attr else {"learning_rate": 1.0}
        self.regularizer = regularizer
        self.do_model_average = do_model_average
        self.need_clip = need_clip
        self.is_distributed = False
        from ..static import program as _prog
        if _prog._in_static_mode():  # static mode: the current main program uses it under its name
            _prog.default_main_program()._bind_parameter(self)

    @property
    def trainable(self):
        return not self.stop_gradient

    @trainable.setter
    def trainable(self, value):
        if not isinstance(value, bool):
            raise TypeError("Parameter.trainable must be a bool, got {!r}".format(value))
        self.stop_gradient = not value

    @property
    def grad(self):
        """The gradient: a dense Tensor, or the SelectedRows an Embedding(sparse=True) gave (plus any dense
        part, then as one dense Tensor), or None."""
        dense = _tensor_grad(self)
        sr = _selected_rows.sparse_grad(self)
        if sr is None:
            return dense
        return sr if dense is None else dense + sr.to_dense()

    def clear_gradient(self, set_to_zero=True):
        _selected_rows.clear_sparse_grad(self)
        Tensor.clear_gradient(self, set_to_zero)

    def clear_grad(self):
        self.clear_gradient(True)

    def __repr__(self):
        return "Parameter containing:\n" + Tensor.__repr__(self)

    __str__ = __repr__

    def __deepcopy__(self, memo):
        # As Paddle: the copy is a new parameter with a new unique name.
        new = Parameter(self.detach().clone(), name=unique_name.generate(self.name + "_deepcopy"))
        memo[id(self)] = new
        for k, v in self.__dict__.items():
            if k not in ("_name", "_sparse_grad"):
                new.__dict__[k] = copy.deepcopy(v, memo)
        new.stop_gradient = self.stop_gradient
        return new

    def __reduce__(self):
        raise TypeError("a Parameter cannot be pickled directly; save layer.state_dict() with oar.save")


def _resolve_initializer(attr, is_bias, default_initializer):
    from ..nn import initializer as init
    if attr.initializer is not None:
        return attr.initializer
    glob = init._global_initializer(is_bias)
    if glob is not None:
        return glob
    if default_initializer is not None:
        return default_initializer
    return init.Constant(0.0) if is_bias else init.XavierUniform()


def create_parameter(shape, dtype, name=None, attr=None, is_bias=False, default_initializer=None):
    """A new Parameter of `shape` and `dtype`, initialised by attr.initializer, else the global
    initializer (set_global_initializer), else `default_initializer`, else Constant(0) for biases and
    XavierUniform for weights (Paddle's defaults)."""
    if not isinstance(shape, (list, tuple)) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise ValueError("create_parameter: shape must be a list of non-negative ints, got {!r}".format(shape))
    attr = ParamAttr._to_attr(attr)
    if attr is False:
        raise ValueError("create_parameter: attr=False means no parameter; do not call create_parameter")
    dtype = _C.to_dtype(dtype if dtype is not None else _C.get_default_dtype())
    if name is None:
        name = attr.name if attr.name is not None else unique_name.generate("create_parameter_0." + ("b" if is_bias else "w"))
    from ..tensor.creation import zeros
    # Parameters are made eagerly, also while a program is being built (static mode, to_static): the
    # initial value is computed now and programs capture the tensor (docs/static.md).
    builder = _C._set_builder(None)
    try:
        p = Parameter(zeros(list(shape), dtype=dtype), name=name, trainable=attr.trainable,
                      optimize_attr={"learning_rate": attr.learning_rate}, regularizer=attr.regularizer,
                      do_model_average=attr.do_model_average, need_clip=attr.need_clip)
        _resolve_initializer(attr, is_bias, default_initializer)(p)
    finally:
        _C._set_builder(builder)
    if builder is not None:
        # Inside program_guard, as in Paddle, the parameter is a variable of the main program at once
        # (fetchable before any op reads it).
        from ..static import program as _prog
        main = _prog.default_main_program()
        if _prog._in_static_mode() and builder is main._builder:
            main._bind_parameter(p)
    return p
