"""oar.signal: the short-time Fourier transform (Paddle 2.x's paddle.signal.stft / istft).

Framing is an index_select of overlapping windows, overlap-add a fold of them back, and the
transforms are oar.fft's ops, so both are differentiable.
"""
import numpy as np

from . import _C
from . import fft as _fft
from .tensor import manipulation as _mp
from .nn import functional as _F

__all__ = ["stft", "istft"]

_index_select = _C.Op("index_select", "axis")
_index_add = _C.Op("index_add", "axis")
_fill = _C.Op("fill", "shape", "value", "dtype")


def _to_index(a, place):
    from .tensor.creation import to_tensor
    return to_tensor(np.asarray(a, np.int64), place=place)


def _window_positions(frame_length, hop_length, n_frames, place):
    """Flat positions of frame f's sample i, laid out [frame_length, n_frames] (Paddle's frame)."""
    idx = np.arange(frame_length)[:, None] + hop_length * np.arange(n_frames)[None, :]
    return _to_index(idx.reshape(-1), place)


def _frame(x, frame_length, hop_length):
    """[..., L] -> [..., frame_length, n_frames] of overlapping frames."""
    n_frames = 1 + (x.shape[-1] - frame_length) // hop_length
    out = _index_select(x, _window_positions(frame_length, hop_length, n_frames, x.place), x.ndim - 1)
    return _C._reshape(out, list(x.shape[:-1]) + [frame_length, n_frames])


def _overlap_add(x, hop_length):
    """[B, frame_length, n_frames] -> [B, (n_frames - 1) * hop + frame_length], frames summed (a fold with
    a 1 x frame_length kernel, which needs no zero tensor of the run's batch size)."""
    frame_length, n_frames = x.shape[-2], x.shape[-1]
    length = (n_frames - 1) * hop_length + frame_length
    if x.dtype.is_complex:  # fold is real-only: an index_add of the frames into zeros
        idx = _window_positions(frame_length, hop_length, n_frames, x.place)
        flat = _C._reshape(x, [x.shape[0], frame_length * n_frames])
        return _index_add(_fill([x.shape[0], length], 0.0, x.dtype), idx, flat, 1)
    out = _F.fold(x, output_sizes=[1, length], kernel_sizes=[1, frame_length], strides=[1, hop_length])
    return _C._reshape(out, [x.shape[0], length])


def _check(cond, msg):
    if not cond:
        raise ValueError(msg)


def _centered_window(window, win_length, n_fft, dtype, fn):
    from .tensor.creation import ones
    if window is None:
        window = ones([win_length], dtype=dtype)
    else:
        _check(isinstance(window, _C.Tensor) and window.ndim == 1 and window.shape[0] == win_length,
               "{}: expected a 1-D window tensor of size win_length ({}), got {}".format(
                   fn, win_length, getattr(window, "shape", window)))
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        window = _mp.pad(window, [left, n_fft - win_length - left])
    return window


def stft(x, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=True, name=None):
    """STFT of a 1-D [L] or 2-D [B, L] signal: [(B,) n_fft // 2 + 1 (or n_fft), n_frames] complex.

    Frames of n_fft samples every hop_length (default n_fft // 4), multiplied by the window (zero-padded
    to n_fft when win_length < n_fft), after padding n_fft // 2 samples on both sides when `center`."""
    _check(isinstance(x, _C.Tensor), "stft: x must be a Tensor, got {}".format(type(x).__name__))
    _check(x.ndim in (1, 2), "stft: x should be a 1-D or 2-D tensor, got rank {}".format(x.ndim))
    _check(isinstance(n_fft, (int, np.integer)) and n_fft > 0, "stft: n_fft must be a positive int, got {!r}".format(
        n_fft))
    rank1 = x.ndim == 1
    if rank1:
        x = _C._reshape(x, [1, x.shape[0]])
    hop_length = n_fft // 4 if hop_length is None else hop_length
    _check(hop_length > 0, "stft: hop_length should be > 0, got {}".format(hop_length))
    win_length = n_fft if win_length is None else win_length
    _check(0 < win_length <= n_fft, "stft: win_length should be in (0, n_fft ({})], got {}".format(n_fft, win_length))
    complex_in = x.dtype.is_complex
    if not complex_in and not x.dtype.is_floating_point:
        x = _mp.cast(x, _C.get_default_dtype())
    window = _centered_window(window, win_length, n_fft, x.dtype, "stft")
    if center:
        _check(pad_mode in ("constant", "reflect"),
               "stft: pad_mode should be 'reflect' or 'constant', got {!r}".format(pad_mode))
        p = n_fft // 2
        _check(pad_mode == "constant" or p < x.shape[-1],
               "stft: reflect padding of {} needs more than {} samples, got {}".format(p, p, x.shape[-1]))
        x = _C._reshape(_mp.pad(_C._reshape(x, [x.shape[0], 1, x.shape[1]]), [p, p], mode=pad_mode,
                                data_format="NCL"), [x.shape[0], x.shape[1] + 2 * p])
    _check(n_fft <= x.shape[-1], "stft: n_fft should be in (0, seq_length ({})], got {}".format(x.shape[-1], n_fft))
    frames = _frame(x, n_fft, hop_length)                 # [B, n_fft, n_frames]
    frames = _mp.transpose(frames, [0, 2, 1]) * window    # [B, n_frames, n_fft]
    norm = "ortho" if normalized else "backward"
    if complex_in or window.dtype.is_complex:
        _check(not onesided, "stft: onesided should be False when the input or the window is complex")
        out = _fft._c2c(frames, None, [-1], norm, True, "stft")
    else:
        out = _fft._r2c(frames, None, [-1], norm, True, onesided, "stft")
    out = _mp.transpose(out, [0, 2, 1])
    return _C._reshape(out, list(out.shape[1:])) if rank1 else out


def istft(x, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False, onesided=True,
          length=None, return_complex=False, name=None):
    """The inverse of stft by weighted overlap-add (least squares when frames overlap); raises when the
    window's squared overlap-add has a zero (the NOLA condition)."""
    _check(isinstance(x, _C.Tensor) and x.dtype.is_complex,
           "istft: x must be a complex64/complex128 Tensor, got {}".format(getattr(x, "dtype", type(x).__name__)))
    _check(x.ndim in (2, 3), "istft: x should be a 2-D or 3-D complex tensor, got rank {}".format(x.ndim))
    rank2 = x.ndim == 2
    if rank2:
        x = _C._reshape(x, [1] + list(x.shape))
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    _check(0 < hop_length <= win_length, "istft: hop_length should be in (0, win_length ({})], got {}".format(
        win_length, hop_length))
    _check(0 < win_length <= n_fft, "istft: win_length should be in (0, n_fft ({})], got {}".format(n_fft, win_length))
    n_frames, fft_size = x.shape[-1], x.shape[-2]
    want = n_fft // 2 + 1 if onesided else n_fft
    _check(fft_size == want, "istft: x.shape[-2] should be {} (n_fft = {}, onesided = {}), got {}".format(
        want, n_fft, onesided, fft_size))
    real_dtype = _C.float32 if x.dtype == _C.complex64 else _C.float64
    window = _centered_window(window, win_length, n_fft, real_dtype, "istft")
    x = _mp.transpose(x, [0, 2, 1])  # [B, n_frames, fft_size]
    norm = "ortho" if normalized else "backward"
    if return_complex:
        _check(not onesided, "istft: onesided should be False when return_complex is True")
        out = _fft._c2c(x, None, [-1], norm, False, "istft")
    else:
        _check(not window.dtype.is_complex, "istft: the window must be real when return_complex is False")
        if not onesided:
            x = _C._slice(x, 2, 0, n_fft // 2 + 1, 1)
        out = _fft._c2r(x, [n_fft], [-1], norm, False, "istft")
    out = _overlap_add(_mp.transpose(out * window, [0, 2, 1]), hop_length)  # [B, L]
    w2 = window * window
    env = _C._reshape(_overlap_add(_mp.expand(_C._reshape(w2, [1, n_fft, 1]), [1, n_fft, n_frames]), hop_length),
                      [-1])
    start = n_fft // 2 if center else 0
    if length is None:
        stop = out.shape[-1] - (n_fft // 2 if center else 0)
    else:
        stop = start + length
        if stop > out.shape[-1]:  # Paddle slices; a longer request is zero-padded as torch does
            pad = stop - out.shape[-1]
            out = _mp.pad(out, [0, 0, 0, pad])
            env = _mp.concat([env, _fill([pad], 1.0, env.dtype)], 0)
    out = _C._slice(out, 1, start, stop, 1)
    env = _C._slice(env, 0, start, stop, 1)
    # The window is a constant, but inside to_static tensors have no values: checked when eager, as Paddle.
    env_min = float(np.min(np.abs(env.numpy()))) if _C._current_builder() is None and env.shape[0] else 1.0
    if env_min < 1e-11:
        raise ValueError("istft: the Nonzero Overlap Add (NOLA) condition failed: the window's squared "
                         "overlap-add has a zero (see scipy.signal.check_NOLA)")
    out = out / env
    return _C._reshape(out, list(out.shape[1:])) if rank2 else out


# Paddle's Tensor has stft/istft as methods.
_C.Tensor.stft = stft
_C.Tensor.istft = istft
