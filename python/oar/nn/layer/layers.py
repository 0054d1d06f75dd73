"""oar.nn.Layer: the base class of every layer (Paddle's paddle.nn.Layer).

A layer owns parameters (Parameter objects), buffers (tensors saved with the model or not) and
sublayers, registered by attribute assignment or explicitly. Structured names ("fc.weight") key
state_dict; parameter names ("linear_0.w_0") are unique across the process and key optimizer state.
"""
import collections
import copy
import functools
import re
import warnings

import numpy as np

from ... import _C
from ..._C import Tensor
from ...autograd import no_grad
from ...framework import selected_rows as _selected_rows
from ...framework import unique_name
from ...framework.param_attr import ParamAttr
from ...framework.parameter import Parameter, create_parameter as _create_parameter

__all__ = ["Layer"]


def _camel_to_snake(name):
    # Paddle's rule (so default names match): "BatchNorm2D" -> "batch_norm2d", "Conv2D" -> "conv2d".
    s1 = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", s1).lower()


class HookRemoveHelper:
    """Returned by register_forward_*_hook; .remove() unregisters the hook."""
    _next_id = 0

    def __init__(self, hooks):
        self._hooks_ref = hooks
        self._hook_id = HookRemoveHelper._next_id
        HookRemoveHelper._next_id += 1

    def remove(self):
        self._hooks_ref.pop(self._hook_id, None)


def _to_tensor_value(value, like, key):
    """A state-dict value (Tensor or numpy) as a Tensor of `like`'s dtype, shape-checked."""
    if isinstance(value, Tensor):
        arr_shape = list(value.shape)
    else:
        value = np.asarray(value)
        arr_shape = list(value.shape)
    if arr_shape != list(like.shape):
        raise ValueError("set_state_dict: '{}' has shape {} in the state dict but {} in the layer".format(
            key, arr_shape, list(like.shape)))
    return value



def _cast_in_place(t, dtype):
    """Replaces a parameter's or buffer's data with its cast to `dtype`, keeping the tensor object (the
    optimizer's reference), its stop_gradient, and no gradient of the old dtype."""
    with no_grad():
        stop = t.stop_gradient
        t._replace_with(t.astype(dtype).detach())
        t.stop_gradient = stop
        t.clear_gradient(False)

class Layer:
    """Base class of layers: subclass it, create parameters and sublayers in __init__, define forward."""

    def __init_subclass__(cls, **kwargs):
        # Layers are constructed eagerly even while a program is being built (static mode, to_static):
        # parameters and buffers get their initial values now and programs capture them.
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is None or getattr(init, "_oar_eager_init", False):
            return

        @functools.wraps(init)
        def eager_init(self, *args, **kw):
            prev = _C._set_builder(None)
            try:
                init(self, *args, **kw)
            finally:
                _C._set_builder(prev)

        eager_init._oar_eager_init = True
        cls.__init__ = eager_init

    def __init__(self, name_scope=None, dtype="float32"):
        self.training = True
        if name_scope is None:
            name_scope = _camel_to_snake(type(self).__name__)
        self._full_name = unique_name.generate(name_scope)
        self._dtype = dtype
        self._parameters = collections.OrderedDict()
        self._buffers = collections.OrderedDict()
        self._non_persistable_buffer_names_set = set()
        self._sub_layers = collections.OrderedDict()
        self._forward_pre_hooks = collections.OrderedDict()
        self._forward_post_hooks = collections.OrderedDict()

    # ---- identity ----
    def full_name(self):
        """The layer's unique name, e.g. "linear_0"; its parameters are named "<full_name>.w_<n>"."""
        return self._full_name

    # ---- mode ----
    def train(self):
        """Training mode for this layer and its sublayers (Dropout drops, BatchNorm uses batch statistics)."""
        for layer in self.sublayers(include_self=True):
            layer.training = True
        return self

    def eval(self):
        """Inference mode for this layer and its sublayers."""
        for layer in self.sublayers(include_self=True):
            layer.training = False
        return self

    # ---- forward and hooks ----
    def forward(self, *inputs, **kwargs):
        raise NotImplementedError("'{}' does not define forward()".format(type(self).__name__))

    def register_forward_pre_hook(self, hook):
        """hook(layer, inputs) runs before forward; it may return new inputs (a tuple, or one value)."""
        helper = HookRemoveHelper(self._forward_pre_hooks)
        self._forward_pre_hooks[helper._hook_id] = hook
        return helper

    def register_forward_post_hook(self, hook):
        """hook(layer, inputs, outputs) runs after forward; it may return replacement outputs."""
        helper = HookRemoveHelper(self._forward_post_hooks)
        self._forward_post_hooks[helper._hook_id] = hook
        return helper

    def __call__(self, *inputs, **kwargs):
        if not (self._forward_pre_hooks or self._forward_post_hooks):  # the common case, without the loops
            return self.forward(*inputs, **kwargs)
        for hook in list(self._forward_pre_hooks.values()):
            result = hook(self, inputs)
            if result is not None:
                inputs = result if isinstance(result, tuple) else (result,)
        outputs = self.forward(*inputs, **kwargs)
        for hook in list(self._forward_post_hooks.values()):
            result = hook(self, inputs, outputs)
            if result is not None:
                outputs = result
        return outputs

    # ---- creating and registering ----
    def create_parameter(self, shape, attr=None, dtype=None, is_bias=False, default_initializer=None):
        """A new Parameter named "<full_name>.w_<n>" (or .b_<n> for biases) unless attr names it; None
        when attr is False."""
        attr = ParamAttr._to_attr(attr)
        if attr is False:
            return None
        name = attr.name
        if name is None:
            name = unique_name.generate(self._full_name + (".b" if is_bias else ".w"))
        dtype = dtype if dtype is not None else self._dtype
        return _create_parameter(list(shape), dtype, name=name, attr=attr, is_bias=is_bias,
                                 default_initializer=default_initializer)

    def create_variable(self, name=None, persistable=None, dtype=None):
        """An empty tensor named "<full_name>.<name>" (Paddle compatibility; rarely needed in dygraph)."""
        from ...tensor.creation import zeros
        t = zeros([0], dtype=dtype if dtype is not None else self._dtype)
        t.name = name if name is not None else unique_name.generate(self._full_name + ".var")
        t.persistable = bool(persistable)
        return t

    create_tensor = create_variable

    def add_parameter(self, name, parameter):
        """Registers `parameter` (a Parameter, or None) under `name`."""
        self._check_attr_name(name, "add_parameter")
        if name in self.__dict__ and name not in self._parameters:
            raise KeyError("add_parameter: attribute '{}' already exists".format(name))
        if parameter is not None and not isinstance(parameter, Parameter):
            raise TypeError("add_parameter: '{}' must be a Parameter (see create_parameter), got {}".format(
                name, type(parameter).__name__))
        self._parameters[name] = parameter
        return parameter

    def add_sublayer(self, name, sublayer):
        """Registers `sublayer` (a Layer, or None) under `name`; returns it."""
        if not isinstance(name, str):
            raise TypeError("add_sublayer: name must be a str, got {}".format(type(name).__name__))
        if sublayer is not None and not isinstance(sublayer, Layer):
            raise TypeError("add_sublayer: '{}' must be a Layer, got {}".format(name, type(sublayer).__name__))
        self._sub_layers[name] = sublayer
        return sublayer

    def register_buffer(self, name, tensor, persistable=True):
        """Registers a tensor that is not trained but belongs to the layer (BatchNorm's running mean).
        Persistable buffers are in state_dict; others are not."""
        self._check_attr_name(name, "register_buffer")
        if "_buffers" not in self.__dict__:
            raise ValueError("register_buffer: call super().__init__() first")
        if name in self.__dict__ and name not in self._buffers:
            raise KeyError("register_buffer: attribute '{}' already exists".format(name))
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError("register_buffer: '{}' must be a Tensor or None, got {}".format(
                name, type(tensor).__name__))
        if isinstance(tensor, Tensor) and tensor.__dict__.get("_name") is None:
            tensor.name = unique_name.generate("_buffer")
        self._buffers[name] = tensor
        if persistable:
            self._non_persistable_buffer_names_set.discard(name)
        else:
            self._non_persistable_buffer_names_set.add(name)
        return tensor

    @staticmethod
    def _check_attr_name(name, what):
        if not isinstance(name, str):
            raise TypeError("{}: name must be a str, got {}".format(what, type(name).__name__))
        if name == "" or "." in name:
            raise KeyError("{}: name must be non-empty and contain no '.', got {!r}".format(what, name))

    # ---- attribute routing ----
    def __setattr__(self, name, value):
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise ValueError("cannot assign parameter '{}' before Layer.__init__() is called".format(name))
            self._remove_from(name, d, d.get("_sub_layers"), d.get("_buffers"))
            params[name] = value
            return
        if isinstance(value, Layer):
            layers = d.get("_sub_layers")
            if layers is None:
                raise ValueError("cannot assign sublayer '{}' before Layer.__init__() is called".format(name))
            self._remove_from(name, d, params, d.get("_buffers"))
            layers[name] = value
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError("cannot assign {} to parameter '{}' (expected a Parameter or None)".format(
                    type(value).__name__, name))
            params[name] = None
            return
        layers = d.get("_sub_layers")
        if layers is not None and name in layers:
            if value is not None:
                raise TypeError("cannot assign {} to sublayer '{}' (expected a Layer or None)".format(
                    type(value).__name__, name))
            layers[name] = None
            return
        buffers = d.get("_buffers")
        if buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError("cannot assign {} to buffer '{}' (expected a Tensor or None)".format(
                    type(value).__name__, name))
            if isinstance(value, Tensor) and value.__dict__.get("_name") is None:
                value.name = unique_name.generate("_buffer")
            buffers[name] = value
            return
        object.__setattr__(self, name, value)

    @staticmethod
    def _remove_from(name, d, *dicts):
        d.pop(name, None)
        for dd in dicts:
            if dd is not None:
                dd.pop(name, None)

    def __getattr__(self, name):
        # Only called when normal lookup fails: parameters, sublayers and buffers live in their dicts.
        d = self.__dict__
        for key in ("_parameters", "_sub_layers", "_buffers"):
            table = d.get(key)
            if table is not None and name in table:
                return table[name]
        raise AttributeError("'{}' object has no attribute '{}'".format(type(self).__name__, name))

    def __delattr__(self, name):
        for key in ("_parameters", "_sub_layers", "_buffers"):
            table = self.__dict__.get(key)
            if table is not None and name in table:
                del table[name]
                self._non_persistable_buffer_names_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(object.__dir__(self)) | set(self._parameters) | set(self._sub_layers) | set(self._buffers))

    # ---- traversal ----
    def named_sublayers(self, prefix="", include_self=False, layers_set=None):
        """(structured name, layer) for every sublayer, depth first, each layer once."""
        if layers_set is None:
            layers_set = set()
        if include_self and id(self) not in layers_set:
            layers_set.add(id(self))
            yield prefix, self
        for key, layer in self._sub_layers.items():
            if layer is None or id(layer) in layers_set:
                continue
            p = prefix + ("." if prefix else "") + key
            yield from layer.named_sublayers(prefix=p, include_self=True, layers_set=layers_set)

    def sublayers(self, include_self=False):
        return [layer for _, layer in self.named_sublayers(include_self=include_self)]

    def named_children(self):
        seen = set()
        for name, layer in self._sub_layers.items():
            if layer is not None and id(layer) not in seen:
                seen.add(id(layer))
                yield name, layer

    def children(self):
        for _, layer in self.named_children():
            yield layer

    def named_parameters(self, prefix="", include_sublayers=True):
        """(structured name, parameter) pairs: own parameters first, then sublayers', each once."""
        seen = set()
        layers = self.named_sublayers(prefix=prefix, include_self=True) if include_sublayers else [(prefix, self)]
        for layer_prefix, layer in layers:
            for key, p in layer._parameters.items():
                if p is None or id(p) in seen:
                    continue
                seen.add(id(p))
                yield layer_prefix + ("." if layer_prefix else "") + key, p

    def parameters(self, include_sublayers=True):
        """The list of parameters (each once)."""
        return [p for _, p in self.named_parameters(include_sublayers=include_sublayers)]

    def named_buffers(self, prefix="", include_sublayers=True):
        seen = set()
        layers = self.named_sublayers(prefix=prefix, include_self=True) if include_sublayers else [(prefix, self)]
        for layer_prefix, layer in layers:
            for key, b in layer._buffers.items():
                if b is None or id(b) in seen:
                    continue
                seen.add(id(b))
                yield layer_prefix + ("." if layer_prefix else "") + key, b

    def buffers(self, include_sublayers=True):
        return [b for _, b in self.named_buffers(include_sublayers=include_sublayers)]

    def apply(self, fn):
        """Calls fn on every sublayer (children first) and then on self; returns self."""
        for layer in self.children():
            layer.apply(fn)
        fn(self)
        return self

    # ---- gradients ----
    def clear_gradients(self, set_to_zero=True):
        """Clears the .grad of every trainable parameter (zeroed when set_to_zero, else dropped)."""
        _C._clear_grads(self.parameters(), bool(set_to_zero))  # one call; skips stop_gradient ones
        if _selected_rows._holders:
            for p in self.parameters():
                _selected_rows.clear_sparse_grad(p)

    # ---- state ----
    def _state_items(self, include_sublayers, prefix):
        layers = self.named_sublayers(prefix=prefix, include_self=True) if include_sublayers else [(prefix, self)]
        for layer_prefix, layer in layers:
            dot = layer_prefix + ("." if layer_prefix else "")
            for key, p in layer._parameters.items():
                if p is not None:
                    yield dot + key, p
            for key, b in layer._buffers.items():
                if b is not None and key not in layer._non_persistable_buffer_names_set:
                    yield dot + key, b

    def state_dict(self, destination=None, include_sublayers=True, structured_name_prefix="", use_hook=True,
                   keep_vars=True):
        """An OrderedDict from structured names ("fc.weight") to the layer's parameters and persistable
        buffers (the tensors themselves, not copies)."""
        dest = collections.OrderedDict() if destination is None else destination
        save_dtype = getattr(self, "_amp_save_dtype", None) if use_hook else None  # oar.amp.decorate(save_dtype=)
        for key, t in self._state_items(include_sublayers, structured_name_prefix):
            if save_dtype is not None and t.dtype.is_floating_point and t.dtype.name != save_dtype:
                t = t.astype(save_dtype)
            dest[key] = t
        return dest

    def set_state_dict(self, state_dict, use_structured_name=True):
        """Copies values (Tensors or numpy arrays) into the layer's parameters and buffers, matching by
        structured name (or by parameter name when use_structured_name=False). Shapes must agree; dtypes
        are converted. Returns (missing_keys, unexpected_keys) and warns about them."""
        if not isinstance(state_dict, dict):
            raise TypeError("set_state_dict: expected a dict, got {}".format(type(state_dict).__name__))
        missing, matched = [], set()
        with no_grad():
            for key, target in self._state_items(True, ""):
                lookup = key if use_structured_name else target.name
                if lookup not in state_dict:
                    missing.append(key)
                    continue
                matched.add(lookup)
                value = _to_tensor_value(state_dict[lookup], target, key)
                if not isinstance(value, Tensor):
                    from ...tensor.creation import to_tensor
                    value = to_tensor(value, place=target.place)
                if value.dtype != target.dtype:
                    value = value.astype(target.dtype)
                if value.place != target.place:
                    value = value._copy_to(target.place)
                target.set_value(value)
        unexpected = [k for k in state_dict if k not in matched and k != "StructuredToParameterName@@"]
        if missing:
            warnings.warn("set_state_dict: {} not found in the state dict".format(", ".join(missing)))
        if unexpected:
            warnings.warn("set_state_dict: {} in the state dict do not match any parameter or buffer".format(
                ", ".join(str(k) for k in unexpected)))
        return missing, unexpected

    set_dict = set_state_dict
    load_dict = set_state_dict

    # ---- device and dtype ----
    def _apply_to_tensors(self, fn, floating_only):
        with no_grad():
            for t in self.parameters() + self.buffers():
                if floating_only and not t.dtype.is_floating_point:
                    continue
                new = fn(t)
                if new is not t:
                    stop = t.stop_gradient
                    t._replace_with(new.detach())
                    t.stop_gradient = stop
                    t.clear_gradient(False)
        return self

    def to(self, device=None, dtype=None, blocking=None):
        """Moves and/or casts parameters and buffers in place (the same Parameter objects)."""
        if device is None and dtype is None:
            return self
        if device is not None:
            place = _C._to_place(device)
            self._apply_to_tensors(lambda t: t if t.place == place else t._to_place(place), False)
        if dtype is not None:
            dt = _C.to_dtype(dtype)
            self._apply_to_tensors(lambda t: t if t.dtype == dt else t.astype(dt), True)
            for layer in self.sublayers(include_self=True):
                layer._dtype = dt.name
        return self

    def astype(self, dtype=None):
        """Casts floating-point parameters and buffers to `dtype`."""
        return self.to(dtype=dtype)

    def float(self, excluded_layers=None):
        return self._cast_except(_C.float32, excluded_layers)

    def double(self, excluded_layers=None):
        return self._cast_except(_C.float64, excluded_layers)

    def float16(self, excluded_layers=None):
        return self._cast_except(_C.float16, excluded_layers)

    def bfloat16(self, excluded_layers=None):
        return self._cast_except(_C.bfloat16, excluded_layers)

    def _cast_except(self, dtype, excluded_layers):
        excluded = excluded_layers or []
        if not isinstance(excluded, (list, tuple)):
            excluded = [excluded]
        for layer in self.sublayers(include_self=True):
            if any(isinstance(layer, e) if isinstance(e, type) else layer is e for e in excluded):
                continue
            for t in list(layer._parameters.values()) + list(layer._buffers.values()):
                if t is not None and t.dtype.is_floating_point and t.dtype != dtype:
                    _cast_in_place(t, dtype)
            layer._dtype = dtype.name
        return self

    # ---- printing ----
    def extra_repr(self):
        """Extra text inside this layer's repr parentheses (subclasses describe their configuration)."""
        return ""

    def __repr__(self):
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        for name, layer in self._sub_layers.items():
            text = repr(layer).replace("\n", "\n  ")
            lines.append("({}): {}".format(name, text))
        main = type(self).__name__ + "("
        if lines:
            if len(lines) == 1 and not self._sub_layers:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"

    # ---- copying ----
    def __deepcopy__(self, memo):
        cls = type(self)
        new = cls.__new__(cls)
        memo[id(self)] = new
        for k, v in self.__dict__.items():
            object.__setattr__(new, k, copy.deepcopy(v, memo))
        new.__dict__["_full_name"] = unique_name.generate(self._full_name + "_deepcopy")
        return new
