"""oar.optimizer: optimizers (Paddle's paddle.optimizer) and learning-rate schedulers (oar.optimizer.lr).

Every optimizer step updates all parameters of a group with one fused op (docs/optimizer.md).
"""
from . import lr  # noqa: F401
from .optimizer import Optimizer
from .optimizers import SGD, Adadelta, Adagrad, Adam, Adamax, AdamW, Lamb, Momentum, RMSProp

__all__ = ["Optimizer", "SGD", "Momentum", "Adam", "AdamW", "Adamax", "Adagrad", "Adadelta", "RMSProp", "Lamb"]
