"""oar.distributed.sharding (Paddle's paddle.distributed.sharding): group sharding stages 1 and 2."""
from .group_sharded import group_sharded_parallel, save_group_sharded_model

__all__ = ["group_sharded_parallel", "save_group_sharded_model"]
