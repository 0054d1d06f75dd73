"""oar.nn: neural-network layers (Paddle's paddle.nn).

Only the functional ops (oar.nn.functional) exist so far; Layer, Linear, Conv2D, losses and the rest of
paddle.nn arrive with autograd in later work.
"""
from . import functional  # noqa: F401
