"""oar.fft / oar.signal / oar.audio benchmark: oar (FFTW) vs numpy.fft (pocketfft), CPU.

Run by hand: python3 tests/benchmarks/bench_fft.py (with oar installed). Not a test and not part of CI.
Prints milliseconds per call (mean of 5 after one warm-up).
"""
import time

import numpy as np

import oar


def bench(f, reps=5):
    f()
    t = time.perf_counter()
    for _ in range(reps):
        f()
    return (time.perf_counter() - t) / reps * 1e3


def main():
    rng = np.random.default_rng(0)
    for shape in [(256, 4096), (64, 512, 64), (1, 1 << 20)]:
        x = rng.standard_normal(shape).astype(np.float32)
        c = (x + 1j * x[::-1]).astype(np.complex64)
        tx, tc = oar.to_tensor(x), oar.to_tensor(c)
        print("{}: rfft oar {:.1f} numpy {:.1f} | fft (complex64) oar {:.1f} numpy {:.1f} | "
              "irfft(rfft) oar {:.1f} numpy {:.1f}".format(
                  shape, bench(lambda: oar.fft.rfft(tx)), bench(lambda: np.fft.rfft(x)),
                  bench(lambda: oar.fft.fft(tc)), bench(lambda: np.fft.fft(c)),
                  bench(lambda: oar.fft.irfft(oar.fft.rfft(tx))), bench(lambda: np.fft.irfft(np.fft.rfft(x)))))
    x = oar.to_tensor(rng.standard_normal((4, 48000)).astype(np.float32))
    window = oar.audio.functional.get_window("hann", 512, dtype="float32")
    print("stft [4, 48000], n_fft 512, hop 128: {:.1f}".format(
        bench(lambda: oar.signal.stft(x, 512, 128, window=window))))
    mel = oar.audio.features.MelSpectrogram(sr=16000, n_fft=512, hop_length=128, n_mels=64)
    print("MelSpectrogram [4, 48000]: {:.1f}".format(bench(lambda: mel(x))))


if __name__ == "__main__":
    main()
