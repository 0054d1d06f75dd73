"""oar.distributed.fleet: Paddle 2.x's fleet API, collective (dygraph) mode (docs/distributed.md, fleet).

    from oar.distributed import fleet
    strategy = fleet.DistributedStrategy()
    strategy.gradient_merge = True
    strategy.gradient_merge_configs = {"k_steps": 4, "avg": True}
    fleet.init(is_collective=True, strategy=strategy)
    model = fleet.distributed_model(model)
    opt = fleet.distributed_optimizer(opt)

Honoured: data parallel (DataParallel), gradient merge, sharding stages 1 and 2, recompute
(fleet.utils.recompute, and strategy.recompute on named sublayers). Other strategy fields are accepted.
"""
from . import utils
from ._fleet import (all_reduce, barrier_worker, distributed_model, init, is_first_worker, is_worker, local_rank,
                     node_num, worker_endpoints, worker_index, worker_num)
from .optimizer import distributed_optimizer
from .strategy import DistributedStrategy

# Paddle's aliases.
rank = worker_index
nranks = worker_num
world_size = worker_num
rank_in_node = local_rank

__all__ = ["DistributedStrategy", "init", "is_first_worker", "worker_index", "worker_num", "local_rank",
           "worker_endpoints", "node_num", "is_worker", "barrier_worker", "all_reduce", "distributed_model",
           "distributed_optimizer", "utils"]
