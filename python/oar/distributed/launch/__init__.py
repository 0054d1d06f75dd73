"""oar.distributed.launch: `python -m oar.distributed.launch [flags] script.py args...` starts a collective
job's workers on this node (PaddlePaddle 2.x's paddle.distributed.launch); docs/distributed.md, "The launcher"."""
from .main import launch

__all__ = ["launch"]
