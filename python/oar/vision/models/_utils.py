"""Helpers shared by the model families: channel rounding, the Conv-Norm-Activation block and the
`pretrained=True` error (oar has no network access, so weights are never downloaded)."""
from ... import nn

__all__ = []


def _make_divisible(v, divisor=8, min_value=None):
    """Rounds a channel count to a multiple of `divisor`, never going more than 10% below `v`
    (the MobileNet rule; Paddle's formula, so scaled models get Paddle's channel counts)."""
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class ConvNormActivation(nn.Sequential):
    """Conv2D, then an optional norm layer, then an optional activation, as one Sequential (Paddle's
    paddle.vision.ops.ConvNormActivation: sublayers "0", "1", "2", so state_dict keys match).
    norm_layer / activation_layer are classes (or callables) and default to BatchNorm2D / ReLU;
    pass None explicitly via `norm_layer=None` to leave a part out. The conv has a bias only when
    there is no norm layer, unless `bias` says otherwise."""

    _DEFAULT = object()

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, padding=None, groups=1,
                 norm_layer=_DEFAULT, activation_layer=_DEFAULT, dilation=1, bias=None):
        # Defaults are resolved here (not in the signature) so this module imports before the
        # concrete layer classes exist.
        if norm_layer is ConvNormActivation._DEFAULT:
            norm_layer = nn.BatchNorm2D
        if activation_layer is ConvNormActivation._DEFAULT:
            activation_layer = nn.ReLU
        if padding is None:
            padding = (kernel_size - 1) // 2 * dilation
        if bias is None:
            bias = norm_layer is None
        layers = [nn.Conv2D(in_channels, out_channels, kernel_size, stride, padding, dilation=dilation,
                            groups=groups, bias_attr=None if bias else False)]
        if norm_layer is not None:
            layers.append(norm_layer(out_channels))
        if activation_layer is not None:
            layers.append(activation_layer())
        super().__init__(*layers)


def _no_pretrained(arch):
    """Raised by every model constructor given pretrained=True."""
    raise RuntimeError(
        "{0}(pretrained=True): oar cannot download pretrained weights (no network access). Build the "
        "model with pretrained=False and load a local weights file instead, e.g. a Paddle .pdparams "
        "file: model = {0}(); model.set_state_dict(oar.load('/path/to/{0}.pdparams'))".format(arch))
