"""oar.distributed: process groups and collectives (Paddle's paddle.distributed).

So far only the rendezvous store: `TCPStore` (docs/distributed.md). Process groups come later.
"""
from oar._C import TCPStore

__all__ = ["TCPStore"]
