"""fleet's collective mode: the job's state (init, worker queries) and distributed_model."""
import numbers

from .. import collective as _coll
from .strategy import DistributedStrategy

__all__ = ["init", "is_first_worker", "worker_index", "worker_num", "local_rank", "worker_endpoints", "node_num",
           "is_worker", "barrier_worker", "all_reduce", "distributed_model"]

_strategy = None  # the strategy of fleet.init; None before it


def init(role_maker=None, is_collective=False, strategy=None, log_level="INFO"):
    """Starts fleet in collective mode: keeps `strategy` (default: a fresh DistributedStrategy) and makes
    the default process group (init_parallel_env) unless it exists. Parameter-server mode
    (is_collective=False without a collective role maker) and role makers are not supported; hybrid
    parallelism beyond data parallel and sharding (mp/pp/sep degrees > 1) raises NotImplementedError.
    Strategy fields set to True that oar does not honour yet are warned about."""
    global _strategy
    if role_maker is not None:
        if not getattr(role_maker, "_is_collective", False):
            raise NotImplementedError("fleet.init: role makers are not supported; call "
                                      "fleet.init(is_collective=True, strategy=...)")
        is_collective = True
    if not is_collective:
        raise NotImplementedError("fleet.init: parameter-server mode (is_collective=False) is not supported; "
                                  "pass is_collective=True")
    if strategy is None:
        strategy = DistributedStrategy()
    elif not isinstance(strategy, DistributedStrategy):
        raise TypeError(f"fleet.init: strategy must be a DistributedStrategy, got {type(strategy).__name__}")
    hybrid = strategy.hybrid_configs
    for key in ("mp_degree", "pp_degree", "sep_degree"):
        if hybrid[key] > 1:
            raise NotImplementedError(f"fleet.init: hybrid_configs['{key}']={hybrid[key]}: tensor, pipeline and "
                                      "sequence parallelism are not implemented (data parallel and sharding are)")
    if not _coll.is_initialized():
        _coll.init_parallel_env()
    strategy._warn_unhonoured()
    _strategy = strategy


def _require_init(what):
    if _strategy is None:
        raise RuntimeError(f"fleet.{what}: call fleet.init(is_collective=True) first")
    return _strategy


def worker_index():
    """This process's rank."""
    return _coll.get_rank()


def worker_num():
    """The number of processes of the job."""
    return _coll.get_world_size()


def is_first_worker():
    return worker_index() == 0


def local_rank():
    return _coll.ParallelEnv().local_rank


def worker_endpoints(to_string=False):
    """The ranks' endpoints from the launcher (PADDLE_TRAINER_ENDPOINTS)."""
    eps = _coll.ParallelEnv().trainer_endpoints
    return ",".join(eps) if to_string else eps


def node_num():
    """The number of distinct hosts among the endpoints (1 without them)."""
    hosts = {ep.rpartition(":")[0] for ep in _coll.ParallelEnv().trainer_endpoints}
    return max(len(hosts), 1)


def is_worker():
    return True  # collective mode: every process is a worker


def barrier_worker():
    """Returns when every worker has called it."""
    _coll.barrier()


def all_reduce(input, mode="sum"):
    """Reduces a number or a numpy array over the workers (mode 'sum', 'mean', 'max' or 'min'); returns
    the result as the same kind of value (Paddle's fleet.all_reduce / fleet.util.all_reduce)."""
    import numpy as np
    from ... import to_tensor
    ops = {"sum": _coll.ReduceOp.SUM, "mean": _coll.ReduceOp.SUM, "max": _coll.ReduceOp.MAX,
           "min": _coll.ReduceOp.MIN}
    if mode not in ops:
        raise ValueError(f"fleet.all_reduce: mode must be 'sum', 'mean', 'max' or 'min', got {mode!r}")
    scalar = isinstance(input, numbers.Number)
    arr = np.asarray(input)
    if arr.dtype.kind not in "iuf" or arr.dtype == np.bool_:
        raise TypeError(f"fleet.all_reduce: input must be a number or a numeric array, got {type(input).__name__}")
    t = to_tensor(arr.astype(np.float64 if arr.dtype.kind == "f" else np.int64))
    _coll.all_reduce(t, op=ops[mode])
    out = t.numpy()
    if mode == "mean":
        out = out / worker_num()
    return out.item() if scalar else out


def _apply_recompute(model, checkpoints):
    """strategy.recompute in dygraph: the sublayers named in recompute_configs['checkpoints'] (names from
    model.named_sublayers()) run through fleet.utils.recompute."""
    from .recompute import recompute
    layers = dict(model.named_sublayers())
    for name in checkpoints:
        if name not in layers:
            raise ValueError(f"fleet.distributed_model: recompute_configs['checkpoints'] names {name!r}, which is "
                             f"not a sublayer of the model (its sublayers: {', '.join(layers) or 'none'})")
        layer = layers[name]
        if getattr(layer, "_fleet_recompute", False):
            continue
        forward = layer.forward

        def recomputed(*args, _forward=forward, **kwargs):
            return recompute(_forward, *args, **kwargs)

        layer.forward = recomputed
        layer._fleet_recompute = True


def distributed_model(model):
    """Wraps `model` for the job as fleet's strategy says: with sharding (see distributed_optimizer) the
    group-sharded model wrapper (parameters taken from rank 0); otherwise, with more than one worker,
    DataParallel (comm_buffer_size = fuse_grad_size_in_MB, last_comm_buffer_size =
    last_comm_group_size_MB, find_unused_parameters); with one worker `model` itself. strategy.recompute
    recomputes the sublayers named in recompute_configs['checkpoints']."""
    from ...nn import Layer
    from ..sharding.group_sharded import GroupShardedModel
    from .optimizer import _sharding_stage
    strategy = _require_init("distributed_model")
    if not isinstance(model, Layer):
        raise TypeError(f"fleet.distributed_model: model must be an oar.nn.Layer, got {type(model).__name__}")
    if strategy.recompute:
        _apply_recompute(model, strategy.recompute_configs["checkpoints"])
    world = worker_num()
    if _sharding_stage(strategy, world):
        return GroupShardedModel(model, None)
    if world == 1:
        return model
    try:
        from ..parallel import DataParallel
    except ImportError:
        raise RuntimeError("fleet.distributed_model: oar.distributed.parallel.DataParallel is not available in "
                           "this build") from None
    return DataParallel(model, comm_buffer_size=strategy.fuse_grad_size_in_MB,
                        last_comm_buffer_size=strategy.last_comm_group_size_MB,
                        find_unused_parameters=strategy.find_unused_parameters)
