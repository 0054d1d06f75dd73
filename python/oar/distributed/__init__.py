"""oar.distributed: process groups and collectives (Paddle's paddle.distributed), docs/distributed.md.

The rendezvous store (`TCPStore`), the default process group made by `init_parallel_env` on the current
device's plugin (Gloo on cpu, NCCL on gpu), in-place collectives on tensors, and `spawn`.
"""
from oar._C import TCPStore

from .collective import (Group, ParallelEnv, ReduceOp, all_gather, all_reduce, barrier, broadcast,
                         destroy_process_group, get_backend, get_rank, get_world_size, init_parallel_env,
                         is_initialized, new_group, reduce_scatter)
from .collective import (P2POp, all_gather_object, alltoall, alltoall_single, batch_isend_irecv,
                         broadcast_object_list, gather, get_group, irecv, isend, recv, reduce, scatter,
                         scatter_object_list, send, wait)
from .spawn import spawn
from .parallel import DataParallel
from . import fleet, sharding  # noqa: E402  (fleet mode, group sharding: docs/distributed.md)

__all__ = ["TCPStore", "Group", "ParallelEnv", "ReduceOp", "init_parallel_env", "is_initialized", "get_rank",
           "get_world_size", "get_backend", "new_group", "all_reduce", "broadcast", "all_gather",
           "reduce_scatter", "barrier", "destroy_process_group", "spawn"]
__all__ += ["get_group", "reduce", "scatter", "gather", "alltoall", "alltoall_single", "send", "recv", "isend", "irecv",
            "P2POp", "batch_isend_irecv", "all_gather_object", "broadcast_object_list", "scatter_object_list",
            "wait"]
__all__ += ["DataParallel"]


def __getattr__(name):
    # paddle.distributed.launch (also `python -m oar.distributed.launch`) loads on first use: argparse,
    # subprocess and threading cost `import oar` several ms (decision 111).
    if name == "launch":
        import importlib
        return importlib.import_module(__name__ + ".launch")
    raise AttributeError("module 'oar.distributed' has no attribute '{}'".format(name))
