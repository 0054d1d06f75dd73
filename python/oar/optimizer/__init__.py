"""oar.optimizer: optimizers (Paddle's paddle.optimizer: SGD, Momentum, Adam, AdamW, ...).

Empty for now: optimizers need autograd and parameters, which later work adds. Learning-rate schedulers
will live in oar.optimizer.lr.
"""
from . import lr  # noqa: F401
