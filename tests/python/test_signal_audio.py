"""oar.signal (stft/istft) and oar.audio (functional, features) against float64 numpy references."""
import math

import numpy as np
import pytest

import oar
from oar.audio import features, functional as AF

RNG = np.random.default_rng(11)


# ---- numpy references ---------------------------------------------------------------------------------
def stft_np(x, n_fft, hop, win, center=True, pad_mode="reflect", normalized=False, onesided=True):
    """x [B, L], win [n_fft] -> [B, bins, frames]."""
    if center:
        p = n_fft // 2
        x = np.pad(x, [(0, 0), (p, p)], mode=pad_mode)
    n_frames = 1 + (x.shape[-1] - n_fft) // hop
    frames = np.stack([x[:, f * hop:f * hop + n_fft] * win for f in range(n_frames)], axis=1)
    norm = "ortho" if normalized else "backward"
    spec = np.fft.rfft(frames, axis=-1, norm=norm) if onesided else np.fft.fft(frames, axis=-1, norm=norm)
    return np.transpose(spec, (0, 2, 1))


def hann_periodic(m):
    return 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(m) / m)


def slaney_mel(f):
    f = np.asarray(f, np.float64)
    return np.where(f >= 1000, 15 + np.log(f / 1000 + 1e-10) / (np.log(6.4) / 27), f * 3 / 200)


def slaney_hz(m):
    m = np.asarray(m, np.float64)
    return np.where(m >= 15, 1000 * np.exp(np.log(6.4) / 27 * (m - 15)), m * 200 / 3)


def fbank_np(sr, n_fft, n_mels, f_min, f_max):
    """Slaney-normalised triangular filters, written from their definition."""
    bins = np.linspace(0, sr / 2, n_fft // 2 + 1)
    edges = slaney_hz(np.linspace(slaney_mel(f_min), slaney_mel(f_max), n_mels + 2))
    w = np.zeros((n_mels, bins.size))
    for i in range(n_mels):
        lo, c, hi = edges[i], edges[i + 1], edges[i + 2]
        up = (bins - lo) / (c - lo)
        down = (hi - bins) / (hi - c)
        w[i] = np.maximum(0, np.minimum(up, down)) * 2.0 / (hi - lo)
    return w


# ---- stft / istft -------------------------------------------------------------------------------------
@pytest.mark.parametrize("n_fft,hop,win_length,center,pad_mode,normalized,onesided", [
    (16, 4, None, True, "reflect", False, True),
    (16, 5, 12, True, "constant", True, True),
    (15, 3, None, False, "reflect", False, False),
    (8, 8, 8, True, "reflect", False, True),
])
def test_stft_against_numpy(n_fft, hop, win_length, center, pad_mode, normalized, onesided):
    x = RNG.uniform(-1, 1, size=(2, 64))
    wl = win_length or n_fft
    w = hann_periodic(wl)
    left = (n_fft - wl) // 2
    w_full = np.pad(w, (left, n_fft - wl - left))
    got = oar.signal.stft(oar.to_tensor(x), n_fft, hop_length=hop, win_length=win_length, window=oar.to_tensor(w),
                          center=center, pad_mode=pad_mode, normalized=normalized, onesided=onesided)
    want = stft_np(x, n_fft, hop, w_full, center, pad_mode, normalized, onesided)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-10)
    # a 1-D signal gives the same without the batch dim; the default window is all ones
    got1 = oar.signal.stft(oar.to_tensor(x[0]), n_fft, hop_length=hop, center=center, pad_mode=pad_mode)
    want1 = stft_np(x[:1], n_fft, hop, np.ones(n_fft), center, pad_mode)[0]
    np.testing.assert_allclose(got1.numpy(), want1, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("n_fft,hop,win_length,normalized,onesided", [
    (16, 4, None, False, True), (16, 4, 12, True, True), (15, 5, None, False, False), (32, 8, 20, False, True),
])
def test_istft_round_trip(n_fft, hop, win_length, normalized, onesided):
    x = RNG.uniform(-1, 1, size=(3, 100))
    w = oar.to_tensor(hann_periodic(win_length or n_fft))
    spec = oar.signal.stft(oar.to_tensor(x), n_fft, hop, win_length, w, normalized=normalized, onesided=onesided)
    back = oar.signal.istft(spec, n_fft, hop, win_length, w, normalized=normalized, onesided=onesided, length=100)
    np.testing.assert_allclose(back.numpy(), x, rtol=1e-9, atol=1e-9)
    # without `length` the centre padding is removed: the trailing partial frame is lost
    back = oar.signal.istft(spec[0], n_fft, hop, win_length, w, normalized=normalized, onesided=onesided)
    np.testing.assert_allclose(back.numpy(), x[0, :back.shape[0]], rtol=1e-9, atol=1e-9)


def test_istft_return_complex_round_trip():
    x = RNG.uniform(-1, 1, size=(40,)) + 1j * RNG.uniform(-1, 1, size=(40,))
    spec = oar.signal.stft(oar.to_tensor(x), 8, 2, onesided=False)
    back = oar.signal.istft(spec, 8, 2, onesided=False, return_complex=True, length=40)
    np.testing.assert_allclose(back.numpy(), x, rtol=1e-9, atol=1e-9)


def test_stft_gradient():
    x0 = RNG.uniform(-1, 1, size=(24,))
    w = hann_periodic(8)
    g = RNG.uniform(-1, 1, size=(5, 7))  # weights on |X|^2 through real parts: L = sum(g * Re(X))

    def loss(xv):
        return float(np.sum(g * np.real(stft_np(xv[None], 8, 4, w)[0])))

    t = oar.to_tensor(x0)
    t.stop_gradient = False
    spec = oar.signal.stft(t, 8, 4, window=oar.to_tensor(w))
    (gx,) = oar.grad([spec], [t], grad_outputs=[oar.to_tensor(g.astype(np.complex128))])
    num = np.zeros_like(x0)
    for i in range(x0.size):
        p, m = x0.copy(), x0.copy()
        p[i] += 1e-6
        m[i] -= 1e-6
        num[i] = (loss(p) - loss(m)) / 2e-6
    np.testing.assert_allclose(gx.numpy(), num, rtol=1e-6, atol=1e-7)


def test_stft_istft_errors():
    x = oar.to_tensor(RNG.uniform(size=(2, 3, 4)))
    with pytest.raises(ValueError, match="1-D or 2-D"):
        oar.signal.stft(x, 4)
    with pytest.raises(ValueError, match="win_length"):
        oar.signal.stft(oar.to_tensor(np.zeros(32)), 8, win_length=9)
    with pytest.raises(ValueError, match="window"):
        oar.signal.stft(oar.to_tensor(np.zeros(32)), 8, window=oar.to_tensor(np.ones(7)))
    with pytest.raises(ValueError, match="pad_mode"):
        oar.signal.stft(oar.to_tensor(np.zeros(32)), 8, pad_mode="circular")
    spec = oar.signal.stft(oar.to_tensor(np.zeros(32)), 8, 2)
    with pytest.raises(ValueError, match="complex"):
        oar.signal.istft(oar.to_tensor(np.zeros((5, 17))), 8)
    with pytest.raises(ValueError, match="shape"):
        oar.signal.istft(spec, 10)
    with pytest.raises(ValueError, match="NOLA"):
        oar.signal.istft(spec, 8, 2, window=oar.to_tensor(np.zeros(8)))


# ---- audio.functional -----------------------------------------------------------------------------------
def test_mel_conversions():
    f = np.array([0.0, 300.0, 999.0, 1000.0, 4000.0, 11025.0])
    np.testing.assert_allclose(AF.hz_to_mel(oar.to_tensor(f)).numpy(), slaney_mel(f), rtol=1e-9)  # the 1e-10 guard
    assert math.isclose(AF.hz_to_mel(4000.0), float(slaney_mel(4000.0)), rel_tol=1e-12)
    np.testing.assert_allclose(AF.hz_to_mel(oar.to_tensor(f), htk=True).numpy(), 2595 * np.log10(1 + f / 700),
                               rtol=1e-12)
    m = slaney_mel(f)
    np.testing.assert_allclose(AF.mel_to_hz(oar.to_tensor(m)).numpy(), f, rtol=1e-9, atol=1e-9)
    assert math.isclose(AF.mel_to_hz(AF.hz_to_mel(300.0, htk=True), htk=True), 300.0, rel_tol=1e-12)
    np.testing.assert_allclose(AF.mel_frequencies(10, 20.0, 8000.0, dtype="float64").numpy(),
                               slaney_hz(np.linspace(slaney_mel(20.0), slaney_mel(8000.0), 10)), rtol=1e-9)
    np.testing.assert_allclose(AF.fft_frequencies(16000, 512, dtype="float64").numpy(), np.fft.rfftfreq(512, 1 / 16000),
                               rtol=1e-12)


def test_fbank_and_dct():
    got = AF.compute_fbank_matrix(16000, 256, n_mels=20, f_min=50.0, f_max=7000.0, dtype="float64").numpy()
    np.testing.assert_allclose(got, fbank_np(16000, 256, 20, 50.0, 7000.0), rtol=1e-9, atol=1e-12)
    assert AF.compute_fbank_matrix(16000, 256, n_mels=20).dtype == oar.float32
    unit = AF.compute_fbank_matrix(16000, 256, n_mels=8, norm=2.0, dtype="float64").numpy()
    np.testing.assert_allclose(np.linalg.norm(unit, axis=1), 1.0, rtol=1e-9)
    d = AF.create_dct(13, 40, dtype="float64").numpy()  # orthonormal DCT-II columns
    n = np.arange(40)
    k = np.arange(13)[:, None]
    want = np.sqrt(2 / 40) * np.cos(np.pi / 40 * (n + 0.5) * k)
    want[0] /= np.sqrt(2)
    np.testing.assert_allclose(d, want.T, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(d.T @ d, np.eye(13), atol=1e-12)
    np.testing.assert_allclose(AF.create_dct(4, 6, norm=None, dtype="float64").numpy(),
                               2 * np.cos(np.pi / 6 * (np.arange(6)[:, None] + 0.5) * np.arange(4)), atol=1e-12)


def test_power_to_db():
    s = RNG.uniform(0, 10, size=(3, 5)) ** 4
    s[0, 0] = 0.0
    got = AF.power_to_db(oar.to_tensor(s), ref_value=2.0, amin=1e-8, top_db=None).numpy()
    np.testing.assert_allclose(got, 10 * np.log10(np.maximum(s, 1e-8)) - 10 * np.log10(2.0), rtol=1e-12)
    got = AF.power_to_db(oar.to_tensor(s), top_db=30.0).numpy()
    want = 10 * np.log10(np.maximum(s, 1e-10))
    np.testing.assert_allclose(got, np.maximum(want, want.max() - 30), rtol=1e-12)
    with pytest.raises(ValueError, match="amin"):
        AF.power_to_db(oar.to_tensor(s), amin=0)


@pytest.mark.parametrize("name,args", [
    ("hann", ()), ("hamming", ()), ("blackman", ()), ("cosine", ()), ("triang", ()), ("bohman", ()),
    ("tukey", (0.3,)), ("gaussian", (2.5,)), ("exponential", (None, 3.0)), ("general_gaussian", (1.5, 2.0)),
    ("taylor", ()),
])
@pytest.mark.parametrize("m", [1, 8, 9])
def test_windows(name, args, m):
    sym = AF.get_window((name,) + args if args else name, m, fftbins=False).numpy()
    per = AF.get_window((name,) + args if args else name, m, fftbins=True).numpy()
    ref = {
        "hann": lambda M: 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(M) / (M - 1)),
        "hamming": lambda M: 0.54 - 0.46 * np.cos(2 * np.pi * np.arange(M) / (M - 1)),
        "blackman": lambda M: np.blackman(M),
        "cosine": lambda M: np.sin(np.pi / M * (np.arange(M) + 0.5)),
        "triang": lambda M: 1 - np.abs((np.arange(M) - (M - 1) / 2) / ((M + (M % 2)) / 2)),
        "gaussian": lambda M: np.exp(-0.5 * ((np.arange(M) - (M - 1) / 2) / 2.5) ** 2),
        "exponential": lambda M: np.exp(-np.abs(np.arange(M) - (M - 1) / 2) / 3.0),
        "general_gaussian": lambda M: np.exp(-0.5 * np.abs((np.arange(M) - (M - 1) / 2) / 2.0) ** 3.0),
    }
    assert sym.shape == (m,) and per.shape == (m,)
    if m == 1:
        np.testing.assert_allclose(sym, [1.0])
        return
    if name in ref:
        np.testing.assert_allclose(sym, ref[name](m), atol=1e-12)
        np.testing.assert_allclose(per, ref[name](m + 1)[:-1], atol=1e-12)
    else:  # symmetric about the centre, 1 at the centre sample of an odd length
        np.testing.assert_allclose(sym, sym[::-1], atol=1e-12)
        if m % 2:
            assert abs(sym[m // 2] - 1.0) < 1e-9


def test_window_errors():
    with pytest.raises(ValueError, match="parameters"):
        AF.get_window("gaussian", 8)
    with pytest.raises(ValueError, match="unknown"):
        AF.get_window("nope", 8)
    with pytest.raises(ValueError, match="non-negative"):
        AF.get_window("hann", -1)


# ---- audio.features ---------------------------------------------------------------------------------------
def _features_input():
    t = np.arange(2000) / 8000.0
    return np.stack([np.sin(2 * np.pi * 440 * t), 0.5 * np.sin(2 * np.pi * 1200 * t) + 0.1 * np.cos(2 * np.pi * 60 * t)])


def test_spectrogram_and_mel():
    x = _features_input()
    spec = features.Spectrogram(n_fft=256, hop_length=64, power=2.0, dtype="float64")(oar.to_tensor(x)).numpy()
    want = np.abs(stft_np(x, 256, 64, hann_periodic(256))) ** 2
    np.testing.assert_allclose(spec, want, rtol=1e-9, atol=1e-9 * want.max())
    mag = features.Spectrogram(n_fft=256, hop_length=64, dtype="float64")(oar.to_tensor(x)).numpy()
    np.testing.assert_allclose(mag, np.sqrt(want), rtol=1e-8, atol=1e-8)
    mel = features.MelSpectrogram(sr=8000, n_fft=256, hop_length=64, n_mels=32, f_min=50.0, dtype="float64")(
        oar.to_tensor(x)).numpy()
    fb = fbank_np(8000, 256, 32, 50.0, 4000.0)
    np.testing.assert_allclose(mel, np.einsum("mf,bft->bmt", fb, want), rtol=1e-8, atol=1e-8 * want.max())
    logmel = features.LogMelSpectrogram(sr=8000, n_fft=256, hop_length=64, n_mels=32, top_db=60.0,
                                        dtype="float64")(oar.to_tensor(x)).numpy()
    db = 10 * np.log10(np.maximum(np.einsum("mf,bft->bmt", fb, want), 1e-10))
    np.testing.assert_allclose(logmel, np.maximum(db, db.max() - 60), rtol=1e-8, atol=1e-8)
    mfcc = features.MFCC(sr=8000, n_mfcc=13, n_fft=256, hop_length=64, n_mels=32, dtype="float64")(
        oar.to_tensor(x)).numpy()
    n = np.arange(32)
    k = np.arange(13)[:, None]
    dct = np.sqrt(2 / 32) * np.cos(np.pi / 32 * (n + 0.5) * k)
    dct[0] /= np.sqrt(2)
    np.testing.assert_allclose(mfcc, np.einsum("km,bmt->bkt", dct, db), rtol=1e-8, atol=1e-7)
    assert mfcc.shape == (2, 13, 2000 // 64 + 1)


def test_features_float32_default_and_errors():
    x = oar.to_tensor(_features_input().astype(np.float32))
    out = features.MelSpectrogram(sr=8000, n_fft=128, hop_length=32, n_mels=16)(x)
    assert out.dtype == oar.float32 and out.shape == [2, 16, 2000 // 32 + 1]
    with pytest.raises(ValueError, match="n_mfcc"):
        features.MFCC(n_mfcc=80, n_mels=64)
    with pytest.raises(ValueError, match="power"):
        features.Spectrogram(power=0)


def test_spectrogram_gradient():
    x0 = RNG.uniform(-1, 1, size=(1, 40))
    layer = features.Spectrogram(n_fft=8, hop_length=4, power=1.0, dtype="float64")
    w = RNG.uniform(size=layer(oar.to_tensor(x0)).shape)

    def loss(xv):
        return float(np.sum(np.abs(stft_np(xv, 8, 4, hann_periodic(8))) * w))

    t = oar.to_tensor(x0)
    t.stop_gradient = False
    (g,) = oar.grad([(layer(t) * oar.to_tensor(w)).sum()], [t])
    num = np.zeros_like(x0)
    for i in range(x0.size):
        p, m = x0.copy(), x0.copy()
        p.flat[i] += 1e-6
        m.flat[i] -= 1e-6
        num.flat[i] = (loss(p) - loss(m)) / 2e-6
    np.testing.assert_allclose(g.numpy(), num, rtol=1e-5, atol=1e-6)


def test_stft_istft_in_a_saved_program(tmp_path):
    """stft -> istft under to_static with an unknown batch size, saved and loaded, run at another batch."""

    class RoundTrip(oar.nn.Layer):
        def forward(self, x):
            return oar.signal.istft(oar.signal.stft(x, 16, 4), 16, 4, length=70)

    m = RoundTrip()
    st = oar.jit.to_static(m, input_spec=[oar.static.InputSpec([None, 64], "float64")])
    x2 = RNG.uniform(-1, 1, size=(2, 64))
    np.testing.assert_allclose(st(oar.to_tensor(x2)).numpy()[:, :64], x2, rtol=1e-9, atol=1e-9)
    prefix = str(tmp_path / "roundtrip")
    oar.jit.save(st, prefix)
    x3 = RNG.uniform(-1, 1, size=(3, 64))
    got = oar.jit.load(prefix)(oar.to_tensor(x3)).numpy()
    # length 70 reaches into the reflect padding that `center` added (8 samples each side)
    want = np.pad(x3, [(0, 0), (8, 8)], mode="reflect")[:, 8:78]
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
