"""oar.audio: audio features with Paddle 2.x's API (paddle.audio.functional and paddle.audio.features).
Paddle's audio datasets and file backends are not provided."""
from . import features, functional  # noqa: F401

__all__ = ["functional", "features"]
