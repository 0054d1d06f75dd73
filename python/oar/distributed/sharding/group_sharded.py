"""Group sharding, stages 1 and 2 (Paddle's paddle.distributed.sharding.group_sharded_parallel).

The trainable parameters are partitioned over the ranks of the group (largest first, each to the rank
holding the fewest elements so far, so every rank computes the same partition). Each rank's optimizer
keeps state for, and steps, only its own partition; the updated parameters then travel to every rank
(one all_gather per dtype). The gradients, averaged over the ranks at step():
- level 'os' (stage 1): all-reduced, every rank keeps every gradient;
- level 'os_g' (stage 2): reduce-scattered, each rank receives only its partition's sum and the other
  gradients are released.
Level 'p_g_os' (stage 3, parameters sharded too) is not implemented.
"""
import os

from ... import _C
from ...autograd import no_grad
from ...nn import Layer
from ...optimizer import Optimizer
from .. import collective as _coll

__all__ = ["group_sharded_parallel", "save_group_sharded_model", "GroupShardedOptimizer", "GroupShardedModel"]

_LEVELS = ("os", "os_g", "p_g_os")


def _group_info(group):
    """(rank in the group, group size, group rank -> global rank)."""
    rank, world = _coll.get_rank(group), _coll.get_world_size(group)
    if rank < 0:  # Paddle's rank in a group this process is not a member of
        raise ValueError(f"group sharding: this process (rank {_coll.get_rank()}) is not a member of {group}")
    ranks = list(getattr(group, "ranks", None) or range(world))
    return rank, world, ranks


def _partition(params, world):
    """Owner rank of each parameter: largest first, to the rank with the fewest elements so far."""
    sizes = [0] * world
    owner = [0] * len(params)
    for i in sorted(range(len(params)), key=lambda i: (-_numel(params[i]), i)):
        r = min(range(world), key=lambda r: (sizes[r], r))
        owner[i] = r
        sizes[r] += _numel(params[i])
    return owner


def _numel(t):
    n = 1
    for d in t.shape:
        n *= d
    return n


def _flat(tensors, pad_to, like):
    """The tensors flattened and concatenated, zero-padded to `pad_to` elements (`like`: dtype/place)."""
    from ... import concat, zeros
    parts = [t.reshape([-1]) for t in tensors]
    n = sum(_numel(t) for t in tensors)
    if pad_to > n or not parts:
        parts.append(zeros([pad_to - n], dtype=like.dtype).to(like.place))
    return parts[0] if len(parts) == 1 else concat(parts)


def _unflat(flat, tensors):
    """Writes consecutive slices of `flat` into `tensors`, in place."""
    off = 0
    for t in tensors:
        n = _numel(t)
        _C._assign(t, flat[off:off + n].reshape(t.shape))
        off += n


def _ensure_grads(params):
    """Gives a zero gradient to the parameters that have none (unused in this step's forward), so every
    rank reduces the same buffers."""
    missing = [p for p in params if p.grad is None]
    if missing:
        from ...autograd import backward, enable_grad
        with enable_grad():
            backward([(p * 0).sum() for p in missing])


class GroupShardedOptimizer:
    """The optimizer wrapper group_sharded_parallel returns (Paddle's GroupShardedOptimizerStage2).

    `_optim` is the user's optimizer, restricted to this rank's partition (its state_dict() holds only
    that partition's accumulators); `step()` reduces the gradients, clips by the global norm over every
    rank when the optimizer's grad_clip is a ClipGradByGlobalNorm, steps the partition and gathers the
    parameters; `clear_grad()` clears every parameter's gradient. Other attributes are the optimizer's."""

    def __init__(self, optimizer, level, group=None):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"group_sharded_parallel: optimizer must be an oar.optimizer.Optimizer, got "
                            f"{type(optimizer).__name__}")
        self._optim = optimizer
        self._level = level
        self._group = group
        self._rank, self._world, self._global_ranks = _group_info(group)
        self._params = [p for p in optimizer._all_params() if not p.stop_gradient]
        owner = _partition(self._params, self._world)
        self._owner = {id(p): r for p, r in zip(self._params, owner)}
        self._local = [p for p in self._params if self._owner[id(p)] == self._rank]
        # Per dtype: each rank's parameters of that dtype (their order in every flat buffer) and the
        # block size (the largest rank's element count).
        self._blocks = {}
        for p in self._params:
            per_rank = self._blocks.setdefault(p.dtype, [[] for _ in range(self._world)])
            per_rank[self._owner[id(p)]].append(p)
        self._steps = 0
        self._restrict(optimizer)

    def _restrict(self, opt):
        """Keeps only this rank's partition in the optimizer (groups keep their settings)."""
        local = {id(p) for p in self._local}
        if opt._param_groups and isinstance(opt._param_groups[0], dict):
            opt._param_groups = [dict(g, params=[p for p in g["params"] if id(p) in local])
                                 for g in opt._param_groups]
        else:
            opt._param_groups = [p for p in opt._param_groups if id(p) in local]
        opt._parameter_list = list(self._local)
        names = {p.name for p in self._local}
        for accs in opt._accumulators.values():  # state made before wrapping: keep only the partition's
            for name in [n for n in accs if n not in names]:
                del accs[name]
        for cache in ("_plans", "_input_cache"):
            opt.__dict__.pop(cache, None)

    # ---- the step ---------------------------------------------------------------------------------------
    def _reduce_grads(self):
        """Averages the gradients over the group: every gradient ('os') or this rank's partition ('os_g')."""
        _ensure_grads(self._params)
        for per_rank in self._blocks.values():
            grads_of = [[p.grad for p in ps] for ps in per_rank]
            like = next(g for gs in grads_of for g in gs)
            if self._level == "os":
                everything = [g for gs in grads_of for g in gs]
                flat = _flat(everything, 0, like)
                _coll.all_reduce(flat, group=self._group)
                flat.scale_(1.0 / self._world)
                _unflat(flat, everything)
            else:
                size = max(sum(_numel(g) for g in gs) for gs in grads_of)
                blocks = [_flat(gs, size, like) for gs in grads_of]
                from ... import empty
                mine = empty([size], dtype=like.dtype).to(like.place)
                _coll.reduce_scatter(mine, blocks, group=self._group)
                mine.scale_(1.0 / self._world)
                _unflat(mine, grads_of[self._rank])
        if self._level == "os_g":  # the other partitions' gradients are not needed any more
            others = [p for p in self._params if self._owner[id(p)] != self._rank]
            _C._clear_grads(others, False)

    def _global_clips(self):
        """[(holder, clip)] for each ClipGradByGlobalNorm the inner step would apply: the optimizer's
        (holder None), or each parameter group's (holder: the group dict), as the unsharded step does."""
        from ...nn.clip import ClipGradByGlobalNorm
        opt = self._optim
        if opt._param_groups and isinstance(opt._param_groups[0], dict):
            found = [(g, g.get("grad_clip", opt._grad_clip)) for g in opt._param_groups]
        else:
            found = [(None, opt._grad_clip)]
        return [(h, c) for h, c in found if type(c) is ClipGradByGlobalNorm]

    def _clip_global_norm(self, clips):
        """ClipGradByGlobalNorm over every rank's part of the clipped parameters: each rank's sums of squares
        (the clip's own fused op; one per clip), summed over the group in one all_reduce, give the norms;
        this rank's gradients are scaled in place."""
        from ... import to_tensor
        from ...nn.clip import _flat_sum_squares, _to_clip
        grads = []
        for holder, _ in clips:
            params = self._local if holder is None else holder["params"]
            grads.append([p.grad for p in params if _to_clip(p, p.grad)])
        sq = to_tensor([float(_flat_sum_squares(gs)) if gs else 0.0 for gs in grads], dtype="float64")
        _coll.all_reduce(sq, group=self._group)
        for (_, clip), gs, total in zip(clips, grads, sq.numpy().tolist()):
            norm = total ** 0.5
            if clip.auto_skip_clip and norm <= clip.clip_norm:
                continue
            scale = clip.clip_norm / max(norm, clip.clip_norm)
            for g in gs:
                g.scale_(scale)

    def _gather_params(self):
        """Every rank gets every partition's updated parameters (one all_gather per dtype)."""
        for per_rank in self._blocks.values():
            size = max(sum(_numel(p) for p in ps) for ps in per_rank)
            if size == 0:
                continue
            like = next(p for ps in per_rank for p in ps)
            out = []
            _coll.all_gather(out, _flat(per_rank[self._rank], size, like), group=self._group)
            for r, ps in enumerate(per_rank):
                if r != self._rank and ps:
                    _unflat(out[r], ps)

    def step(self):
        with no_grad():
            if self._world == 1:
                self._optim.step()
                self._steps += 1
                return
            self._reduce_grads()
            clips = self._global_clips()
            if clips:  # clipped here over every rank; the inner step runs without those clips
                self._clip_global_norm(clips)
                for holder, _ in clips:
                    if holder is None:
                        self._optim._grad_clip = None
                    else:
                        holder["grad_clip"] = None
            try:
                if self._local:
                    self._optim.step()
            finally:
                for holder, clip in clips:
                    if holder is None:
                        self._optim._grad_clip = clip
                    else:
                        holder["grad_clip"] = clip
            self._gather_params()
            self._steps += 1

    def minimize(self, loss, startup_program=None, parameters=None, no_grad_set=None):
        """Dygraph minimize: backward must have run; steps every parameter (the arguments beyond loss are
        not supported with sharding)."""
        if parameters is not None or no_grad_set is not None:
            raise NotImplementedError("group sharded optimizer: minimize(parameters=..., no_grad_set=...) is "
                                      "not supported; call step()")
        params_grads = [(p, p.grad) for p in self._params if p.grad is not None]
        self.step()
        return None, params_grads

    def clear_grad(self, set_to_zero=True):
        _C._clear_grads(self._params, bool(set_to_zero))

    clear_gradients = clear_grad

    def zero_grad(self, set_to_none=True):
        self.clear_grad(set_to_zero=not set_to_none)

    def _all_params(self):
        return list(self._params)

    def state_dict(self):
        """This rank's partition's state (as Paddle); save_group_sharded_model gathers the full state."""
        return self._optim.state_dict()

    def set_state_dict(self, state_dict):
        self._optim.set_state_dict(state_dict)

    def __getattr__(self, name):
        return getattr(self.__dict__["_optim"], name)

    # ---- the full state, for save_group_sharded_model --------------------------------------------------
    def _full_state_dict(self):
        """Every partition's accumulators, brought to every rank (one broadcast per accumulator)."""
        from ... import full
        opt = self._optim
        state = {}
        if self._steps:
            prefix = opt._name + "_" if opt._name is not None else ""
            for p in self._params:
                owner = self._owner[id(p)]
                for name, kind, _ in opt._acc_specs:
                    key = prefix + name
                    if owner == self._rank:
                        t = opt._accumulators[key][p.name]
                    elif kind == "pow":
                        t = full([1], 0.0, dtype="float64" if p.dtype == _C.float64 else "float32")
                    else:
                        t = full(p.shape, 0.0, dtype=p.dtype)
                    _coll.broadcast(t, src=self._global_ranks[owner], group=self._group)
                    state[f"{p.name}_{key}_0"] = t
        lr = opt.state_dict().get("LR_Scheduler")
        if lr is not None:
            state["LR_Scheduler"] = lr
        return state


class GroupShardedModel(Layer):
    """The model wrapper group_sharded_parallel returns (Paddle's GroupShardedStage2): calls the layer;
    at wrap time every rank takes rank 0's parameters (and buffers with sync_buffers)."""

    def __init__(self, layer, optimizer, group=None, sync_buffers=False):
        super().__init__()
        self._layer = layer
        self._sharding_optimizer = optimizer
        self._group = group
        _, world, ranks = _group_info(group)
        if world > 1:
            with no_grad():
                for p in layer.parameters():
                    _coll.broadcast(p, src=ranks[0], group=group)
                if sync_buffers:
                    for b in layer.buffers():
                        _coll.broadcast(b, src=ranks[0], group=group)

    def forward(self, *args, **kwargs):
        return self._layer(*args, **kwargs)


def group_sharded_parallel(model, optimizer, level, scaler=None, group=None, offload=False, sync_buffers=False,
                           buffer_max_size=2**23, segment_size=2**20, sync_comm=False, dp_group=None,
                           exclude_layer=None):
    """Shards the optimizer state ('os', stage 1) or the optimizer state and the gradients ('os_g', stage
    2) of `model` over the ranks of `group` (default: every rank). Returns (model, optimizer, scaler):
    the wrapped model, the wrapped optimizer (use it for step/clear_grad) and None.
    'p_g_os' (stage 3), offload, a scaler and dp_group raise NotImplementedError. buffer_max_size, segment_size,
    sync_comm and exclude_layer are accepted (they tune stage 2's fused buffers and stage 3)."""
    if not isinstance(model, Layer):
        raise TypeError(f"group_sharded_parallel: model must be an oar.nn.Layer, got {type(model).__name__}")
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"group_sharded_parallel: optimizer must be an oar.optimizer.Optimizer, got "
                        f"{type(optimizer).__name__}")
    if level not in _LEVELS:
        raise ValueError(f"group_sharded_parallel: level must be 'os', 'os_g' or 'p_g_os', got {level!r}")
    if level == "p_g_os":
        raise NotImplementedError("group_sharded_parallel: level 'p_g_os' (stage 3: parameters sharded too) is "
                                  "not implemented; use 'os' or 'os_g'")
    if offload:
        raise NotImplementedError("group_sharded_parallel: offload=True is not implemented")
    if scaler is not None:
        raise NotImplementedError("group_sharded_parallel: a GradScaler with group sharding is not supported yet "
                                  "(its found-inf check must agree across ranks, and unscaling must precede the "
                                  "gradient reduction); pass scaler=None")
    if dp_group is not None:
        raise NotImplementedError("group_sharded_parallel: dp_group (sharding combined with data parallel) is "
                                  "not implemented")
    sharded_opt = GroupShardedOptimizer(optimizer, level, group)
    sharded_model = GroupShardedModel(model, sharded_opt, group, sync_buffers)
    return sharded_model, sharded_opt, scaler


def save_group_sharded_model(model, output, optimizer=None):
    """Writes the full model state (`output`/model.pdmodel) and, with `optimizer`, the full optimizer
    state gathered from every partition (`output`/model.pdopt) from rank 0; every rank must call it (the
    optimizer state is gathered collectively). Both load into the unwrapped model and optimizer (or into
    them before group_sharded_parallel)."""
    from ... import save
    if not hasattr(model, "_sharding_optimizer"):
        raise ValueError("save_group_sharded_model: model must be the model group_sharded_parallel returned")
    while optimizer is not None and hasattr(optimizer, "_inner_opt"):  # fleet's gradient merge wrapper
        optimizer = optimizer._inner_opt
    if optimizer is not None and not isinstance(optimizer, GroupShardedOptimizer):
        raise ValueError("save_group_sharded_model: optimizer must be the optimizer group_sharded_parallel "
                         "returned")
    if not isinstance(output, (str, os.PathLike)):
        raise TypeError(f"save_group_sharded_model: output must be a directory path, got {type(output).__name__}")
    if os.path.isfile(output):
        raise ValueError(f"save_group_sharded_model: output {output!r} is a file; it must be a directory")
    rank, _, _ = _group_info(model._group)
    opt_state = optimizer._full_state_dict() if optimizer is not None else None
    if rank == 0:
        os.makedirs(output, exist_ok=True)
        save(model._layer.state_dict(), os.path.join(output, "model.pdmodel"))
        if opt_state is not None:
            save(opt_state, os.path.join(output, "model.pdopt"))
    _coll.barrier(group=model._group)  # the files exist on every rank's return
