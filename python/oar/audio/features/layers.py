"""Spectrogram layers (paddle.audio.features): input [B, L] (or [L]) waveforms, output [B, bins, frames]."""
from ... import nn
from ... import signal as _signal
from ..functional import compute_fbank_matrix, create_dct, get_window, power_to_db


def _oar():
    import oar
    return oar


def _power_of_magnitude(z, power):
    """|z| ** power of a complex tensor, from its real and imaginary parts."""
    oar = _oar()
    re, im = oar.real(z), oar.imag(z)  # with Paddle's conjugate gradients (decision 99)
    sq = re * re + im * im
    return sq if power == 2.0 else oar.pow(sq, power / 2.0)


class Spectrogram(nn.Layer):
    """|STFT(x)| ** power with a `window` of win_length points (default n_fft)."""

    def __init__(self, n_fft=512, hop_length=512, win_length=None, window="hann", power=1.0, center=True,
                 pad_mode="reflect", dtype="float32"):
        super().__init__()
        if not power > 0:
            raise ValueError("Spectrogram: power must be > 0, got {}".format(power))
        self.power = float(power)
        win_length = n_fft if win_length is None else win_length
        self.n_fft, self.hop_length, self.win_length = n_fft, hop_length, win_length
        self.center, self.pad_mode = center, pad_mode
        self.register_buffer("fft_window", get_window(window, win_length, fftbins=True, dtype=dtype))

    def forward(self, x):
        z = _signal.stft(x, n_fft=self.n_fft, hop_length=self.hop_length, win_length=self.win_length,
                         window=self.fft_window, center=self.center, pad_mode=self.pad_mode)
        return _power_of_magnitude(z, self.power)


class MelSpectrogram(nn.Layer):
    """The mel filter bank applied to a power spectrogram: [B, n_mels, frames]."""

    def __init__(self, sr=22050, n_fft=2048, hop_length=512, win_length=None, window="hann", power=2.0,
                 center=True, pad_mode="reflect", n_mels=64, f_min=50.0, f_max=None, htk=False, norm="slaney",
                 dtype="float32"):
        super().__init__()
        self._spectrogram = Spectrogram(n_fft=n_fft, hop_length=hop_length, win_length=win_length, window=window,
                                        power=power, center=center, pad_mode=pad_mode, dtype=dtype)
        self.n_mels, self.f_min, self.f_max, self.htk, self.norm = n_mels, f_min, f_max, htk, norm
        if f_max is None:
            f_max = sr // 2
        self.register_buffer("fbank_matrix", compute_fbank_matrix(sr=sr, n_fft=n_fft, n_mels=n_mels, f_min=f_min,
                                                                  f_max=f_max, htk=htk, norm=norm, dtype=dtype))

    def forward(self, x):
        return _oar().matmul(self.fbank_matrix, self._spectrogram(x))


class LogMelSpectrogram(nn.Layer):
    """power_to_db of a MelSpectrogram."""

    def __init__(self, sr=22050, n_fft=512, hop_length=None, win_length=None, window="hann", power=2.0,
                 center=True, pad_mode="reflect", n_mels=64, f_min=50.0, f_max=None, htk=False, norm="slaney",
                 ref_value=1.0, amin=1e-10, top_db=None, dtype="float32"):
        super().__init__()
        self._melspectrogram = MelSpectrogram(sr=sr, n_fft=n_fft, hop_length=hop_length, win_length=win_length,
                                              window=window, power=power, center=center, pad_mode=pad_mode,
                                              n_mels=n_mels, f_min=f_min, f_max=f_max, htk=htk, norm=norm,
                                              dtype=dtype)
        self.ref_value, self.amin, self.top_db = ref_value, amin, top_db

    def forward(self, x):
        return power_to_db(self._melspectrogram(x), ref_value=self.ref_value, amin=self.amin, top_db=self.top_db)


class MFCC(nn.Layer):
    """The first n_mfcc DCT-II coefficients of a LogMelSpectrogram: [B, n_mfcc, frames]."""

    def __init__(self, sr=22050, n_mfcc=40, n_fft=512, hop_length=None, win_length=None, window="hann", power=2.0,
                 center=True, pad_mode="reflect", n_mels=64, f_min=50.0, f_max=None, htk=False, norm="slaney",
                 ref_value=1.0, amin=1e-10, top_db=None, dtype="float32"):
        super().__init__()
        if n_mfcc > n_mels:
            raise ValueError("MFCC: n_mfcc cannot be larger than n_mels: {} vs {}".format(n_mfcc, n_mels))
        self._log_melspectrogram = LogMelSpectrogram(
            sr=sr, n_fft=n_fft, hop_length=hop_length, win_length=win_length, window=window, power=power,
            center=center, pad_mode=pad_mode, n_mels=n_mels, f_min=f_min, f_max=f_max, htk=htk, norm=norm,
            ref_value=ref_value, amin=amin, top_db=top_db, dtype=dtype)
        self.register_buffer("dct_matrix", create_dct(n_mfcc=n_mfcc, n_mels=n_mels, dtype=dtype))

    def forward(self, x):
        oar = _oar()
        log_mel = self._log_melspectrogram(x)
        return oar.transpose(oar.matmul(oar.transpose(log_mel, [0, 2, 1]), self.dct_matrix), [0, 2, 1])
