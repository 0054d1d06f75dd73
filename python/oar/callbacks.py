"""oar.callbacks: callbacks for oar.Model (Paddle's paddle.callbacks); defined in oar.hapi.callbacks."""
from .hapi.callbacks import (Callback, EarlyStopping, LRScheduler, MetricsLogger, ModelCheckpoint,  # noqa: F401
                             ProgBarLogger, ReduceLROnPlateau)

__all__ = ["Callback", "ProgBarLogger", "ModelCheckpoint", "LRScheduler", "EarlyStopping", "ReduceLROnPlateau",
           "MetricsLogger"]
