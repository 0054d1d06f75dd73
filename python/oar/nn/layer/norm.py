"""Normalisation layers (Paddle's paddle.nn.layer.norm).

BatchNorm keeps its running statistics as non-trainable Parameters `_mean` (init 0) and `_variance`
(init 1), exactly as Paddle: they are in parameters() (stop_gradient, so optimizers skip them) and in
state_dict under the keys weight, bias, _mean, _variance. Training updates them in place with Paddle's
convention running = momentum * running + (1 - momentum) * batch (momentum 0.9).
"""
import numbers

import numpy as np

from ... import _C
from ...autograd import PyLayer, no_grad
from ...tensor.creation import full as _full
from ...tensor.manipulation import concat as _concat
from ..functional.norm import _per_channel
from ...framework.param_attr import ParamAttr
from .. import functional as F
from ..initializer import Constant, Normal
from .layers import Layer

__all__ = ["BatchNorm", "BatchNorm1D", "BatchNorm2D", "BatchNorm3D", "SyncBatchNorm", "LayerNorm", "GroupNorm",
           "InstanceNorm1D", "InstanceNorm2D", "InstanceNorm3D", "LocalResponseNorm", "SpectralNorm"]


def _float_dtype():
    # As Paddle: a float16 default dtype still gives float32 statistics.
    d = _C.get_default_dtype()
    return "float32" if d == "float16" else d


def _check_channels(layer, x, c_axis, n):
    if x.shape[c_axis] != n:
        raise ValueError("{}: expected {} channels at dim {}, got input shape {}".format(
            type(layer).__name__, n, c_axis, x.shape))


class _BatchNormBase(Layer):
    _ranks = (4,)
    _formats = {"NCHW": "NCHW", "NHWC": "NHWC"}

    def __init__(self, num_features, momentum=0.9, epsilon=1e-05, weight_attr=None, bias_attr=None,
                 data_format="NCHW", use_global_stats=None, name=None):
        super().__init__()
        if data_format not in self._formats:
            raise ValueError("{}: data_format must be one of {}, got {!r}".format(
                type(self).__name__, sorted(self._formats), data_format))
        self._num_features = num_features
        self._weight_attr = weight_attr
        self._bias_attr = bias_attr
        self._use_global_stats = use_global_stats
        self._dtype = _float_dtype()
        shape = [num_features]
        self.weight = None if weight_attr is False else self.create_parameter(
            attr=weight_attr, shape=shape, dtype=self._dtype, default_initializer=Constant(1.0))
        self.bias = None if bias_attr is False else self.create_parameter(
            attr=bias_attr, shape=shape, dtype=self._dtype, is_bias=True)
        mean_name = name + "_mean" if name is not None else None
        var_name = name + "_variance" if name is not None else None
        self._mean = self.create_parameter(
            attr=ParamAttr(name=mean_name, initializer=Constant(0.0), trainable=False, do_model_average=True),
            shape=shape, dtype=self._dtype)
        self._mean.stop_gradient = True
        self._variance = self.create_parameter(
            attr=ParamAttr(name=var_name, initializer=Constant(1.0), trainable=False, do_model_average=True),
            shape=shape, dtype=self._dtype)
        self._variance.stop_gradient = True
        self._data_format = data_format
        self._momentum = momentum
        self._epsilon = epsilon
        self._name = name

    def _check_input(self, x):
        if x.ndim not in self._ranks:
            raise ValueError("{}: expected {} input (got {}D input with shape {})".format(
                type(self).__name__, " or ".join("{}D".format(r) for r in self._ranks), x.ndim, x.shape))
        fmt = self._formats[self._data_format]
        c_axis = 1 if fmt == "NCHW" else x.ndim - 1
        _check_channels(self, x, c_axis, self._num_features)
        return fmt

    def forward(self, input):
        fmt = self._check_input(input)
        return F.batch_norm(input, self._mean, self._variance, weight=self.weight, bias=self.bias,
                            training=self.training, momentum=self._momentum, epsilon=self._epsilon,
                            data_format=fmt, use_global_stats=self._use_global_stats)

    def extra_repr(self):
        s = "num_features={}, momentum={}, epsilon={}".format(self._num_features, self._momentum, self._epsilon)
        if self._data_format != "NCHW":
            s += ", data_format={}".format(self._data_format)
        if self._name is not None:
            s += ", name={}".format(self._name)
        return s


class BatchNorm1D(_BatchNormBase):
    """Batch normalisation of [N, C] or [N, C, L] (NC/NCL) or [N, L, C] (NLC) inputs."""
    _ranks = (2, 3)
    _formats = {"NC": "NCHW", "NCL": "NCHW", "NCHW": "NCHW", "NLC": "NHWC", "NHWC": "NHWC"}

    def __init__(self, num_features, momentum=0.9, epsilon=1e-05, weight_attr=None, bias_attr=None,
                 data_format="NCL", use_global_stats=None, name=None):
        super().__init__(num_features, momentum, epsilon, weight_attr, bias_attr, data_format, use_global_stats, name)


class BatchNorm2D(_BatchNormBase):
    """Batch normalisation of [N, C, H, W] (or NHWC) inputs."""
    _ranks = (4,)
    _formats = {"NCHW": "NCHW", "NHWC": "NHWC"}


class BatchNorm3D(_BatchNormBase):
    """Batch normalisation of [N, C, D, H, W] (or NDHWC) inputs."""
    _ranks = (5,)
    _formats = {"NCDHW": "NCHW", "NCHW": "NCHW", "NDHWC": "NHWC", "NHWC": "NHWC"}

    def __init__(self, num_features, momentum=0.9, epsilon=1e-05, weight_attr=None, bias_attr=None,
                 data_format="NCDHW", use_global_stats=None, name=None):
        super().__init__(num_features, momentum, epsilon, weight_attr, bias_attr, data_format, use_global_stats, name)


class _AllReduceSum(PyLayer):
    """Sum over the ranks of `group`; its gradient is the sum of the ranks' gradients (each rank's loss
    depends on every rank's statistics)."""

    @staticmethod
    def forward(ctx, x, group):
        from ...distributed.parallel import _all_reduce_on_comm_stream
        ctx.group = group
        y = x.clone()
        _all_reduce_on_comm_stream(y, group, 0, wait=True)
        return y

    @staticmethod
    def backward(ctx, g):
        from ...distributed.parallel import _all_reduce_on_comm_stream
        g = g.clone()
        _all_reduce_on_comm_stream(g, ctx.group, 0, wait=True)
        return g


class SyncBatchNorm(_BatchNormBase):
    """Batch normalisation whose training statistics cover the whole batch of every process of the
    default group: each rank's per-channel sum, sum of squares and count are all-reduced (one all-reduce
    in forward, one in backward for their gradients). Eval uses the running statistics; one process (or
    no parallel environment) computes exactly what BatchNorm does. weight_attr/bias_attr False give fixed
    (non-trainable) scale 1 and shift 0, as Paddle."""
    _ranks = (2, 3, 4, 5)
    _formats = {"NC": "NCHW", "NCL": "NCHW", "NCHW": "NCHW", "NCDHW": "NCHW", "NLC": "NHWC", "NHWC": "NHWC",
                "NDHWC": "NHWC"}

    def __init__(self, num_features, momentum=0.9, epsilon=1e-05, weight_attr=None, bias_attr=None,
                 data_format="NCHW", name=None):
        super().__init__(num_features, momentum, epsilon, weight_attr, bias_attr, data_format, None, name)
        if weight_attr is False:
            self.weight = self.create_parameter(attr=None, shape=[num_features], dtype=self._dtype,
                                                default_initializer=Constant(1.0))
            self.weight.stop_gradient = True
        if bias_attr is False:
            self.bias = self.create_parameter(attr=None, shape=[num_features], dtype=self._dtype,
                                              default_initializer=Constant(0.0), is_bias=True)
            self.bias.stop_gradient = True

    def forward(self, input):
        from ...distributed import collective
        g = collective._group
        if not self.training or g is None or g._pg is None or g.nranks == 1:
            return super().forward(input)
        fmt = self._check_input(input)
        x = input
        c_axis = 1 if fmt == "NCHW" else x.ndim - 1
        axes = [i for i in range(x.ndim) if i != c_axis]
        count = x.size // self._num_features
        local = _concat([x.sum(axis=axes), (x * x).sum(axis=axes),
                           _full([1], float(count), dtype=x.dtype)])
        total = _AllReduceSum.apply(local, g)
        c = self._num_features
        n = float(total[2 * c:].detach().numpy()[0])  # the job's count (no gradient)
        if n <= 1:
            raise ValueError("SyncBatchNorm: expected more than 1 value per channel in training across all "
                             "ranks, got input shape {}".format(x.shape))
        mean = total[:c] / n
        var = total[c:2 * c] / n - mean * mean
        with no_grad():
            m = float(self._momentum)
            _C._assign(self._mean, self._mean * m + mean.detach() * (1.0 - m))
            _C._assign(self._variance, self._variance * m + var.detach() * (1.0 - m))
        inv = (var + float(self._epsilon)).rsqrt()
        y = (x - _per_channel(mean, x, c_axis)) * _per_channel(inv, x, c_axis)
        if self.weight is not None:
            y = y * _per_channel(self.weight, x, c_axis)
        if self.bias is not None:
            y = y + _per_channel(self.bias, x, c_axis)
        return y

    @classmethod
    def convert_sync_batchnorm(cls, layer):
        """Replaces every BatchNorm1D/2D/3D in `layer` (recursively) by a SyncBatchNorm sharing its
        parameters and statistics; returns the converted layer."""
        out = layer
        if isinstance(layer, _BatchNormBase) and not isinstance(layer, SyncBatchNorm):
            for attr in (layer._weight_attr, layer._bias_attr):
                if isinstance(attr, ParamAttr) and attr.name is not None:
                    attr.name = attr.name + "_sync"
            out = SyncBatchNorm(layer._num_features, layer._momentum, layer._epsilon, layer._weight_attr,
                                layer._bias_attr, layer._data_format, layer._name)
            if layer._weight_attr is not False and layer._bias_attr is not False:
                out.weight = layer.weight
                out.bias = layer.bias
            out._mean = layer._mean
            out._variance = layer._variance
            out.training = layer.training
        for name, sub in list(layer.named_children()):
            out.add_sublayer(name, cls.convert_sync_batchnorm(sub))
        return out


class BatchNorm(Layer):
    """The legacy (fluid-style) batch norm: num_channels, an optional activation `act`, is_test and
    data_layout. Same parameters and state_dict keys as BatchNorm2D."""

    def __init__(self, num_channels, act=None, is_test=False, momentum=0.9, epsilon=1e-05, param_attr=None,
                 bias_attr=None, dtype="float32", data_layout="NCHW", in_place=False, moving_mean_name=None,
                 moving_variance_name=None, do_model_average_for_mean_and_var=True, use_global_stats=False,
                 trainable_statistics=False):
        super().__init__()
        if data_layout not in ("NCHW", "NHWC"):
            raise ValueError("BatchNorm: data_layout must be NCHW or NHWC, got {!r}".format(data_layout))
        if act is not None and not hasattr(F, act):
            raise ValueError("BatchNorm: unknown activation {!r}".format(act))
        self._param_attr = param_attr
        self._bias_attr = bias_attr
        self._act = act
        self._dtype = "float32" if dtype == "float16" else dtype
        self._num_channels = num_channels
        shape = [num_channels]
        self.weight = None if param_attr is False else self.create_parameter(
            attr=param_attr, shape=shape, dtype=self._dtype, default_initializer=Constant(1.0))
        self.bias = None if bias_attr is False else self.create_parameter(
            attr=bias_attr, shape=shape, dtype=self._dtype, is_bias=True)
        self._mean = self.create_parameter(
            attr=ParamAttr(name=moving_mean_name, initializer=Constant(0.0), trainable=False,
                           do_model_average=do_model_average_for_mean_and_var), shape=shape, dtype=self._dtype)
        self._mean.stop_gradient = True
        self._variance = self.create_parameter(
            attr=ParamAttr(name=moving_variance_name, initializer=Constant(1.0), trainable=False,
                           do_model_average=do_model_average_for_mean_and_var), shape=shape, dtype=self._dtype)
        self._variance.stop_gradient = True
        self._in_place = in_place
        self._data_layout = data_layout
        self._momentum = momentum
        self._epsilon = epsilon
        self._is_test = is_test
        self._use_global_stats = use_global_stats
        self._trainable_statistics = trainable_statistics
        self.training = not is_test

    def forward(self, input):
        if input.ndim < 2:
            raise ValueError("BatchNorm: the input must have at least 2 dims, got shape {}".format(input.shape))
        _check_channels(self, input, 1 if self._data_layout == "NCHW" else input.ndim - 1, self._num_channels)
        # trainable_statistics: batch statistics even in eval (the running ones are then not updated).
        use_global = True if self._use_global_stats else (False if self._trainable_statistics else None)
        y = F.batch_norm(input, self._mean, self._variance, weight=self.weight, bias=self.bias,
                         training=self.training, momentum=self._momentum, epsilon=self._epsilon,
                         data_format=self._data_layout, use_global_stats=use_global)
        return getattr(F, self._act)(y) if self._act is not None else y


class LayerNorm(Layer):
    """Normalises over the trailing dims `normalized_shape`; weight (ones) and bias (zeros) have shape
    [prod(normalized_shape)]."""

    def __init__(self, normalized_shape, epsilon=1e-05, weight_attr=None, bias_attr=None, name=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = [normalized_shape]
        self._normalized_shape = [int(s) for s in normalized_shape]
        self._epsilon = epsilon
        self._weight_attr = weight_attr
        self._bias_attr = bias_attr
        self._dtype = _C.get_default_dtype()
        shape = [int(np.prod(self._normalized_shape))]
        self.weight = None if weight_attr is False else self.create_parameter(
            attr=weight_attr, shape=shape, dtype=self._dtype, default_initializer=Constant(1.0))
        self.bias = None if bias_attr is False else self.create_parameter(
            attr=bias_attr, shape=shape, dtype=self._dtype, is_bias=True)

    def forward(self, input):
        k = len(self._normalized_shape)
        if input.ndim < k or list(input.shape[input.ndim - k:]) != self._normalized_shape:
            raise ValueError("LayerNorm: normalized_shape {} does not match the trailing dims of the input shape {}"
                             .format(self._normalized_shape, input.shape))
        w = self.weight.reshape(self._normalized_shape) if self.weight is not None and k > 1 else self.weight
        b = self.bias.reshape(self._normalized_shape) if self.bias is not None and k > 1 else self.bias
        return F.layer_norm(input, self._normalized_shape, weight=w, bias=b, epsilon=self._epsilon)

    def extra_repr(self):
        return "normalized_shape={}, epsilon={}".format(self._normalized_shape, self._epsilon)


class GroupNorm(Layer):
    """Normalises each sample's channel groups; weight (ones) and bias (zeros) are [num_channels]."""

    def __init__(self, num_groups, num_channels, epsilon=1e-05, weight_attr=None, bias_attr=None,
                 data_format="NCHW", name=None):
        super().__init__()
        if data_format not in ("NCL", "NCHW", "NCDHW", "NLC", "NHWC", "NDHWC"):
            raise ValueError("GroupNorm: unsupported data layout {!r}".format(data_format))
        if num_groups <= 0 or num_channels % num_groups != 0:
            raise ValueError("GroupNorm: num_channels ({}) must be divisible by num_groups ({})".format(
                num_channels, num_groups))
        self._epsilon = epsilon
        self._num_channels = num_channels
        self._num_groups = num_groups
        self._weight_attr = weight_attr
        self._bias_attr = bias_attr
        self._dtype = _C.get_default_dtype()
        self._data_format = "NCHW" if data_format[1] == "C" else "NHWC"
        shape = [num_channels]
        self.weight = None if weight_attr is False else self.create_parameter(
            attr=weight_attr, shape=shape, dtype=self._dtype, default_initializer=Constant(1.0))
        if self.weight is not None:
            self.weight.stop_gradient = isinstance(weight_attr, ParamAttr) and weight_attr.learning_rate == 0.0
        self.bias = None if bias_attr is False else self.create_parameter(
            attr=bias_attr, shape=shape, dtype=self._dtype, default_initializer=Constant(0.0), is_bias=True)
        if self.bias is not None:
            self.bias.stop_gradient = isinstance(bias_attr, ParamAttr) and bias_attr.learning_rate == 0.0

    def forward(self, input):
        if input.ndim < 2:
            raise ValueError("GroupNorm: the input must have at least 2 dims, got shape {}".format(input.shape))
        _check_channels(self, input, 1 if self._data_format == "NCHW" else input.ndim - 1, self._num_channels)
        return F.group_norm(input, self._num_groups, self._epsilon, self.weight, self.bias, self._data_format)

    def extra_repr(self):
        return "num_groups={}, num_channels={}, epsilon={}".format(self._num_groups, self._num_channels,
                                                                   self._epsilon)


class _InstanceNormBase(Layer):
    _ranks = (4,)

    def __init__(self, num_features, epsilon=1e-05, momentum=0.9, weight_attr=None, bias_attr=None,
                 data_format="NCHW", name=None):
        super().__init__()
        if (weight_attr is False) != (bias_attr is False):
            raise ValueError("{}: weight_attr and bias_attr must be set to False together".format(type(self).__name__))
        self._momentum = momentum
        self._epsilon = epsilon
        self._weight_attr = weight_attr
        self._bias_attr = bias_attr
        self._num_features = num_features
        self._data_format = data_format
        self._dtype = _C.get_default_dtype()
        if weight_attr is not False:
            # Paddle names the scale "scale" (state_dict keys scale, bias).
            self.scale = self.create_parameter(attr=weight_attr, shape=[num_features], dtype=self._dtype,
                                               default_initializer=Constant(1.0), is_bias=False)
            self.bias = self.create_parameter(attr=bias_attr, shape=[num_features], dtype=self._dtype,
                                              default_initializer=Constant(0.0), is_bias=True)
        else:
            self.scale = None
            self.bias = None

    def forward(self, input):
        if input.ndim not in self._ranks:
            raise ValueError("{}: expected {} input (got {}D input with shape {})".format(
                type(self).__name__, " or ".join("{}D".format(r) for r in self._ranks), input.ndim, input.shape))
        c_axis = input.ndim - 1 if self._data_format[-1] == "C" else 1
        _check_channels(self, input, c_axis, self._num_features)
        return F.instance_norm(input, weight=self.scale, bias=self.bias, momentum=self._momentum, eps=self._epsilon,
                               data_format=self._data_format)

    def extra_repr(self):
        return "num_features={}, epsilon={}".format(self._num_features, self._epsilon)


class InstanceNorm1D(_InstanceNormBase):
    """Instance normalisation of [N, C, L] inputs."""
    _ranks = (3,)

    def __init__(self, num_features, epsilon=1e-05, momentum=0.9, weight_attr=None, bias_attr=None,
                 data_format="NCL", name=None):
        super().__init__(num_features, epsilon, momentum, weight_attr, bias_attr, data_format, name)


class InstanceNorm2D(_InstanceNormBase):
    """Instance normalisation of [N, C, H, W] inputs."""
    _ranks = (4,)

    def __init__(self, num_features, epsilon=1e-05, momentum=0.9, weight_attr=None, bias_attr=None,
                 data_format="NCHW", name=None):
        super().__init__(num_features, epsilon, momentum, weight_attr, bias_attr, data_format, name)


class InstanceNorm3D(_InstanceNormBase):
    """Instance normalisation of [N, C, D, H, W] inputs."""
    _ranks = (5,)

    def __init__(self, num_features, epsilon=1e-05, momentum=0.9, weight_attr=None, bias_attr=None,
                 data_format="NCDHW", name=None):
        super().__init__(num_features, epsilon, momentum, weight_attr, bias_attr, data_format, name)


class LocalResponseNorm(Layer):
    """x / (k + alpha / size * sum of x^2 over `size` neighbouring channels) ** beta."""

    def __init__(self, size, alpha=0.0001, beta=0.75, k=1.0, data_format="NCHW", name=None):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k
        self.data_format = data_format
        self.name = name

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k, self.data_format, self.name)

    def extra_repr(self):
        s = "size={}, alpha={}, beta={}, k={}".format(self.size, self.alpha, self.beta, self.k)
        if self.data_format != "NCHW":
            s += ", data_format={}".format(self.data_format)
        if self.name is not None:
            s += ", name={}".format(self.name)
        return s


class SpectralNorm(Layer):
    """forward(weight) = weight / sigma, sigma the largest singular value of weight reshaped to
    [weight_shape[dim], -1], estimated by `power_iters` power-iteration steps that start, at every call,
    from the stored vectors weight_u [h] and weight_v [w] (non-trainable parameters drawn from N(0, 1);
    as Paddle's op they are not updated)."""

    def __init__(self, weight_shape, dim=0, power_iters=1, eps=1e-12, dtype="float32"):
        super().__init__()
        self._power_iters = power_iters
        self._eps = eps
        self._dim = dim
        self._dtype = dtype
        self._weight_shape = list(weight_shape)
        if int(np.prod(self._weight_shape)) <= 0:
            raise ValueError("SpectralNorm: every dimension of weight_shape must be positive, got {}".format(
                self._weight_shape))
        if not 0 <= dim < len(self._weight_shape):
            raise ValueError("SpectralNorm: dim must be in [0, {}), got {}".format(len(self._weight_shape), dim))
        h = self._weight_shape[dim]
        w = int(np.prod(self._weight_shape)) // h
        self.weight_u = self.create_parameter(attr=ParamAttr(), shape=[h], dtype=dtype,
                                              default_initializer=Normal(0.0, 1.0))
        self.weight_u.stop_gradient = True
        self.weight_v = self.create_parameter(attr=ParamAttr(), shape=[w], dtype=dtype,
                                              default_initializer=Normal(0.0, 1.0))
        self.weight_v.stop_gradient = True

    def forward(self, x):
        if list(x.shape) != self._weight_shape:
            raise ValueError("SpectralNorm: expected a weight of shape {}, got {}".format(self._weight_shape, x.shape))
        perm = [self._dim] + [d for d in range(x.ndim) if d != self._dim]
        mat = x.transpose(perm).reshape([x.shape[self._dim], -1]) if self._dim != 0 else x.reshape([x.shape[0], -1])
        # the parameters themselves (non-trainable), so that a program reads them under their names
        # (Paddle code feeds them: feed={"spectral_norm_0.w_0": u, ...})
        u, v = self.weight_u, self.weight_v
        with no_grad():
            for _ in range(self._power_iters):
                v = F.normalize(mat.t().matmul(u), axis=0, epsilon=self._eps)
                u = F.normalize(mat.matmul(v), axis=0, epsilon=self._eps)
        sigma = (u * mat.matmul(v)).sum()
        return x / sigma
