"""oar.flops: counts a network's FLOPs on one forward pass (Paddle's paddle.flops for dygraph Layers).

Each leaf layer's count comes from a rule chosen by its type (Paddle's rules; one multiply-add = 1):
  Conv*D / Conv*DTranspose   out.numel() * (in_channels / groups * prod(kernel) + has_bias)
  Linear                     out.numel() * in_features
  BatchNorm*D (inference)    2 * in.numel()
  AvgPool*D                  out.numel()
  AdaptiveAvgPool*D          out.numel() * (prod(in_spatial // out_spatial) + 1)
  LeakyReLU                  in.numel()
  ReLU, ReLU6, Dropout       0
Other layers count 0 (a message names them) unless custom_ops maps their type to a function
fn(layer, inputs, output) that adds to layer.total_ops.
"""
import numpy as np

from ..autograd import no_grad

__all__ = ["flops"]


def _numel(t):
    return int(np.prod(t.shape)) if len(t.shape) else 1


def count_convNd(m, x, y):
    x = x[0]
    kernel_ops = int(np.prod(m.weight.shape[2:]))
    bias_ops = 1 if getattr(m, "bias", None) is not None else 0
    groups = getattr(m, "_groups", getattr(m, "groups", 1)) or 1
    m.total_ops += abs(int(_numel(y) * (x.shape[1] / groups * kernel_ops + bias_ops)))


def count_leaky_relu(m, x, y):
    m.total_ops += _numel(x[0])


def count_bn(m, x, y):
    # Inference-mode batch norm: one scale and one shift per element.
    m.total_ops += 2 * _numel(x[0])


def count_linear(m, x, y):
    m.total_ops += abs(int(m.weight.shape[0] * _numel(y)))


def count_avgpool(m, x, y):
    m.total_ops += _numel(y)


def count_adap_avgpool(m, x, y):
    kernel = np.array(x[0].shape[2:]) // np.array(y.shape[2:])
    m.total_ops += abs(int((int(np.prod(kernel)) + 1) * _numel(y)))


def count_zero_ops(m, x, y):
    m.total_ops += 0


_RULES = {
    "Conv1D": count_convNd, "Conv2D": count_convNd, "Conv3D": count_convNd,
    "Conv1DTranspose": count_convNd, "Conv2DTranspose": count_convNd, "Conv3DTranspose": count_convNd,
    "BatchNorm": count_bn, "BatchNorm1D": count_bn, "BatchNorm2D": count_bn, "BatchNorm3D": count_bn,
    "ReLU": count_zero_ops, "ReLU6": count_zero_ops, "LeakyReLU": count_leaky_relu,
    "Linear": count_linear, "Dropout": count_zero_ops,
    "AvgPool1D": count_avgpool, "AvgPool2D": count_avgpool, "AvgPool3D": count_avgpool,
    "AdaptiveAvgPool1D": count_adap_avgpool, "AdaptiveAvgPool2D": count_adap_avgpool,
    "AdaptiveAvgPool3D": count_adap_avgpool,
}


def _register_hooks():
    """{layer class: rule} for the oar.nn classes that exist (looked up lazily)."""
    from .. import nn
    out = {}
    for name, fn in _RULES.items():
        cls = getattr(nn, name, None)
        if isinstance(cls, type):
            out[cls] = fn
    return out


def flops(net, input_size, custom_ops=None, print_detail=False):
    """Total FLOPs of one forward pass of `net` on a random input of shape input_size (e.g.
    [1, 1, 28, 28]). custom_ops: {LayerClass: fn(layer, inputs, output)} for extra layer types.
    print_detail: also print a per-layer table. Prints the totals and returns the FLOPs (int)."""
    from ..nn import Layer
    if not isinstance(net, Layer):
        raise TypeError("flops: net must be an oar.nn.Layer, got {}".format(type(net).__name__))
    if not isinstance(input_size, (list, tuple)) or not all(isinstance(i, int) and i > 0 for i in input_size):
        raise ValueError("flops: input_size must be a list of positive ints, got {!r}".format(input_size))
    from ..tensor.random import randn
    return dynamic_flops(net, randn(list(input_size)), custom_ops=custom_ops, print_detail=print_detail)


def _leaves(model):
    leaves = [(n, m) for n, m in model.named_sublayers() if not list(m.children())]
    if not leaves:
        leaves = [("", model)]  # a model without sublayers counts itself
    return leaves


def dynamic_flops(model, inputs, custom_ops=None, print_detail=False):
    custom_ops = custom_ops or {}
    rules = _register_hooks()
    handles = []
    seen_types = set()
    records = {}

    def io_hook(m, x, y):
        first = y[0] if isinstance(y, (list, tuple)) else y
        records[id(m)] = (list(x[0].shape) if x else [], list(first.shape),
                          sum(_numel(p) for p in m.parameters()))

    for _, m in _leaves(model):
        m.total_ops = 0
        m_type = type(m)
        fn = None
        if m_type in custom_ops:
            fn = custom_ops[m_type]
            if m_type not in seen_types:
                print("Customize Function has been applied to {}".format(m_type))
        elif m_type in rules:
            fn = rules[m_type]
            if m_type not in seen_types:
                print("{}'s flops has been counted".format(m_type))
        elif m_type not in seen_types:
            print("Cannot find suitable count function for {}. Treat it as zero FLOPs.".format(m_type))
        seen_types.add(m_type)
        if fn is not None:
            handles.append(m.register_forward_post_hook(fn))
        handles.append(m.register_forward_post_hook(io_hook))

    training = model.training
    model.eval()
    try:
        with no_grad():
            model(inputs)
    finally:
        for h in handles:
            h.remove()
        if training:
            model.train()

    total_ops = total_params = 0
    rows = []
    for _, m in _leaves(model):
        ops = int(m.__dict__.pop("total_ops", 0))
        if id(m) not in records:
            continue  # not called in this forward pass
        in_shape, out_shape, n_params = records[id(m)]
        total_ops += ops
        total_params += n_params
        rows.append([m.full_name(), in_shape, out_shape, n_params, ops])

    if print_detail:
        _print_table(["Layer Name", "Input Shape", "Output Shape", "Params", "Flops"], rows)
    print("Total Flops: {}     Total Params: {}".format(total_ops, total_params))
    return total_ops


def _print_table(header, rows):
    cells = [[str(c) for c in header]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) + 2 for i in range(len(header))]
    sep = "+" + "+".join("-" * w for w in widths) + "+"
    print(sep)
    print("|" + "|".join(c.center(w) for c, w in zip(cells[0], widths)) + "|")
    print(sep.replace("-", "="))
    for r in cells[1:]:
        print("|" + "|".join(c.center(w) for c, w in zip(r, widths)) + "|")
        print(sep)
