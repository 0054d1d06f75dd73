"""Mel scale conversions, filter banks, dB conversion and the DCT matrix (paddle.audio.functional).

The Slaney mel scale (linear below 1 kHz, logarithmic above) is the default; htk=True gives
2595 * log10(1 + f / 700). Constant matrices (filter banks, DCT) are computed in float64 numpy and
returned in `dtype`; conversions of Tensors are oar ops and stay differentiable."""
import math

import numpy as np

from ... import _C

_F_SP = 200.0 / 3  # Hz per mel in the linear part
_MIN_LOG_HZ = 1000.0
_MIN_LOG_MEL = _MIN_LOG_HZ / _F_SP
_LOGSTEP = math.log(6.4) / 27.0


def _oar():
    import oar
    return oar


def hz_to_mel(freq, htk=False):
    """Hz to mels (a float or a Tensor)."""
    if isinstance(freq, _C.Tensor):
        oar = _oar()
        if htk:
            return 2595.0 * oar.log10(1.0 + freq / 700.0)
        linear = freq / _F_SP
        log_part = _MIN_LOG_MEL + oar.log(freq / _MIN_LOG_HZ + 1e-10) / _LOGSTEP
        return oar.where(freq > _MIN_LOG_HZ, log_part, linear)
    if htk:
        return 2595.0 * math.log10(1.0 + freq / 700.0)
    if freq >= _MIN_LOG_HZ:
        return _MIN_LOG_MEL + math.log(freq / _MIN_LOG_HZ + 1e-10) / _LOGSTEP
    return freq / _F_SP


def mel_to_hz(mel, htk=False):
    """Mels to Hz (a float or a Tensor)."""
    if isinstance(mel, _C.Tensor):
        oar = _oar()
        if htk:
            return 700.0 * (oar.pow(oar.full_like(mel, 10.0), mel / 2595.0) - 1.0)
        linear = mel * _F_SP
        log_part = _MIN_LOG_HZ * oar.exp(_LOGSTEP * (mel - _MIN_LOG_MEL))
        return oar.where(mel > _MIN_LOG_MEL, log_part, linear)
    if htk:
        return 700.0 * (10.0 ** (mel / 2595.0) - 1.0)
    if mel >= _MIN_LOG_MEL:
        return _MIN_LOG_HZ * math.exp(_LOGSTEP * (mel - _MIN_LOG_MEL))
    return mel * _F_SP


def _mel_to_hz_np(m, htk):
    if htk:
        return 700.0 * (10.0 ** (m / 2595.0) - 1.0)
    return np.where(m >= _MIN_LOG_MEL, _MIN_LOG_HZ * np.exp(_LOGSTEP * (m - _MIN_LOG_MEL)), m * _F_SP)


def _mel_frequencies_np(n_mels, f_min, f_max, htk):
    mels = np.linspace(hz_to_mel(float(f_min), htk), hz_to_mel(float(f_max), htk), n_mels)
    return _mel_to_hz_np(mels, htk)


def _tensor(a, dtype):
    return _oar().to_tensor(np.asarray(a), dtype=dtype)


def mel_frequencies(n_mels=64, f_min=0.0, f_max=11025.0, htk=False, dtype="float32"):
    """n_mels frequencies (Hz) evenly spaced on the mel scale from f_min to f_max."""
    if int(n_mels) != n_mels or n_mels < 0:
        raise ValueError("mel_frequencies: n_mels must be a non-negative int, got {!r}".format(n_mels))
    return _tensor(_mel_frequencies_np(int(n_mels), f_min, f_max, htk), dtype)


def fft_frequencies(sr, n_fft, dtype="float32"):
    """The centre frequencies of the 1 + n_fft // 2 rfft bins at sample rate sr."""
    return _tensor(np.linspace(0, float(sr) / 2, int(1 + n_fft // 2)), dtype)


def compute_fbank_matrix(sr, n_fft, n_mels=64, f_min=0.0, f_max=None, htk=False, norm="slaney",
                         dtype="float32"):
    """The [n_mels, 1 + n_fft // 2] triangular mel filter bank. norm 'slaney' scales each filter to
    about constant energy; a number p normalises each row to unit p-norm; None leaves the peaks at 1."""
    if f_max is None:
        f_max = float(sr) / 2
    fftfreqs = np.linspace(0, float(sr) / 2, int(1 + n_fft // 2))
    mel_f = _mel_frequencies_np(n_mels + 2, f_min, f_max, htk)
    fdiff = np.diff(mel_f)
    ramps = mel_f[:, None] - fftfreqs[None, :]
    lower = -ramps[:n_mels] / fdiff[:n_mels, None]
    upper = ramps[2:n_mels + 2] / fdiff[1:n_mels + 1, None]
    weights = np.maximum(0.0, np.minimum(lower, upper))
    if norm == "slaney":
        weights *= (2.0 / (mel_f[2:n_mels + 2] - mel_f[:n_mels]))[:, None]
    elif isinstance(norm, (int, float)) and not isinstance(norm, bool):
        p = float(norm)
        n = np.sum(np.abs(weights) ** p, axis=-1, keepdims=True) ** (1.0 / p)
        weights = weights / np.maximum(n, 1e-12)  # paddle.nn.functional.normalize's epsilon
    elif norm is not None:
        raise ValueError("compute_fbank_matrix: norm must be 'slaney', a number or None, got {!r}".format(norm))
    return _tensor(weights, dtype)


def power_to_db(spect, ref_value=1.0, amin=1e-10, top_db=80.0):
    """10 * log10(max(spect, amin) / max(ref_value, amin)), floored at (max - top_db) when top_db is set."""
    if amin <= 0:
        raise ValueError("power_to_db: amin must be strictly positive, got {}".format(amin))
    if ref_value <= 0:
        raise ValueError("power_to_db: ref_value must be strictly positive, got {}".format(ref_value))
    oar = _oar()
    log_spec = 10.0 * oar.log10(oar.maximum(spect, oar.full_like(spect, amin)))
    log_spec = log_spec - 10.0 * math.log10(max(ref_value, amin))
    if top_db is not None:
        if top_db < 0:
            raise ValueError("power_to_db: top_db must be non-negative, got {}".format(top_db))
        log_spec = oar.maximum(log_spec, oar.full_like(log_spec, float(log_spec.max()) - top_db))
    return log_spec


def create_dct(n_mfcc, n_mels, norm="ortho", dtype="float32"):
    """The [n_mels, n_mfcc] DCT-II matrix (columns are the basis), orthonormal with norm='ortho'."""
    if norm not in (None, "ortho"):
        raise ValueError("create_dct: norm must be 'ortho' or None, got {!r}".format(norm))
    n = np.arange(n_mels, dtype=np.float64)
    k = np.arange(n_mfcc, dtype=np.float64)[:, None]
    dct = np.cos(math.pi / float(n_mels) * (n + 0.5) * k)
    if norm is None:
        dct *= 2.0
    else:
        dct[0] *= 1.0 / math.sqrt(2.0)
        dct *= math.sqrt(2.0 / float(n_mels))
    return _tensor(dct.T, dtype)
