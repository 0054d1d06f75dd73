"""Window functions for oar.audio (paddle.audio.functional.get_window), computed in float64 numpy.

fftbins=True (the default) gives a periodic window (the symmetric window of length M + 1 with its last
point dropped), as used for spectral analysis; fftbins=False the symmetric one."""
import math

import numpy as np


def _general_cosine(M, a):
    fac = np.linspace(-math.pi, math.pi, M)
    return sum(c * np.cos(k * fac) for k, c in enumerate(a))


def _general_hamming(M, alpha):
    return _general_cosine(M, [alpha, 1.0 - alpha])


def _hamming(M):
    return _general_hamming(M, 0.54)


def _hann(M):
    return _general_hamming(M, 0.5)


def _blackman(M):
    return _general_cosine(M, [0.42, 0.50, 0.08])


def _cosine(M):
    return np.sin(math.pi / M * (np.arange(M) + 0.5))


def _triang(M):
    n = np.arange(1, (M + 1) // 2 + 1, dtype=np.float64)
    if M % 2 == 0:
        w = (2 * n - 1.0) / M
        return np.concatenate([w, w[::-1]])
    w = 2 * n / (M + 1.0)
    return np.concatenate([w, w[-2::-1]])


def _bohman(M):
    fac = np.abs(np.linspace(-1, 1, M)[1:-1])
    w = (1 - fac) * np.cos(math.pi * fac) + 1.0 / math.pi * np.sin(math.pi * fac)
    return np.concatenate([[0.0], w, [0.0]])


def _tukey(M, alpha=0.5):
    if alpha <= 0:
        return np.ones(M)
    if alpha >= 1.0:
        return _hann(M)
    n = np.arange(M, dtype=np.float64)
    width = int(alpha * (M - 1) / 2.0)
    n1, n2, n3 = n[:width + 1], n[width + 1:M - width - 1], n[M - width - 1:]
    w1 = 0.5 * (1 + np.cos(math.pi * (-1 + 2.0 * n1 / alpha / (M - 1))))
    w3 = 0.5 * (1 + np.cos(math.pi * (-2.0 / alpha + 1 + 2.0 * n3 / alpha / (M - 1))))
    return np.concatenate([w1, np.ones(n2.shape), w3])


def _gaussian(M, std):
    n = np.arange(M) - (M - 1.0) / 2.0
    return np.exp(-n ** 2 / (2 * std * std))


def _general_gaussian(M, p, sig):
    n = np.arange(M) - (M - 1.0) / 2.0
    return np.exp(-0.5 * np.abs(n / sig) ** (2 * p))


def _exponential(M, center=None, tau=1.0):
    if center is None:
        center = (M - 1) / 2
    return np.exp(-np.abs(np.arange(M) - center) / tau)


def _taylor(M, nbar=4, sll=30, norm=True):
    B = 10 ** (sll / 20)
    A = math.acosh(B) / math.pi
    s2 = nbar ** 2 / (A ** 2 + (nbar - 0.5) ** 2)
    ma = np.arange(1, nbar, dtype=np.float64)
    signs = np.where(np.arange(nbar - 1) % 2 == 0, 1.0, -1.0)
    m2 = ma * ma
    Fm = np.empty(nbar - 1)
    for mi in range(nbar - 1):
        numer = signs[mi] * np.prod(1 - m2[mi] / s2 / (A ** 2 + (ma - 0.5) ** 2))
        denom = 2 * np.prod(1 - m2[mi] / m2[:mi]) * np.prod(1 - m2[mi] / m2[mi + 1:])
        Fm[mi] = numer / denom

    def W(n):
        return 1 + 2 * np.cos(2 * math.pi * ma[:, None] * (n - M / 2.0 + 0.5) / M).T @ Fm

    w = W(np.arange(M, dtype=np.float64))
    if norm:
        w = w / W(np.array([(M - 1) / 2.0]))[0]
    return w


_WINDOWS = {
    "hamming": _hamming, "hann": _hann, "blackman": _blackman, "cosine": _cosine, "triang": _triang,
    "bohman": _bohman, "tukey": _tukey, "gaussian": _gaussian, "general_gaussian": _general_gaussian,
    "exponential": _exponential, "general_cosine": _general_cosine, "general_hamming": _general_hamming,
    "taylor": _taylor,
}
_NEEDS_ARGS = ("gaussian", "general_gaussian", "general_cosine", "general_hamming")


def get_window(window, win_length, fftbins=True, dtype="float64"):
    """A window of win_length points: a name ('hann', 'hamming', 'blackman', ...) or a tuple of a name and
    its parameters (('gaussian', std), ('tukey', alpha), ('exponential', center, tau), ...)."""
    import oar
    args = ()
    if isinstance(window, tuple) and window and isinstance(window[0], str):
        name, args = window[0], tuple(window[1:])
    elif isinstance(window, str):
        name = window
        if name in _NEEDS_ARGS:
            raise ValueError("get_window: the {!r} window needs one or more parameters -- pass a tuple".format(name))
    else:
        raise ValueError("get_window: {} as window type is not supported".format(type(window).__name__))
    if name not in _WINDOWS:
        raise ValueError("get_window: unknown window type {!r}; known: {}".format(name, sorted(_WINDOWS)))
    if int(win_length) != win_length or win_length < 0:
        raise ValueError("get_window: window length must be a non-negative integer, got {!r}".format(win_length))
    M = int(win_length)
    sym = not fftbins
    if name == "exponential" and sym and len(args) > 0 and args[0] is not None:
        raise ValueError("get_window: with fftbins=False (symmetric), the exponential window's center must be None")
    if M <= 1:
        w = np.ones(M)
    else:
        w = _WINDOWS[name](M if sym else M + 1, *args)
        if not sym:
            w = w[:-1]
    return oar.to_tensor(np.asarray(w, np.float64), dtype=dtype)
