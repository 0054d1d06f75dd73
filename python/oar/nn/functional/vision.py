"""Resampling: interpolate/upsample, pixel_shuffle/unshuffle, channel_shuffle, unfold/fold,
grid_sample, affine_grid.

interpolate, unfold/fold and grid_sample are kernels (core ops "interpolate", "unfold", "fold",
"grid_sample"); the shuffles are reshape/transpose composites and affine_grid is a matmul composite.
"""
import numbers

import numpy as np

from ... import _C
from ...tensor.creation import to_tensor
from ...tensor.manipulation import reshape, transpose
from .conv import _ntuple, _to_first, _to_last
from .pooling import _adaptive_nd

__all__ = ["interpolate", "upsample", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "unfold", "fold",
           "grid_sample", "affine_grid", "temporal_shift"]

_interp = _C.Op("interpolate")
_index_select = _C.Op("index_select", "axis")
_cast = _C.Op("cast", "dtype")
_unfold = _C.Op("unfold")
_fold = _C.Op("fold")
_grid_sample = _C.Op("grid_sample")
_matmul = _C.Op("matmul")

_MODES = {"nearest": (0, None), "linear": (1, 1), "bilinear": (1, 2), "trilinear": (1, 3), "bicubic": (2, 2),
          "area": (None, None)}
_LAYOUTS = {"NCW": (1, False), "NWC": (1, True), "NCHW": (2, False), "NHWC": (2, True), "NCDHW": (3, False),
            "NDHWC": (3, True)}


def _scalar(v):
    if isinstance(v, _C.Tensor):
        v = v.tolist()
        if isinstance(v, list):
            return [float(a) for a in v]
    return v


def interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=False, align_mode=0,
                data_format="NCHW", name=None):
    """Resizes the spatial dims of x (Paddle's rules: with align_corners the corners map onto each
    other; otherwise align_mode 0 is half-pixel, 1 is asymmetric for linear modes)."""
    op = "interpolate"
    m = str(mode).lower()
    if m not in _MODES:
        raise ValueError("{}: mode must be one of {}, got {!r}".format(op, sorted(_MODES), mode))
    if data_format not in _LAYOUTS:
        raise ValueError("{}: data_format must be one of {}, got {!r}".format(op, sorted(_LAYOUTS), data_format))
    nd, last = _LAYOUTS[data_format]
    if x.ndim != nd + 2:
        raise ValueError("{}: x must be {}-D for data_format {}, got shape {}".format(op, nd + 2, data_format, x.shape))
    kind, need = _MODES[m]
    if need is not None and need != nd:
        raise ValueError("{}: mode {!r} needs {}-D spatial input, got {} ({})".format(op, mode, need, nd, data_format))
    if align_mode not in (0, 1):
        raise ValueError("{}: align_mode must be 0 or 1, got {!r}".format(op, align_mode))
    if align_corners and m in ("nearest", "area"):
        raise ValueError("{}: align_corners is only valid for linear/bilinear/trilinear/bicubic".format(op))
    if last:
        x = _to_first(x, nd)
    in_sizes = x.shape[2:]
    size, scale_factor = _scalar(size), _scalar(scale_factor)
    scales = None
    if size is not None:
        if isinstance(size, numbers.Integral):
            size = [int(size)] * nd
        size = [int(s.item()) if isinstance(s, _C.Tensor) else int(s) for s in size]
        if len(size) != nd:
            raise ValueError("{}: size must have {} values, got {}".format(op, nd, size))
    elif scale_factor is not None:
        scales = [float(scale_factor)] * nd if isinstance(scale_factor, numbers.Real) else [float(s) for s in scale_factor]
        if len(scales) != nd or any(s <= 0 for s in scales):
            raise ValueError("{}: scale_factor must be positive with {} values, got {!r}".format(op, nd, scale_factor))
        size = [int(n * s) for n, s in zip(in_sizes, scales)]
    else:
        raise ValueError("{}: one of size and scale_factor must be given".format(op))
    if any(s < 1 for s in size):
        raise ValueError("{}: output size must be positive, got {}".format(op, size))
    if kind is None:  # area: adaptive average pooling
        y = _adaptive_nd(nd, op, x, size, ("NCL", "NCHW", "NCDHW")[nd - 1], False)
    else:
        ratios = []
        for i in range(nd):
            n, o = in_sizes[i], size[i]
            if align_corners:
                r = (n - 1) / (o - 1) if o > 1 else 0.0
            elif scales is not None:
                r = 1.0 / scales[i]
            else:
                r = n / o
            ratios.append(float(np.float32(r)))  # Paddle computes the ratio in float32
        if kind == 0 and x.dtype in _INT_DTYPES:
            y = _nearest_by_index(x, size, ratios, int(align_mode))
        else:
            y = _interp(x, out_size=size, ratios=ratios, mode=kind, align_corners=int(bool(align_corners)),
                        align_mode=int(align_mode))
    return _to_last(y, nd) if last else y


_INT_DTYPES = (_C.uint8, _C.int8, _C.int16, _C.int32, _C.int64)


def _nearest_by_index(x, size, ratios, align_mode):
    """Nearest resizing of an integer tensor (Paddle supports it; the kernel is float-only): a gather
    along each spatial axis. The source indices come from the kernel itself, resizing an index ramp, so
    the mapping is the float path's exactly."""
    for i, (o, r) in enumerate(zip(size, ratios)):
        n = x.shape[2 + i]
        ramp = _C._from_numpy(np.arange(n, dtype=np.float64).reshape(1, 1, n), x.place)
        src = _interp(ramp, out_size=[o], ratios=[r], mode=0, align_corners=0, align_mode=align_mode)
        x = _index_select(x, _cast(src.reshape([o]), _C.int64), 2 + i)
    return x


def upsample(x, size=None, scale_factor=None, mode="nearest", align_corners=False, align_mode=0,
             data_format="NCHW", name=None):
    return interpolate(x, size, scale_factor, mode, align_corners, align_mode, data_format, name)


def _check4(x, op, data_format):
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError("{}: data_format must be 'NCHW' or 'NHWC', got {!r}".format(op, data_format))
    if x.ndim != 4:
        raise ValueError("{}: x must be 4-D, got shape {}".format(op, x.shape))
    return _to_first(x, 2) if data_format == "NHWC" else x


def pixel_shuffle(x, upscale_factor, data_format="NCHW", name=None):
    """[N, C*r*r, H, W] -> [N, C, H*r, W*r]."""
    op = "pixel_shuffle"
    x = _check4(x, op, data_format)
    r = int(upscale_factor)
    n, c, h, w = x.shape
    if r < 1 or c % (r * r):
        raise ValueError("{}: channels ({}) must be divisible by upscale_factor**2 ({})".format(op, c, r * r))
    y = reshape(transpose(reshape(x, [n, c // (r * r), r, r, h, w]), [0, 1, 4, 2, 5, 3]), [n, c // (r * r), h * r, w * r])
    return _to_last(y, 2) if data_format == "NHWC" else y


def pixel_unshuffle(x, downscale_factor, data_format="NCHW", name=None):
    """[N, C, H*r, W*r] -> [N, C*r*r, H, W]."""
    op = "pixel_unshuffle"
    x = _check4(x, op, data_format)
    r = int(downscale_factor)
    n, c, h, w = x.shape
    if r < 1 or h % r or w % r:
        raise ValueError("{}: height {} and width {} must be divisible by downscale_factor {}".format(op, h, w, r))
    y = reshape(transpose(reshape(x, [n, c, h // r, r, w // r, r]), [0, 1, 3, 5, 2, 4]), [n, c * r * r, h // r, w // r])
    return _to_last(y, 2) if data_format == "NHWC" else y


def channel_shuffle(x, groups, data_format="NCHW", name=None):
    op = "channel_shuffle"
    x = _check4(x, op, data_format)
    n, c, h, w = x.shape
    if not isinstance(groups, numbers.Integral) or groups < 1 or c % groups:
        raise ValueError("{}: channels ({}) must be divisible by groups ({!r})".format(op, c, groups))
    y = reshape(transpose(reshape(x, [n, groups, c // groups, h, w]), [0, 2, 1, 3, 4]), [n, c, h, w])
    return _to_last(y, 2) if data_format == "NHWC" else y


def _im2col_args(op, kernel_sizes, strides, paddings, dilations):
    k = _ntuple(kernel_sizes, 2, "kernel_sizes", op)
    s = _ntuple(strides, 2, "strides", op)
    d = _ntuple(dilations, 2, "dilations", op)
    if isinstance(paddings, numbers.Integral):
        p = [int(paddings)] * 4
    elif isinstance(paddings, (list, tuple)) and len(paddings) == 2:
        p = [int(paddings[0])] * 2 + [int(paddings[1])] * 2
    elif isinstance(paddings, (list, tuple)) and len(paddings) == 4:  # Paddle: [top, left, bottom, right]
        p = [int(paddings[0]), int(paddings[2]), int(paddings[1]), int(paddings[3])]
    else:
        raise ValueError("{}: paddings must be an int or a list of 2 or 4 ints, got {!r}".format(op, paddings))
    return dict(kernel_sizes=k, strides=s, paddings=p, dilations=d)


def unfold(x, kernel_sizes, strides=1, paddings=0, dilations=1, name=None):
    """im2col: [N, C, H, W] -> [N, C*kh*kw, L] (L sliding blocks)."""
    return _unfold(x, **_im2col_args("unfold", kernel_sizes, strides, paddings, dilations))


def fold(x, output_sizes, kernel_sizes, strides=1, paddings=0, dilations=1, name=None):
    """col2im, the adjoint of unfold: [N, C*kh*kw, L] -> [N, C, H, W], overlapping blocks summed."""
    a = _im2col_args("fold", kernel_sizes, strides, paddings, dilations)
    return _fold(x, output_sizes=_ntuple(output_sizes, 2, "output_sizes", "fold"), **a)


_GS_MODES = {"bilinear": 0, "nearest": 1}
_GS_PADS = {"zeros": 0, "border": 1, "reflection": 2}


def grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=True, name=None):
    """Samples x [N, C, H, W] at grid [N, H_out, W_out, 2] ((x, y) in [-1, 1])."""
    op = "grid_sample"
    if mode not in _GS_MODES:
        raise ValueError("{}: mode must be 'bilinear' or 'nearest', got {!r}".format(op, mode))
    if padding_mode not in _GS_PADS:
        raise ValueError("{}: padding_mode must be 'zeros', 'border' or 'reflection', got {!r}".format(op, padding_mode))
    return _grid_sample(x, grid, mode=_GS_MODES[mode], padding_mode=_GS_PADS[padding_mode],
                        align_corners=int(bool(align_corners)))


def affine_grid(theta, out_shape, align_corners=True, name=None):
    """The sampling grid [N, H, W, 2] of the affine maps theta [N, 2, 3] for an output of out_shape
    [N, C, H, W]: base (x, y, 1) coordinates times theta^T."""
    op = "affine_grid"
    if _C._is_symbolic_building():
        from ...static import var_attrs
        if var_attrs.has_var(out_shape):
            return _affine_grid_var(theta, out_shape, align_corners)
    if isinstance(out_shape, _C.Tensor):
        out_shape = out_shape.tolist()
    out_shape = [int(v) for v in out_shape]
    if theta.ndim != 3 or theta.shape[1:] != [2, 3]:
        raise ValueError("{}: theta must have shape [N, 2, 3], got {}".format(op, theta.shape))
    if len(out_shape) != 4 or out_shape[0] != theta.shape[0]:
        raise ValueError("{}: out_shape must be [N, C, H, W] with N = {}, got {}".format(op, theta.shape[0], out_shape))
    n, _, h, w = out_shape
    _C._check_size(op, [n, h, w, 3], _C.float64, "cpu")  # the host grid below

    def lin(k):
        if align_corners:
            return np.linspace(-1.0, 1.0, k)
        return (np.arange(k) * 2.0 + 1.0) / k - 1.0

    xs, ys = np.meshgrid(lin(w), lin(h))
    base = np.stack([xs, ys, np.ones_like(xs)], axis=-1).reshape(1, h * w, 3)
    b = to_tensor(base, dtype=theta.dtype, place=theta.place)
    grid = _matmul(b, theta, transpose_y=1)  # [N, H*W, 2]
    return reshape(grid, [n, h, w, 2])


def _affine_grid_var(theta, out_shape, align_corners):
    """affine_grid in a program whose out_shape is a variable: the grid is built from ops whose extents
    are read when the program runs (decision 96)."""
    from ...static import var_attrs
    from ...tensor.creation import arange, linspace
    op = "affine_grid"
    if theta.ndim != 3 or theta.shape[1:] != [2, 3]:
        raise ValueError("{}: theta must have shape [N, 2, 3], got {}".format(op, theta.shape))
    built, shape = var_attrs.shape_var(out_shape, op, "out_shape")
    if len(built) != 4:
        raise ValueError("{}: out_shape must be [N, C, H, W], got {} values".format(op, len(built)))
    h, w = (_C._reshape(_C._slice(shape, 0, i, i + 1, 1), []) for i in (2, 3))

    def lin(k):
        if align_corners:
            return linspace(-1.0, 1.0, k, dtype=theta.dtype)
        return (arange(0, k, 1, dtype=theta.dtype) * 2.0 + 1.0) / _C.Op("cast", "dtype")(k, theta.dtype) - 1.0

    xs, ys = _C._reshape(lin(w), [1, -1]), _C._reshape(lin(h), [-1, 1])
    xs, ys = xs + ys * 0.0, ys + xs * 0.0  # [H, W] each, by broadcasting
    from ...tensor.manipulation import reshape, stack
    base = _C._reshape(stack([xs, ys, xs * 0.0 + 1.0], axis=-1), [1, -1, 3])
    grid = _matmul(base, theta, transpose_y=1)  # [N, H*W, 2]
    n = theta.shape[0] if theta.shape[0] >= 0 else _C._slice(shape, 0, 0, 1, 1)  # N is theta's
    return reshape(grid, [n, _C._reshape(h, [1]), _C._reshape(w, [1]), 2])


def temporal_shift(x, seg_num, shift_ratio=0.25, name=None, data_format="NCHW"):
    """TSM's shift of x [N*T, C, H, W] (T = seg_num) along time: the first C*shift_ratio channels take the
    previous frame's values, the next C*shift_ratio the next frame's (zeros past either end), the rest stay."""
    from ...tensor.manipulation import concat
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError("temporal_shift: data_format must be 'NCHW' or 'NHWC', got {!r}".format(data_format))
    if x.ndim != 4:
        raise ValueError("temporal_shift: x must be 4-D, got shape {}".format(x.shape))
    if isinstance(seg_num, bool) or not isinstance(seg_num, int) or seg_num <= 0:
        raise ValueError("temporal_shift: seg_num must be a positive int, got {!r}".format(seg_num))
    if not 0 < shift_ratio <= 0.5:
        raise ValueError("temporal_shift: shift_ratio must be in (0, 0.5], got {}".format(shift_ratio))
    if x.shape[0] % seg_num:
        raise ValueError("temporal_shift: the batch {} must be a multiple of seg_num {}".format(x.shape[0], seg_num))
    if data_format == "NHWC":
        x = x.transpose([0, 3, 1, 2])
    nt, c, h, w = x.shape
    c1, c2 = int(c * shift_ratio), int(c * 2 * shift_ratio)
    v = x.reshape([nt // seg_num, seg_num, c, h, w])
    zero = v[:, :1] * 0.0
    back = concat([zero[:, :, :c1], v[:, :-1, :c1]], axis=1)  # frame t gets t - 1
    fwd = concat([v[:, 1:, c1:c2], zero[:, :, c1:c2]], axis=1)  # frame t gets t + 1
    out = concat([back, fwd, v[:, :, c2:]], axis=2).reshape([nt, c, h, w])
    return out.transpose([0, 2, 3, 1]) if data_format == "NHWC" else out
