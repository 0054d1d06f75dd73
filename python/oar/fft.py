"""oar.fft: discrete Fourier transforms with Paddle 2.x's API (paddle.fft).

Every transform is one of the three core ops fft_c2c, fft_r2c and fft_c2r (Paddle's op names and
attributes; FFTW on the CPU, docs/ops_fft.md). This module resizes the input to `n`/`s` (zero padding
or truncation, as Paddle), picks the op and normalises the axes the way Paddle does, so a program
records the same ops and attributes Paddle would.

norm: "backward" (no scaling forward, 1/n inverse), "ortho" (1/sqrt(n) both ways) or "forward"
(1/n forward, none inverse).
"""
from collections.abc import Sequence

import numpy as np

from . import _C
from .tensor import manipulation as _mp
from .tensor.creation import arange as _arange

__all__ = [
    "fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2", "fftn",
    "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift",
]

_c2c_op = _C.Op("fft_c2c", "axes", "normalization", "forward")
_r2c_op = _C.Op("fft_r2c", "axes", "normalization", "forward", "onesided")
_c2r_op = _C.Op("fft_c2r", "axes", "normalization", "forward", "last_dim_size")
_fill = _C.Op("fill", "shape", "value", "dtype")


# ---- argument checks (Paddle's messages) ------------------------------------------------------------
def _check_tensor(x, fn):
    if not isinstance(x, _C.Tensor):
        raise TypeError("fft.{}: x must be a Tensor, got {}".format(fn, type(x).__name__))


def _check_norm(norm, fn):
    if norm not in ("forward", "backward", "ortho"):
        raise ValueError("fft.{}: unexpected norm {!r}; norm should be 'forward', 'backward' or 'ortho'".format(
            fn, norm))


def _is_int(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _check_n(n, fn):
    if not _is_int(n):
        raise ValueError("fft.{}: invalid FFT argument n ({!r}), it should be an integer".format(fn, n))
    if n <= 0:
        raise ValueError("fft.{}: invalid FFT argument n ({}), it should be positive".format(fn, n))


def _check_axis(x, axis, fn):
    nd = x.ndim
    if not _is_int(axis):
        raise ValueError("fft.{}: invalid FFT axis ({!r}), it should be an integer".format(fn, axis))
    if axis < -nd or axis >= nd:
        raise ValueError("fft.{}: invalid FFT axis ({}), it should be in range [-{}, {})".format(fn, axis, nd, nd))
    return int(axis) % nd


def _check_s(x, s, fn):
    if not isinstance(s, Sequence):
        raise ValueError("fft.{}: invalid FFT argument s ({!r}), it should be a sequence of integers".format(fn, s))
    if len(s) > x.ndim:
        raise ValueError("fft.{}: length of s ({}) should not be larger than the rank of x ({})".format(
            fn, len(s), x.ndim))
    for v in s:
        if not _is_int(v) or v <= 0:
            raise ValueError("fft.{}: FFT sizes {} contain an invalid value ({!r})".format(fn, list(s), v))
    return [int(v) for v in s]


def _check_axes(x, axes, fn):
    nd = x.ndim
    if not isinstance(axes, Sequence):
        raise ValueError("fft.{}: invalid FFT axes ({!r}), it should be a sequence of integers".format(fn, axes))
    if len(axes) > nd:
        raise ValueError("fft.{}: length of axes ({}) should not be larger than the rank of x ({})".format(
            fn, len(axes), nd))
    out = []
    for a in axes:
        if not _is_int(a) or a < -nd or a >= nd:
            raise ValueError("fft.{}: FFT axes {} contain an invalid value ({!r}), it should be in range "
                             "[-{}, {})".format(fn, list(axes), a, nd, nd))
        out.append(int(a) % nd)
    if len(set(out)) != len(out):
        raise ValueError("fft.{}: FFT axes {} repeat an axis".format(fn, list(axes)))
    return out


# ---- dtypes ----------------------------------------------------------------------------------------
def _real_input(x, fn):
    """x as float32/float64 for r2c: integers take the default dtype, float16/bfloat16 float32."""
    d = x.dtype
    if d.is_complex:
        raise TypeError("fft.{}: x must be real (this transform takes a real signal), got {}".format(fn, d))
    if d in (_C.float32, _C.float64):
        return x
    if d.is_floating_point:
        return _mp.cast(x, _C.float32)
    return _mp.cast(x, _C.get_default_dtype())


def _complex_input(x):
    """x as complex64/complex128 for c2c/c2r (real inputs are cast at their precision)."""
    if x.dtype.is_complex:
        return x
    x = _real_input(x, "")
    return _mp.cast(x, _C.complex128 if x.dtype == _C.float64 else _C.complex64)


def _resize(x, sizes, axes):
    """Zero-pads or truncates x to sizes[i] along axes[i] (Paddle's _resize_fft_input)."""
    for n, a in zip(sizes, axes):
        cur = x.shape[a]
        if cur > n:
            x = _C._slice(x, a, 0, n, 1)
        elif cur < n:
            shape = list(x.shape)
            shape[a] = n - cur
            x = _mp.concat([x, _fill(shape, 0.0, x.dtype)], a)
    return x


# ---- the three transform kinds, 1-D and N-D ---------------------------------------------------------
def _norm_axes_and_s(x, s, axes, fn, sort_all):
    """Paddle's axis handling: axes default to the last len(s) (or all) dims; given axes are sorted
    (c2c) or sorted except the last one, which stays last (r2c/c2r: it is the halved axis)."""
    if s is not None:
        s = _check_s(x, s, fn)
    if axes is None:
        axes = list(range(x.ndim - len(s), x.ndim)) if s is not None else list(range(x.ndim))
    else:
        axes = _check_axes(x, axes, fn)
        order = list(np.argsort(axes)) if sort_all else list(np.argsort(axes[:-1])) + [len(axes) - 1]
        if s is not None and len(s) != len(axes):
            raise ValueError("fft.{}: length of s ({}) and length of axes ({}) do not match".format(
                fn, len(s), len(axes)))
        axes = [axes[i] for i in order]
        if s is not None:
            s = [s[i] for i in order]
    if not axes:
        raise ValueError("fft.{}: no axes to transform (x has rank {})".format(fn, x.ndim))
    return s, axes


def _c2c(x, s, axes, norm, forward, fn):
    _check_tensor(x, fn)
    _check_norm(norm, fn)
    x = _complex_input(x)
    s, axes = _norm_axes_and_s(x, s, axes, fn, True)
    if s is not None:
        x = _resize(x, s, axes)
    return _c2c_op(x, axes, norm, int(forward))


def _r2c(x, s, axes, norm, forward, onesided, fn):
    _check_tensor(x, fn)
    _check_norm(norm, fn)
    x = _real_input(x, fn)
    s, axes = _norm_axes_and_s(x, s, axes, fn, False)
    if s is not None:
        x = _resize(x, s, axes)
    return _r2c_op(x, axes, norm, int(forward), int(onesided))


def _c2r(x, s, axes, norm, forward, fn):
    _check_tensor(x, fn)
    _check_norm(norm, fn)
    x = _complex_input(x)
    s, axes = _norm_axes_and_s(x, s, axes, fn, False)
    if s is not None:
        x = _resize(x, s[:-1] + [s[-1] // 2 + 1], axes)
    elif x.shape[axes[-1]] < 2:
        raise ValueError("fft.{}: the default output length 2 * (m - 1) is 0 for axis {} of size {}; pass "
                         "n (or s)".format(fn, axes[-1], x.shape[axes[-1]]))
    return _c2r_op(x, axes, norm, int(forward), s[-1] if s is not None else 0)


def _one(x, n, axis, fn):
    _check_tensor(x, fn)
    axis = _check_axis(x, -1 if axis is None else axis, fn)
    if n is not None:
        _check_n(n, fn)
        return [int(n)], [axis]
    return None, [axis]


# ---- public API: 1-D --------------------------------------------------------------------------------
def fft(x, n=None, axis=-1, norm="backward", name=None):
    """The 1-D DFT of x along axis (a real x gives the full, two-sided spectrum)."""
    s, axes = _one(x, n, axis, "fft")
    if x.dtype.is_complex:
        return _c2c(x, s, axes, norm, True, "fft")
    return _r2c(x, s, axes, norm, True, False, "fft")


def ifft(x, n=None, axis=-1, norm="backward", name=None):
    """The 1-D inverse DFT of x along axis."""
    s, axes = _one(x, n, axis, "ifft")
    if x.dtype.is_complex:
        return _c2c(x, s, axes, norm, False, "ifft")
    return _r2c(x, s, axes, norm, False, False, "ifft")


def rfft(x, n=None, axis=-1, norm="backward", name=None):
    """The one-sided (n // 2 + 1 bins) DFT of a real x."""
    s, axes = _one(x, n, axis, "rfft")
    return _r2c(x, s, axes, norm, True, True, "rfft")


def irfft(x, n=None, axis=-1, norm="backward", name=None):
    """The inverse of rfft: a real signal of length n (default 2 * (m - 1)) from its one-sided spectrum."""
    s, axes = _one(x, n, axis, "irfft")
    return _c2r(x, s, axes, norm, False, "irfft")


def hfft(x, n=None, axis=-1, norm="backward", name=None):
    """The DFT of a signal with Hermitian symmetry given by its first half: a real result of length n."""
    s, axes = _one(x, n, axis, "hfft")
    return _c2r(x, s, axes, norm, True, "hfft")


def ihfft(x, n=None, axis=-1, norm="backward", name=None):
    """The inverse of hfft: the one-sided inverse DFT of a real x."""
    s, axes = _one(x, n, axis, "ihfft")
    return _r2c(x, s, axes, norm, False, True, "ihfft")


# ---- public API: N-D --------------------------------------------------------------------------------
def fftn(x, s=None, axes=None, norm="backward", name=None):
    _check_tensor(x, "fftn")
    if x.dtype.is_complex:
        return _c2c(x, s, axes, norm, True, "fftn")
    return _r2c(x, s, axes, norm, True, False, "fftn")


def ifftn(x, s=None, axes=None, norm="backward", name=None):
    _check_tensor(x, "ifftn")
    if x.dtype.is_complex:
        return _c2c(x, s, axes, norm, False, "ifftn")
    return _r2c(x, s, axes, norm, False, False, "ifftn")


def rfftn(x, s=None, axes=None, norm="backward", name=None):
    return _r2c(x, s, axes, norm, True, True, "rfftn")


def irfftn(x, s=None, axes=None, norm="backward", name=None):
    return _c2r(x, s, axes, norm, False, "irfftn")


def hfftn(x, s=None, axes=None, norm="backward", name=None):
    return _c2r(x, s, axes, norm, True, "hfftn")


def ihfftn(x, s=None, axes=None, norm="backward", name=None):
    return _r2c(x, s, axes, norm, False, True, "ihfftn")


# ---- public API: 2-D (the N-D forms on two axes, checked as Paddle) ---------------------------------
def _two(x, s, axes, fn):
    _check_tensor(x, fn)
    if x.ndim < 2:
        raise ValueError("fft.{}: the rank of the input ({}) should be >= 2".format(fn, x.ndim))
    if s is not None and (not isinstance(s, Sequence) or len(s) != 2):
        raise ValueError("fft.{}: invalid FFT argument s ({!r}), it should be a sequence of 2 integers".format(fn, s))
    if axes is not None and (not isinstance(axes, Sequence) or len(axes) != 2):
        raise ValueError("fft.{}: invalid FFT argument axes ({!r}), it should be a sequence of 2 integers".format(
            fn, axes))


def fft2(x, s=None, axes=(-2, -1), norm="backward", name=None):
    _two(x, s, axes, "fft2")
    return fftn(x, s, axes, norm)


def ifft2(x, s=None, axes=(-2, -1), norm="backward", name=None):
    _two(x, s, axes, "ifft2")
    return ifftn(x, s, axes, norm)


def rfft2(x, s=None, axes=(-2, -1), norm="backward", name=None):
    _two(x, s, axes, "rfft2")
    return rfftn(x, s, axes, norm)


def irfft2(x, s=None, axes=(-2, -1), norm="backward", name=None):
    _two(x, s, axes, "irfft2")
    return irfftn(x, s, axes, norm)


def hfft2(x, s=None, axes=(-2, -1), norm="backward", name=None):
    _two(x, s, axes, "hfft2")
    return hfftn(x, s, axes, norm)


def ihfft2(x, s=None, axes=(-2, -1), norm="backward", name=None):
    _two(x, s, axes, "ihfft2")
    return ihfftn(x, s, axes, norm)


# ---- frequencies and shifts -------------------------------------------------------------------------
def _freq_args(n, d, fn):
    if not _is_int(n) or n <= 0:
        raise ValueError("fft.{}: n must be a positive integer, got {!r}".format(fn, n))
    if d * n == 0:
        raise ValueError("fft.{}: d or n should not be 0".format(fn))


def fftfreq(n, d=1.0, dtype=None, name=None):
    """Sample frequencies [0, 1, ..., -(n // 2), ..., -1] / (d * n) (default dtype unless given)."""
    _freq_args(n, d, "fftfreq")
    dtype = dtype or _C.get_default_dtype()
    pos = (n + 1) // 2
    idx = _mp.roll(_arange(-(n // 2), pos, dtype=dtype), -(n // 2))
    return idx * (1.0 / (n * d))


def rfftfreq(n, d=1.0, dtype=None, name=None):
    """Sample frequencies [0, 1, ..., n // 2] / (d * n) of rfft."""
    _freq_args(n, d, "rfftfreq")
    dtype = dtype or _C.get_default_dtype()
    return _arange(0, n // 2 + 1, dtype=dtype) * (1.0 / (n * d))


def _shift(x, axes, sign, fn):
    _check_tensor(x, fn)
    if axes is None:
        axes = list(range(x.ndim))
    elif _is_int(axes):
        axes = [axes]
    axes = [_check_axis(x, a, fn) for a in axes]
    if not axes:
        return x
    return _mp.roll(x, [sign * (x.shape[a] // 2) for a in axes], axes)


def fftshift(x, axes=None, name=None):
    """Moves the zero-frequency bin to the centre (roll by n // 2 along each axis)."""
    return _shift(x, axes, 1, "fftshift")


def ifftshift(x, axes=None, name=None):
    """The inverse of fftshift (roll by -(n // 2))."""
    return _shift(x, axes, -1, "ifftshift")
