"""linear, bilinear, the dropout family, embedding, one_hot, label_smooth, cosine_similarity,
pairwise_distance (composites of existing ops)."""
import math

from ... import _C
from ...autograd.py_layer import PyLayer
from ...framework.parameter import Parameter
from ...framework import selected_rows as _selected_rows
from ...static import program as _static
from ...tensor.creation import _run_shape

__all__ = ["linear", "bilinear", "dropout", "dropout2d", "dropout3d", "alpha_dropout", "embedding", "one_hot",
           "label_smooth", "cosine_similarity", "pairwise_distance", "sequence_mask", "class_center_sample"]

_matmul = _C.Op("matmul", "transpose_x", "transpose_y")
_cast = _C.Op("cast", "dtype")
_fill = _C.Op("fill", "shape", "value", "dtype")
_arange = _C.Op("arange", "start", "end", "step", "dtype")
_uniform = _C.Op("uniform")
_index_select = _C.Op("index_select", "axis")
_equal = _C.Op("equal")
_sum = _C.Op("sum", "axis", "keepdim")
_max = _C.Op("max", "axis", "keepdim")
_min = _C.Op("min", "axis", "keepdim")
_sqrt = _C.Op("sqrt")
_maximum = _C.Op("maximum")


def _const(shape, value, like):
    return _fill(list(shape), float(value), like.dtype, place=like.place)


def _rand_like(shape, x):
    """U[0, 1) of `shape` on x's place, from the global generator."""
    return _C._uniform(_run_shape(shape, x), 0.0, 1.0, x.dtype, 0, x.place)


def linear(x, weight, bias=None, name=None):
    """x @ weight + bias; weight is [in_features, out_features] as in Paddle."""
    if weight.ndim != 2:
        raise ValueError("linear: weight must be 2-D [in_features, out_features], got shape {}".format(weight.shape))
    if x.ndim < 1 or x.shape[-1] != weight.shape[0]:
        raise ValueError("linear: x.shape[-1] ({}) != weight.shape[0] ({})".format(
            x.shape[-1] if x.ndim else None, weight.shape[0]))
    out = _matmul(x, weight, False, False)
    if bias is not None:
        out = out + bias
    return out


# the common call in C (python/src/fast_api.cc, decision 134); the function above runs the rest
from ..._fast import fast as _fast  # noqa: E402

linear = _fast("linear", linear, "matmul", ["transpose_x", "transpose_y"])


def bilinear(x1, x2, weight, bias=None, name=None):
    """out[n, o] = x1[n] @ weight[o] @ x2[n] + bias[o]; weight is [out, in1, in2]."""
    if weight.ndim != 3 or x1.ndim != 2 or x2.ndim != 2:
        raise ValueError("bilinear: expected x1 [N, in1], x2 [N, in2], weight [out, in1, in2]; got {}, {}, {}"
                         .format(x1.shape, x2.shape, weight.shape))
    if weight.shape[1] != x1.shape[1] or weight.shape[2] != x2.shape[1]:
        raise ValueError("bilinear: weight.shape {} does not match x1.shape {} and x2.shape {}"
                         .format(weight.shape, x1.shape, x2.shape))
    t = _matmul(x1, weight, False, False)  # [out, N, in2]
    out = _sum(t * x2, [-1], False)  # [out, N]
    out = out.transpose([1, 0])
    if bias is not None:
        out = out + bias.reshape([1, -1])
    return out


def _check_p(op, p):
    """The dropout probability as a float. Paddle also takes a one-element Tensor (its value is read
    here, so it must be concrete: a variable of a static program has no value yet)."""
    if isinstance(p, _C.Tensor):
        if _static.is_symbolic(p):
            raise TypeError("{}: p must be a float or a Tensor with a value, got the program variable {!r}"
                            .format(op, p.name))
        if p.size != 1:
            raise ValueError("{}: p must be a float or a one-element Tensor, got a Tensor of shape {}".format(
                op, p.shape))
        p = float(p.reshape([]).item())
    elif not isinstance(p, (int, float)) or isinstance(p, bool):
        raise TypeError("{}: p must be a float, got {}".format(op, type(p).__name__))
    if not 0 <= p <= 1:
        raise ValueError("{}: p must be in [0, 1], got {}".format(op, p))
    return p


def dropout(x, p=0.5, axis=None, training=True, mode="upscale_in_train", name=None):
    """Zeroes elements with probability p. mode 'upscale_in_train' scales the kept ones by 1 / (1 - p) in
    training and is the identity in evaluation; 'downscale_in_infer' keeps them unscaled in training and
    multiplies by (1 - p) in evaluation. `axis` (int or list) shares the mask along the other axes."""
    p = _check_p("dropout", p)
    if mode not in ("upscale_in_train", "downscale_in_infer"):
        raise ValueError("dropout: mode must be 'upscale_in_train' or 'downscale_in_infer', got {!r}".format(mode))
    if not training:
        return x if mode == "upscale_in_train" else x * (1.0 - p)
    if p == 0:
        return x
    return _static._train_and_test(lambda: _dropout_train(x, p, axis, mode),
                                   lambda: dropout(x, p, axis, False, mode))


def _dropout_train(x, p, axis, mode):
    if p == 1:
        return x * 0.0
    shape = list(x.shape)
    if axis is not None:
        axes = [axis] if isinstance(axis, int) else list(axis)
        for a in axes:
            if not -x.ndim <= a < x.ndim:
                raise IndexError("dropout: axis {} is out of range for a tensor of rank {}".format(a, x.ndim))
        axes = [a % x.ndim for a in axes]
        shape = [d if i in axes else 1 for i, d in enumerate(shape)]
    keep = _cast(_rand_like(shape, x) >= float(p), x.dtype)
    if mode == "upscale_in_train":
        return x * (keep * (1.0 / (1.0 - p)))
    return x * keep


def dropout2d(x, p=0.5, training=True, data_format="NCHW", name=None):
    """Zeroes whole channels of a 4-D input."""
    if x.ndim != 4:
        raise ValueError("dropout2d: x must be 4-D, got shape {}".format(x.shape))
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError("dropout2d: data_format must be NCHW or NHWC, got {}".format(data_format))
    return dropout(x, p, [0, 1] if data_format == "NCHW" else [0, 3], training)


def dropout3d(x, p=0.5, training=True, data_format="NCDHW", name=None):
    """Zeroes whole channels of a 5-D input."""
    if x.ndim != 5:
        raise ValueError("dropout3d: x must be 5-D, got shape {}".format(x.shape))
    if data_format not in ("NCDHW", "NDHWC"):
        raise ValueError("dropout3d: data_format must be NCDHW or NDHWC, got {}".format(data_format))
    return dropout(x, p, [0, 1] if data_format == "NCDHW" else [0, 4], training)


def alpha_dropout(x, p=0.5, training=True, name=None):
    """Dropout for selu networks: dropped elements become selu's negative saturation value and the result
    is rescaled to keep zero mean and unit variance."""
    p = _check_p("alpha_dropout", p)
    if not training or p == 0:
        return x
    alpha = 1.6732632423543772848170429916717
    scale = 1.0507009873554804934193349852946
    alpha_p = -alpha * scale
    if p == 1:
        return x * 0.0 + alpha_p * 0.0
    a = ((1 - p) * (1 + p * alpha_p * alpha_p)) ** -0.5
    b = -a * alpha_p * p
    keep = _cast(_rand_like(x.shape, x) >= float(p), x.dtype)
    return (x * keep + (1.0 - keep) * alpha_p) * a + b


class _RowSparseLookup(PyLayer):
    """weight[ids] whose backward hands the weight a SelectedRows gradient (ids, output gradient)
    instead of a dense one: the engine sees no gradient for weight (None)."""

    @staticmethod
    def forward(ctx, ids, weight):
        ctx.ids, ctx.weight = ids, weight
        return _index_select(weight, ids, 0)

    @staticmethod
    def backward(ctx, grad):
        if _selected_rows._functional_grad[0]:  # oar.grad: a dense gradient, accumulated nowhere
            zeros = _C.Op("fill", "shape", "value", "dtype")(ctx.weight.shape, 0.0, grad.dtype, place=grad.place)
            return None, _C.Op("index_add", "axis")(zeros, ctx.ids, grad, 0)
        _selected_rows.add_sparse_grad(ctx.weight, ctx.ids, grad)
        return None, None


def embedding(x, weight, padding_idx=None, sparse=False, name=None):
    """weight[x] for integer ids x. The rows of ids equal to padding_idx are zero and give no gradient.
    sparse=True: a Parameter weight gets a row-sparse gradient (SelectedRows: the looked-up rows and
    their gradients) instead of a dense one (docs/sparse.md)."""
    if x.dtype not in (_C.to_dtype("int32"), _C.to_dtype("int64")):
        raise TypeError("embedding: x.dtype must be int32 or int64, got {}".format(x.dtype))
    if weight.ndim != 2:
        raise ValueError("embedding: weight must be 2-D [num_embeddings, embedding_dim], got {}".format(weight.shape))
    n = weight.shape[0]
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            raise ValueError("embedding: padding_idx {} is out of range [-{}, {})".format(padding_idx, n, n))
        if padding_idx < 0:
            padding_idx += n
    flat = x.reshape([-1])
    if flat.shape[0] > 0 and not _static.is_symbolic(flat):  # a program variable has no values to check yet
        lo, hi = int(_min(flat, [], False).item()), int(_max(flat, [], False).item())
        if lo < 0 or hi >= n:
            raise IndexError("embedding: ids must be in [0, {}), got values in [{}, {}]".format(n, lo, hi))
    if sparse and isinstance(weight, Parameter) and not weight.stop_gradient and _C.is_grad_enabled() \
            and not _static.is_symbolic(flat):
        out = _RowSparseLookup.apply(flat, weight)
    else:
        out = _index_select(weight, flat, 0)
    if padding_idx is not None:
        keep = _cast(flat != padding_idx, weight.dtype).reshape([-1, 1])
        out = out * keep
    return out.reshape(list(x.shape) + [weight.shape[1]])


def one_hot(x, num_classes, name=None):
    """float32 one-hot vectors of the integer x along a new last axis."""
    if x.dtype not in (_C.to_dtype("int32"), _C.to_dtype("int64")):
        raise TypeError("one_hot: x.dtype must be int32 or int64, got {}".format(x.dtype))
    num_classes = int(num_classes)
    if num_classes <= 0:
        raise ValueError("one_hot: num_classes must be positive, got {}".format(num_classes))
    if x.size > 0 and not _static.is_symbolic(x):  # a program variable has no values to check yet
        lo, hi = int(_min(x, [], False).item()), int(_max(x, [], False).item())
        if lo < 0 or hi >= num_classes:
            raise ValueError("one_hot: values of x must be in [0, {}), got values in [{}, {}]"
                             .format(num_classes, lo, hi))
    rng = _arange(0.0, float(num_classes), 1.0, x.dtype, place=x.place)
    return _cast(_equal(x.unsqueeze(-1), rng), _C.to_dtype("float32"))


def label_smooth(label, prior_dist=None, epsilon=0.1, name=None):
    """(1 - epsilon) * label + epsilon * prior (uniform 1 / num_classes by default)."""
    if not 0 <= epsilon <= 1:
        raise ValueError("label_smooth: epsilon must be in [0, 1], got {}".format(epsilon))
    if prior_dist is None:
        if label.ndim == 0 or label.shape[-1] == 0:
            raise ValueError("label_smooth: label must have a non-empty last dimension (the classes), got shape {}"
                             .format(label.shape))
        return label * (1.0 - epsilon) + epsilon / label.shape[-1]
    return label * (1.0 - epsilon) + prior_dist * float(epsilon)


def cosine_similarity(x1, x2, axis=1, eps=1e-8):
    """sum(x1 * x2) / sqrt(max(sum(x1^2) * sum(x2^2), eps^2)) along axis."""
    w12 = _sum(x1 * x2, [axis], False)
    w1 = _sum(x1 * x1, [axis], False)
    w2 = _sum(x2 * x2, [axis], False)
    n12 = _sqrt(_maximum(w1 * w2, _const([], eps * eps, w12)))
    return w12 / n12


def pairwise_distance(x, y, p=2.0, epsilon=1e-6, keepdim=False, name=None):
    """||x - y + epsilon||_p along the last axis."""
    from ...tensor.linalg import _vector_norm
    return _vector_norm(x - y + float(epsilon), p, [-1], keepdim)


def sequence_mask(x, maxlen=None, dtype="int64", name=None):
    """mask[..., j] = j < x[...]: one row of maxlen entries per length in x (an integer tensor). maxlen
    defaults to max(x); it may be an int or a one-element tensor."""
    from ...tensor.creation import arange
    # Paddle also takes float lengths (mask[..., j] = j < x)
    if not isinstance(x, _C.Tensor) or x.dtype not in (_C.int32, _C.int64, _C.float32, _C.float64):
        raise TypeError("sequence_mask: x must be an int32, int64, float32 or float64 Tensor, got {}".format(
            getattr(x, "dtype", type(x).__name__)))
    if maxlen is None:
        if _static.is_symbolic(x):
            raise ValueError("sequence_mask: maxlen is needed for the program variable {!r} "
                             "(its largest value is not known while the program is built)".format(x.name))
        maxlen = int(math.ceil(x.max().item())) if x.size > 0 else 0
    elif isinstance(maxlen, _C.Tensor):
        if _static.is_symbolic(maxlen) or maxlen.size != 1:
            raise TypeError("sequence_mask: maxlen must be an int or a one-element Tensor with a value")
        maxlen = int(maxlen.reshape([]).item())
    if isinstance(maxlen, bool) or not isinstance(maxlen, int) or maxlen < 0:
        raise ValueError("sequence_mask: maxlen must be a non-negative int, got {!r}".format(maxlen))
    steps = arange(0, maxlen, dtype=x.dtype)
    if x.place != steps.place:
        steps = steps.to(x.place)
    return _cast(steps < x.unsqueeze(-1), dtype)


def class_center_sample(label, num_classes, num_samples, group=None):
    """PartialFC's class sampling: every class present in `label` (sorted) plus, when those are fewer than
    num_samples, distinct random other classes up to num_samples. Returns (label remapped to positions in
    the sampled list, the sampled class ids). The result's size depends on the values, so it runs eagerly
    (not inside a static program)."""
    import numpy as np
    from ...tensor.creation import to_tensor
    from ...tensor.random import randperm
    if group is not None:
        raise NotImplementedError("class_center_sample: group (model parallelism) is not supported")
    if not isinstance(label, _C.Tensor) or label.dtype not in (_C.int32, _C.int64):
        raise TypeError("class_center_sample: label must be an int32 or int64 Tensor, got {}".format(
            getattr(label, "dtype", type(label).__name__)))
    if _static.is_symbolic(label):
        raise ValueError("class_center_sample: the number of sampled classes depends on the values of "
                         "label; it cannot run inside a static program")
    for what, v in (("num_classes", num_classes), ("num_samples", num_samples)):
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise ValueError("class_center_sample: {} must be a positive int, got {!r}".format(what, v))
    if num_samples > num_classes:
        raise ValueError("class_center_sample: num_samples ({}) must not exceed num_classes ({})".format(
            num_samples, num_classes))
    if label.ndim != 1 or label.shape[0] == 0:
        raise ValueError("class_center_sample: label must be a non-empty 1-D Tensor, got shape {}".format(label.shape))
    lab = label._numpy_view() if hasattr(label, "_numpy_view") else label.numpy()
    if lab.min() < 0 or lab.max() >= num_classes:
        raise ValueError("class_center_sample: label values must be in [0, {}), got values in [{}, {}]".format(
            num_classes, int(lab.min()), int(lab.max())))
    positives = np.unique(lab)  # sorted
    sampled = positives
    if len(positives) < num_samples:
        is_pos = np.zeros(num_classes, bool)
        is_pos[positives] = True
        negatives = np.flatnonzero(~is_pos)
        order = randperm(len(negatives), dtype="int64").numpy()  # the global generator: oar.seed applies
        sampled = np.concatenate([positives, negatives[order[:num_samples - len(positives)]]])
    remapped = np.searchsorted(positives, lab)
    return (to_tensor(remapped.astype(lab.dtype), place=label.place),
            to_tensor(sampled.astype(lab.dtype), place=label.place))
