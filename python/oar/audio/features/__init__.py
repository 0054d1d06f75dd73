"""oar.audio.features: spectrogram layers (Paddle's paddle.audio.features)."""
from .layers import MFCC, LogMelSpectrogram, MelSpectrogram, Spectrogram  # noqa: F401

__all__ = ["LogMelSpectrogram", "MelSpectrogram", "MFCC", "Spectrogram"]
