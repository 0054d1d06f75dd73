"""oar.summary: a table of a network's layers with input/output shapes and parameter counts (Paddle's
paddle.summary). Shapes come from one forward pass on random inputs, recorded by forward post hooks."""
import collections
import numbers

import numpy as np

from .._C import Tensor
from ..autograd import no_grad

__all__ = ["summary"]


def _is_shape(x):
    return isinstance(x, (list, tuple)) and all(isinstance(i, numbers.Number) or i is None for i in x)


def _check_shape(shape):
    out, unknown = [], 0
    for item in shape:
        if item is None or item == -1:
            unknown += 1
            if unknown > 1:
                raise ValueError("Option input_size only the dim of batch_size can be None or -1.")
            item = 1
        elif item <= 0:
            raise ValueError("Expected element in input size greater than zero, but got {}".format(item))
        out.append(int(item))
    return tuple(out)


def _normalize_input_size(input_size):
    """input_size as a tuple (one input) or a list of tuples/nested lists, batch dims -1/None -> 1."""
    if hasattr(input_size, "shape") and not isinstance(input_size, (list, tuple)):
        input_size = tuple(input_size.shape)  # an InputSpec
    if isinstance(input_size, int):
        input_size = (input_size,)
    if isinstance(input_size, list) and not _is_shape(input_size):
        items = []
        for item in input_size:
            if isinstance(item, int):
                item = (item,)
            elif hasattr(item, "shape") and not isinstance(item, (list, tuple)):
                item = tuple(item.shape)
            if not isinstance(item, (list, tuple)):
                raise TypeError("summary: each item of input_size must be a tuple or an InputSpec, got {}".format(
                    type(item).__name__))
            items.append(item)
        input_size = items

    def check(x):
        if _is_shape(x):
            return _check_shape(x)
        if isinstance(x, (list, tuple)):
            return [check(i) for i in x]
        raise TypeError("summary: cannot read a shape from {!r}".format(x))
    return check(input_size)


def summary(net, input_size=None, dtypes=None, input=None):
    """Prints the layer table of `net` for inputs of shape input_size (a tuple, an InputSpec, or a list
    of them for several inputs; the batch dimension may be None or -1) or for the given `input`
    tensor(s); returns {'total_params': n, 'trainable_params': m}."""
    from ..nn import Layer
    if not isinstance(net, Layer):
        raise TypeError("summary: net must be an oar.nn.Layer, got {}".format(type(net).__name__))
    if input_size is None and input is None:
        raise ValueError("input_size and input cannot be None at the same time")
    if input_size is None:
        if isinstance(input, Tensor):
            input_size = tuple(input.shape)
        elif isinstance(input, (list, tuple)):
            input_size = [tuple(x.shape) for x in input]
        elif isinstance(input, dict):
            input_size = [tuple(x.shape) for x in input.values()]
        else:
            raise ValueError("Input is not tensor, list, tuple and dict, unable to determine input_size, "
                             "please input input_size.")
    input_size = _normalize_input_size(input_size)
    was_training = net.training
    net.eval()
    try:
        text, info = summary_string(net, input_size, dtypes, input)
    finally:
        if was_training:
            net.train()
    print(text)
    return info


def _shape_of(x):
    """A tensor's shape as a list; lists/tuples of tensors give lists of shapes (so a layer's inputs,
    a tuple, show as [[1, 1, 28, 28]] as in Paddle)."""
    if isinstance(x, (list, tuple)):
        return [_shape_of(i) for i in x]
    if hasattr(x, "shape"):
        return list(x.shape)
    return []


def _is_container(layer):
    from ..nn import LayerList, Sequential
    return isinstance(layer, (Sequential, LayerList))


@no_grad()
def summary_string(model, input_size=None, dtypes=None, input=None):
    """(table text, {'total_params', 'trainable_params'}) for `model` on inputs of input_size."""
    from ..tensor.random import rand

    def build_dtypes(size, dtype):
        if _is_shape(size):
            return [dtype or "float32"]
        return [build_dtypes(i, dtype) for i in size]

    if not isinstance(dtypes, (list, tuple)):
        dtypes = build_dtypes(input_size, dtypes)

    depth = len(model.sublayers())
    rows = collections.OrderedDict()
    hooks = []

    def hook(layer, inputs, outputs):
        class_name = type(layer).__name__
        try:
            idx = int(layer.full_name().split("_")[-1])
        except ValueError:
            idx = len(rows)
        key = "{}-{}".format(class_name, idx + 1)
        info = collections.OrderedDict()
        info["input_shape"] = _shape_of(inputs)
        info["output_shape"] = _shape_of(outputs)
        n_params, n_trainable, trainable = 0, 0, False
        for p in layer._parameters.values():
            if p is None:
                continue
            n = int(np.prod(p.shape))
            n_params += n
            if getattr(p, "trainable", not p.stop_gradient) and not p.stop_gradient:
                n_trainable += n
                trainable = True
        info["nb_params"] = n_params
        info["trainable_params"] = n_trainable
        info["trainable"] = trainable
        rows[key] = info

    def register(layer):
        # Containers and the model itself only forward to sublayers; a model without sublayers counts.
        if not _is_container(layer) and (layer is not model or depth < 1):
            hooks.append(layer.register_forward_post_hook(hook))

    size_list = [input_size] if isinstance(input_size, tuple) else input_size

    def build_input(size, dtype):
        if _is_shape(size):
            d = dtype[0] if isinstance(dtype, (list, tuple)) else dtype
            return rand(list(size)).astype(d)
        return [build_input(s, dt) for s, dt in zip(size, dtype)]

    model.apply(register)
    try:
        if input is not None:
            model(input)
        else:
            model(*build_input(size_list, dtypes))
    finally:
        for h in hooks:
            h.remove()

    widths = {"layer": 15, "input": 20, "output": 20, "params": 15}
    for key, info in rows.items():
        widths["layer"] = max(widths["layer"], len(key))
        widths["input"] = max(widths["input"], len(str(info["input_shape"])))
        widths["output"] = max(widths["output"], len(str(info["output_shape"])))
        widths["params"] = max(widths["params"], len(str(info["nb_params"])))
    table_width = max(75, sum(widths.values()) + 5)

    def line(a, b, c, d):
        return "{:^{}} {:^{}} {:^{}} {:^{}}".format(a, widths["layer"], b, widths["input"], c, widths["output"], d,
                                                   widths["params"])

    out = ["-" * table_width, line("Layer (type)", "Input Shape", "Output Shape", "Param #"), "=" * table_width]
    total_params = trainable_params = 0
    total_output = 0
    for key, info in rows.items():
        out.append(line(key, str(info["input_shape"]), str(info["output_shape"]),
                        "{:,}".format(info["nb_params"])))
        total_params += info["nb_params"]
        if info["trainable"]:
            trainable_params += info["trainable_params"]
        shapes = info["output_shape"]
        if shapes and isinstance(shapes[0], list):
            total_output += sum(int(np.prod(s)) for s in shapes if s and not isinstance(s[0], list))
        elif shapes:
            total_output += int(np.prod(shapes))

    def input_mb(size):
        if _is_shape(size):
            return abs(float(np.prod(size)) * 4.0 / 1024 ** 2)
        return sum(input_mb(s) for s in size)

    total_input_size = input_mb(size_list)
    total_output_size = abs(2.0 * total_output * 4.0 / 1024 ** 2)  # x2 for gradients
    total_params_size = abs(total_params * 4.0 / 1024 ** 2)
    total_size = total_params_size + total_output_size + total_input_size
    out += ["=" * table_width,
            "Total params: {:,}".format(total_params),
            "Trainable params: {:,}".format(trainable_params),
            "Non-trainable params: {:,}".format(total_params - trainable_params),
            "-" * table_width,
            "Input size (MB): {:0.2f}".format(total_input_size),
            "Forward/backward pass size (MB): {:0.2f}".format(total_output_size),
            "Params size (MB): {:0.2f}".format(total_params_size),
            "Estimated Total Size (MB): {:0.2f}".format(total_size),
            "-" * table_width]
    return "\n".join(out) + "\n", {"total_params": int(total_params), "trainable_params": int(trainable_params)}
