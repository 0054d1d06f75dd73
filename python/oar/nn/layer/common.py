"""Common layers (Paddle's paddle.nn.layer.common): Linear, Embedding, dropouts, padding, resizing,
Flatten/Unflatten, Bilinear, CosineSimilarity, Fold/Unfold, Identity."""
import numpy as np

from ... import _C
from ...autograd import no_grad
from .. import functional as F
from .layers import Layer

__all__ = ["Identity", "Linear", "Upsample", "UpsamplingNearest2D", "UpsamplingBilinear2D", "Bilinear", "Dropout",
           "Dropout2D", "Dropout3D", "AlphaDropout", "Pad1D", "Pad2D", "Pad3D", "ZeroPad1D", "ZeroPad2D", "ZeroPad3D",
           "ConstantPad1D", "ConstantPad2D", "ConstantPad3D", "ReflectionPad1D", "ReflectionPad2D", "ReflectionPad3D",
           "ReplicationPad1D", "ReplicationPad2D", "ReplicationPad3D", "CircularPad1D", "CircularPad2D",
           "CircularPad3D", "CosineSimilarity", "Embedding", "Unfold", "Fold", "Flatten", "Unflatten"]


def _default_dtype():
    return _C.get_default_dtype()


def _name_str(name, lead=", "):
    return "{}name={}".format(lead, name) if name else ""


class Identity(Layer):
    """Returns its input unchanged (any constructor arguments are ignored, as Paddle)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Layer):
    """y = x @ weight + bias with weight [in_features, out_features] (Paddle's layout), XavierUniform
    weight and zero bias by default."""

    def __init__(self, in_features, out_features, weight_attr=None, bias_attr=None, name=None):
        super().__init__()
        self._dtype = _default_dtype()
        self._in_features = in_features
        self._out_features = out_features
        self._weight_attr = weight_attr
        self._bias_attr = bias_attr
        self.weight = self.create_parameter(shape=[in_features, out_features], attr=weight_attr, dtype=self._dtype,
                                            is_bias=False)
        self.bias = self.create_parameter(shape=[out_features], attr=bias_attr, dtype=self._dtype, is_bias=True)
        self.name = name

    def forward(self, input):
        weight = self.weight  # (a parameter: looked up through Layer.__getattr__, once)
        if input.ndim < 1 or input.shape[-1] != weight.shape[0]:
            raise ValueError("Linear: the last dimension of the input must be in_features={}, got input shape {}"
                             .format(weight.shape[0], input.shape))
        return F.linear(input, weight, self.bias, name=self.name)

    def extra_repr(self):
        return "in_features={}, out_features={}, dtype={}{}".format(self.weight.shape[0], self.weight.shape[1],
                                                                    self._dtype, _name_str(self.name))


class Upsample(Layer):
    """Resizes the spatial dims (F.interpolate); data_format defaults by rank (NCW, NCHW, NCDHW)."""

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=False, align_mode=0,
                 data_format=None, name=None):
        super().__init__()
        self.size = size
        self.scale_factor = scale_factor
        self.mode = mode.lower()
        self.align_corners = align_corners
        self.align_mode = align_mode
        self.data_format = data_format
        self.name = name

    def forward(self, x):
        data_format = self.data_format
        if data_format is None:
            by_rank = {3: "NCW", 4: "NCHW", 5: "NCDHW"}
            if x.ndim not in by_rank:
                raise ValueError("Upsample: the input must be 3-D, 4-D or 5-D, got shape {}".format(x.shape))
            data_format = by_rank[x.ndim]
        return F.interpolate(x, size=self.size, scale_factor=self.scale_factor, mode=self.mode,
                             align_corners=self.align_corners, align_mode=self.align_mode, data_format=data_format,
                             name=self.name)

    def extra_repr(self):
        main = ("scale_factor={}".format(self.scale_factor) if self.scale_factor is not None
                else "size={}".format(self.size))
        return "{}, mode={}, align_corners={}, align_mode={}, data_format={}{}".format(
            main, self.mode, self.align_corners, self.align_mode, self.data_format, _name_str(self.name))


class _Upsampling2D(Layer):
    _mode, _align_corners = "nearest", False

    def __init__(self, size=None, scale_factor=None, data_format="NCHW", name=None):
        super().__init__()
        if isinstance(size, int):
            size = [size, size]
        self.size = size
        self.scale_factor = scale_factor
        self.data_format = data_format
        self.name = name

    def forward(self, x):
        return F.interpolate(x, size=self.size, scale_factor=self.scale_factor, mode=self._mode,
                             align_corners=self._align_corners, align_mode=0, data_format=self.data_format,
                             name=self.name)

    def extra_repr(self):
        main = ("scale_factor={}".format(self.scale_factor) if self.scale_factor is not None
                else "size={}".format(self.size))
        return "{}, data_format={}{}".format(main, self.data_format, _name_str(self.name))


class UpsamplingNearest2D(_Upsampling2D):
    """Nearest-neighbour 2-D upsampling."""
    _mode, _align_corners = "nearest", False


class UpsamplingBilinear2D(_Upsampling2D):
    """Bilinear 2-D upsampling with align_corners=True (as Paddle)."""
    _mode, _align_corners = "bilinear", True


class Bilinear(Layer):
    """out[:, k] = x1 @ weight[k] @ x2^T + bias[0, k]; weight [out, in1, in2], bias [1, out]."""

    def __init__(self, in1_features, in2_features, out_features, weight_attr=None, bias_attr=None, name=None):
        super().__init__()
        self._weight_attr = weight_attr
        self._bias_attr = bias_attr
        self._name = name
        self._in1_features = in1_features
        self._in2_features = in2_features
        self._out_features = out_features
        self._dtype = _default_dtype()
        self.weight = self.create_parameter(attr=weight_attr, shape=[out_features, in1_features, in2_features],
                                            dtype=self._dtype, is_bias=False)
        self.bias = self.create_parameter(attr=bias_attr, shape=[1, out_features], dtype=self._dtype, is_bias=True)

    def forward(self, x1, x2):
        return F.bilinear(x1, x2, self.weight, self.bias, self._name)

    def extra_repr(self):
        return "in1_features={}, in2_features={}, out_features={}, dtype={}{}".format(
            self._in1_features, self._in2_features, self._out_features, self._dtype, _name_str(self._name))


class Dropout(Layer):
    """Zeroes elements with probability p while training; mode 'upscale_in_train' (default) scales the
    kept ones by 1/(1-p) and is the identity in eval, 'downscale_in_infer' scales by (1-p) in eval."""

    def __init__(self, p=0.5, axis=None, mode="upscale_in_train", name=None):
        super().__init__()
        p = F.common._check_p("Dropout", p)
        if mode not in ("upscale_in_train", "downscale_in_infer"):
            raise ValueError("Dropout: mode must be 'upscale_in_train' or 'downscale_in_infer', got {!r}".format(mode))
        self.p = p
        self.axis = axis
        self.mode = mode
        self.name = name

    def forward(self, input):
        return F.dropout(input, p=self.p, axis=self.axis, training=self.training, mode=self.mode, name=self.name)

    def extra_repr(self):
        return "p={}, axis={}, mode={}{}".format(self.p, self.axis, self.mode, _name_str(self.name))


class Dropout2D(Layer):
    """Zeroes whole channels of a 4-D input while training (scaled by 1/(1-p))."""

    def __init__(self, p=0.5, data_format="NCHW", name=None):
        super().__init__()
        p = F.common._check_p("Dropout2D", p)
        self.p = p
        self.data_format = data_format
        self.name = name

    def forward(self, input):
        return F.dropout2d(input, p=self.p, training=self.training, data_format=self.data_format, name=self.name)

    def extra_repr(self):
        return "p={}, data_format={}{}".format(self.p, self.data_format, _name_str(self.name))


class Dropout3D(Layer):
    """Zeroes whole channels of a 5-D input while training (scaled by 1/(1-p))."""

    def __init__(self, p=0.5, data_format="NCDHW", name=None):
        super().__init__()
        p = F.common._check_p("Dropout3D", p)
        self.p = p
        self.data_format = data_format
        self.name = name

    def forward(self, input):
        return F.dropout3d(input, p=self.p, training=self.training, data_format=self.data_format, name=self.name)

    def extra_repr(self):
        return "p={}, data_format={}{}".format(self.p, self.data_format, _name_str(self.name))


class AlphaDropout(Layer):
    """Dropout that keeps selu activations' mean and variance (identity in eval)."""

    def __init__(self, p=0.5, name=None):
        super().__init__()
        p = F.common._check_p("AlphaDropout", p)
        self.p = p
        self.name = name

    def forward(self, input):
        return F.alpha_dropout(input, p=self.p, training=self.training, name=self.name)

    def extra_repr(self):
        return "p={}{}".format(self.p, _name_str(self.name))


def _npairs(x, n):
    # An int pads every side of the n spatial dims; lists and tensors are passed through.
    if isinstance(x, (_C.Tensor, list, tuple)):
        return x
    return [x] * (n * 2)


class _PadNd(Layer):
    _n_dim = 1
    _default_format = "NCL"

    def __init__(self, padding, mode="constant", value=0.0, data_format=None, name=None):
        super().__init__()
        if mode not in ("constant", "reflect", "replicate", "circular"):
            raise ValueError("{}: mode must be one of constant, reflect, replicate, circular; got {!r}".format(
                type(self).__name__, mode))
        self.padding = _npairs(padding, self._n_dim)
        self._mode = mode
        self.value = value
        self._data_format = data_format if data_format is not None else self._default_format
        self._name = name

    def forward(self, x):
        # As in Paddle, data_format (not the class) decides the input's rank: Pad3D(data_format="NCL")
        # pads a 3-D input.
        if x.ndim != len(self._data_format):
            raise ValueError("{}: data_format {} needs a {}-D input, got shape {}".format(
                type(self).__name__, self._data_format, len(self._data_format), x.shape))
        return F.pad(x, pad=self.padding, mode=self._mode, value=self.value, data_format=self._data_format,
                     name=self._name)

    def extra_repr(self):
        return "padding={}, mode={}, value={}, data_format={}{}".format(self.padding, self._mode, self.value,
                                                                        self._data_format, _name_str(self._name))


class Pad1D(_PadNd):
    """Pads the last dim of an NCL/NLC input: padding is an int or [left, right]."""
    _n_dim, _default_format = 1, "NCL"

    def __init__(self, padding, mode="constant", value=0.0, data_format="NCL", name=None):
        super().__init__(padding, mode, value, data_format, name)


class Pad2D(_PadNd):
    """Pads H and W: padding is an int or [left, right, top, bottom]."""
    _n_dim, _default_format = 2, "NCHW"

    def __init__(self, padding, mode="constant", value=0.0, data_format="NCHW", name=None):
        super().__init__(padding, mode, value, data_format, name)


class Pad3D(_PadNd):
    """Pads D, H and W: padding is an int or [left, right, top, bottom, front, back]."""
    _n_dim, _default_format = 3, "NCDHW"

    def __init__(self, padding, mode="constant", value=0.0, data_format="NCDHW", name=None):
        super().__init__(padding, mode, value, data_format, name)


def _fixed_mode_pad(base, mode, doc):
    class _P(base):
        def __init__(self, padding, data_format=base._default_format, name=None):
            super().__init__(padding, mode, 0.0, data_format, name)
    _P.__doc__ = doc
    return _P


def _constant_pad(base):
    class _P(base):
        def __init__(self, padding, value, data_format=base._default_format, name=None):
            super().__init__(padding, "constant", value, data_format, name)
    _P.__doc__ = "Pads with a constant value."
    return _P


ZeroPad1D = _fixed_mode_pad(Pad1D, "constant", "Pads with zeros.")
ZeroPad2D = _fixed_mode_pad(Pad2D, "constant", "Pads with zeros.")
ZeroPad3D = _fixed_mode_pad(Pad3D, "constant", "Pads with zeros.")
ReflectionPad1D = _fixed_mode_pad(Pad1D, "reflect", "Pads by reflection (edge not repeated).")
ReflectionPad2D = _fixed_mode_pad(Pad2D, "reflect", "Pads by reflection (edge not repeated).")
ReflectionPad3D = _fixed_mode_pad(Pad3D, "reflect", "Pads by reflection (edge not repeated).")
ReplicationPad1D = _fixed_mode_pad(Pad1D, "replicate", "Pads by repeating the edge.")
ReplicationPad2D = _fixed_mode_pad(Pad2D, "replicate", "Pads by repeating the edge.")
ReplicationPad3D = _fixed_mode_pad(Pad3D, "replicate", "Pads by repeating the edge.")
CircularPad1D = _fixed_mode_pad(Pad1D, "circular", "Pads by wrapping around.")
CircularPad2D = _fixed_mode_pad(Pad2D, "circular", "Pads by wrapping around.")
CircularPad3D = _fixed_mode_pad(Pad3D, "circular", "Pads by wrapping around.")
ConstantPad1D = _constant_pad(Pad1D)
ConstantPad2D = _constant_pad(Pad2D)
ConstantPad3D = _constant_pad(Pad3D)
for _name in ("ZeroPad1D", "ZeroPad2D", "ZeroPad3D", "ReflectionPad1D", "ReflectionPad2D", "ReflectionPad3D",
              "ReplicationPad1D", "ReplicationPad2D", "ReplicationPad3D", "CircularPad1D", "CircularPad2D",
              "CircularPad3D", "ConstantPad1D", "ConstantPad2D", "ConstantPad3D"):
    globals()[_name].__name__ = globals()[_name].__qualname__ = _name
del _name


class CosineSimilarity(Layer):
    """Cosine similarity of x1 and x2 along `axis`."""

    def __init__(self, axis=1, eps=1e-8):
        super().__init__()
        self._axis = axis
        self._eps = eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, axis=self._axis, eps=self._eps)

    def extra_repr(self):
        return "axis={}, eps={}".format(self._axis, self._eps)


class Embedding(Layer):
    """A lookup table weight [num_embeddings, embedding_dim] (XavierUniform by default). The row
    padding_idx is zeroed at creation, looks up as zeros and gets no gradient. sparse=True gives the
    weight a row-sparse gradient (SelectedRows) that the optimizers apply (docs/sparse.md)."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, sparse=False, weight_attr=None, name=None):
        super().__init__()
        if num_embeddings <= 0:
            raise ValueError("Embedding: num_embeddings must be greater than 0, got {}".format(num_embeddings))
        if embedding_dim <= 0:
            raise ValueError("Embedding: embedding_dim must be greater than 0, got {}".format(embedding_dim))
        if padding_idx is not None and not -num_embeddings <= padding_idx < num_embeddings:
            raise ValueError("Embedding: padding_idx must be within [-{0}, {0}), got {1}".format(num_embeddings,
                                                                                             padding_idx))
        self._num_embeddings = num_embeddings
        self._embedding_dim = embedding_dim
        self._sparse = sparse
        self._is_distributed = False
        self._padding_idx = padding_idx
        self._dtype = _default_dtype()
        self._size = [num_embeddings, embedding_dim]
        self._weight_attr = weight_attr
        self._name = name
        self.weight = self.create_parameter(attr=weight_attr, shape=self._size, dtype=self._dtype, is_bias=False)
        if padding_idx is not None:
            row = padding_idx % num_embeddings
            with no_grad():
                w = self.weight.numpy()
                w[row] = 0
                self.weight.set_value(w)

    @property
    def padding_idx(self):
        return self._padding_idx

    def forward(self, x):
        return F.embedding(x, weight=self.weight, padding_idx=self._padding_idx, sparse=self._sparse, name=self._name)

    def extra_repr(self):
        s = "{}, {}".format(self._num_embeddings, self._embedding_dim)
        if self._padding_idx is not None:
            s += ", padding_idx={}".format(self._padding_idx)
        s += ", sparse={}".format(self._sparse)
        if self._name is not None:
            s += ", name={}".format(self._name)
        return s


class Unfold(Layer):
    """im2col: [N, C, H, W] -> [N, C*kh*kw, L] (F.unfold)."""

    def __init__(self, kernel_sizes, dilations=1, paddings=0, strides=1, name=None):
        super().__init__()
        self.kernel_sizes = kernel_sizes
        self.dilations = dilations
        self.paddings = paddings
        self.strides = strides
        self.name = name

    def forward(self, input):
        return F.unfold(input, kernel_sizes=self.kernel_sizes, strides=self.strides, paddings=self.paddings,
                        dilations=self.dilations, name=self.name)

    def extra_repr(self):
        return "kernel_size={}, dilation={}, padding={}, stride={}{}".format(
            self.kernel_sizes, self.dilations, self.paddings, self.strides, _name_str(self.name))


class Fold(Layer):
    """col2im, the inverse layout of Unfold: [N, C*kh*kw, L] -> [N, C, H, W] (overlaps are summed)."""

    def __init__(self, output_sizes, kernel_sizes, dilations=1, paddings=0, strides=1, name=None):
        super().__init__()
        self.output_sizes = output_sizes
        self.kernel_sizes = kernel_sizes
        self.dilations = dilations
        self.paddings = paddings
        self.strides = strides
        self.name = name

    def forward(self, input):
        return F.fold(input, output_sizes=self.output_sizes, kernel_sizes=self.kernel_sizes, strides=self.strides,
                      paddings=self.paddings, dilations=self.dilations, name=self.name)

    def extra_repr(self):
        return "kernel_size={}, dilation={}, padding={}, stride={}{}".format(
            self.kernel_sizes, self.dilations, self.paddings, self.strides, _name_str(self.name))


class Flatten(Layer):
    """Flattens dims start_axis..stop_axis (default: all but the batch dim)."""

    def __init__(self, start_axis=1, stop_axis=-1):
        super().__init__()
        self.start_axis = start_axis
        self.stop_axis = stop_axis

    def forward(self, input):
        return input.flatten(start_axis=self.start_axis, stop_axis=self.stop_axis)


class Unflatten(Layer):
    """Splits dim `axis` into `shape` (one entry may be -1)."""

    def __init__(self, axis, shape, name=None):
        super().__init__()
        if not isinstance(shape, (list, tuple, _C.Tensor)) or len(shape) == 0:
            raise TypeError("Unflatten: shape must be a non-empty list or tuple, got {!r}".format(shape))
        self.axis = axis
        self.shape = shape
        self.name = name

    def forward(self, input):
        nd = input.ndim
        if not -nd <= self.axis < nd:
            raise ValueError("Unflatten: axis {} is out of range for a {}-D input".format(self.axis, nd))
        axis = self.axis % nd
        shape = self.shape.tolist() if isinstance(self.shape, _C.Tensor) else [int(s) for s in self.shape]
        known = int(np.prod([s for s in shape if s != -1]))
        n = input.shape[axis]
        if shape.count(-1) > 1 or (-1 not in shape and known != n) or (-1 in shape and (known == 0 or n % known)):
            raise ValueError("Unflatten: shape {} does not split dimension {} of size {}".format(shape, axis, n))
        new = list(input.shape[:axis]) + shape + list(input.shape[axis + 1:])
        return input.reshape(new)

    def extra_repr(self):
        return "axis={}, shape={}{}".format(self.axis, self.shape, _name_str(self.name))
