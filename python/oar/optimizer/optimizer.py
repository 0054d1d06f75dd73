"""The Optimizer base class (Paddle's paddle.optimizer.Optimizer, dygraph behaviour).

A step: collect (param, grad) for every parameter with stop_gradient False and a gradient; clip
(grad_clip); add weight decay (the parameter's regularizer, else the optimizer's; L2Decay is fused
into the update kernel); then ONE fused op per parameter group and dtype/place ("merged_<opt>",
framework/src/ops_optim.cc) updates every parameter and its accumulators in place.

Accumulators (moments, beta powers, ...) are created at the first step, named as Paddle names them:
"<param.name>_<accumulator>_0" (with the optimizer's `name` as prefix of <accumulator> when given);
state_dict() maps those names to the tensors (plus "LR_Scheduler" with a scheduler's state).
"""
from collections import defaultdict

from .. import _C
from ..autograd import no_grad
from ..regularizer import L2Decay, WeightDecayRegularizer
from ..framework import selected_rows as _selected_rows
from ..framework.parameter import Parameter, _attr_version
from ..framework.selected_rows import SelectedRows
from .lr import LambdaDecay, LRScheduler

__all__ = ["Optimizer"]


_LOW_FLOATS = (_C.float16, _C.bfloat16)

# Graphs capturing now (oar.device.cuda.graphs.CUDAGraph): a step taken during a capture is noted, so that
# replay can refuse once the learning rate changed (the fused update ops hold it as an attribute).
_CAPTURE_WATCH = []


def _step_rates(opt):
    """The learning rates a step of `opt` would use now: the base rate and each group's own."""
    groups = opt._param_groups if opt._param_groups and isinstance(opt._param_groups[0], dict) else []
    return (float(opt.get_lr()),) + tuple(float(g.get("learning_rate", 1.0)) for g in groups)

def _float(owner, name, v):
    if hasattr(v, "numpy") and not isinstance(v, (int, float)):  # a one-element tensor
        v = float(v)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"{owner}: {name} must be a float, got {type(v).__name__}")
    return float(v)


def _optimize_attr(p):
    attr = getattr(p, "optimize_attr", None)
    if attr is None:
        attr = {"learning_rate": 1.0}
        p.optimize_attr = attr
    return attr


class Optimizer:
    """Base class; subclasses set `_op` (the merged op), `_acc_specs` (accumulators in the op's block
    order: (name, kind, fill) with kind "state" (param-shaped) or "pow" (one element, a beta power))
    and `_hyper_keys` (group-overridable hyperparameters), and may override `_op_attrs`."""

    _op = None
    _acc_specs = ()
    _hyper_keys = ()
    _group_sets_regularizer = True  # Paddle's groups set param.regularizer from their weight_decay

    def __init__(self, learning_rate, parameters=None, weight_decay=None, grad_clip=None, name=None):
        owner = type(self).__name__
        from ..static import program as _prog
        static_default = parameters is None and _prog._in_static_mode()
        if static_default:
            parameters = [None]  # static mode: minimize() takes the program's parameters
        if parameters is None:
            raise AttributeError(f"{owner}: parameters must be given (a list of tensors or of parameter-group dicts)")
        if isinstance(parameters, _C.Tensor):
            raise TypeError(f"{owner}: parameters must be a list of tensors, not one Tensor")
        if isinstance(parameters, dict):
            raise TypeError(f"{owner}: parameters must be a list; for parameter groups pass a list of dicts")
        if isinstance(parameters, set):
            raise TypeError(f"{owner}: parameters must be an ordered collection (list), not a set")
        self._parameter_list = list(parameters)
        if not self._parameter_list:
            raise ValueError(f"{owner}: parameters is empty")
        if isinstance(learning_rate, LRScheduler):
            self._learning_rate = learning_rate
        else:
            self._learning_rate = _float(owner, "learning_rate", learning_rate)
        if grad_clip is not None and not callable(grad_clip):
            raise TypeError(f"{owner}: grad_clip must be a ClipGradByValue/ByNorm/ByGlobalNorm, "
                            f"got {type(grad_clip).__name__}")
        if isinstance(weight_decay, bool):
            raise TypeError(f"{owner}: weight_decay must be a float or a regularizer, got bool")
        if isinstance(weight_decay, (int, float)):
            self.regularization = L2Decay(float(weight_decay))
        elif weight_decay is None or isinstance(weight_decay, WeightDecayRegularizer):
            self.regularization = weight_decay
        else:
            raise TypeError(f"{owner}: weight_decay must be a float, L1Decay or L2Decay, got "
                            f"{type(weight_decay).__name__}")
        self._grad_clip = grad_clip
        self._name = name
        self._multi_precision = bool(getattr(self, "_multi_precision", False))  # subclasses set it first
        self._accumulators = defaultdict(dict)  # accumulator name -> {param.name: tensor}
        self._accumulators_holder = {}          # state loaded before the accumulators exist
        self._dummies = {}
        self._default_dict = {"weight_decay": self.regularization, "grad_clip": self._grad_clip,
                              **getattr(self, "_hyper_defaults", {})}
        self._param_groups = []
        if isinstance(self._parameter_list[0], dict):
            for group in self._parameter_list:
                self._add_param_group(dict(group))
        else:
            self._param_groups = self._parameter_list
        if static_default:
            self._parameter_list, self._param_groups = None, []
        self.clear_gradients = self.clear_grad

    # ---- parameter groups -------------------------------------------------------------------------
    def _add_param_group(self, group):
        if "params" not in group:
            raise ValueError(f"{type(self).__name__}: a parameter group needs a 'params' entry")
        params = group["params"]
        if isinstance(params, set):
            raise TypeError(f"{type(self).__name__}: a group's params must be a list, not a set")
        group["params"] = [params] if isinstance(params, _C.Tensor) else list(params)
        for k, v in self._default_dict.items():
            group.setdefault(k, v)
        seen = {id(p) for g in self._param_groups for p in g["params"]}
        if any(id(p) in seen for p in group["params"]):
            raise ValueError(f"{type(self).__name__}: some parameters appear in more than one parameter group")
        for p in group["params"]:
            if self._group_sets_regularizer:
                wd = group["weight_decay"]
                p.regularizer = L2Decay(float(wd)) if isinstance(wd, (int, float)) and not isinstance(wd, bool) else wd
            # Paddle: the group's learning_rate is a multiplier of the optimizer's rate
            _optimize_attr(p)["learning_rate"] = group.get("learning_rate", 1.0)
        self._param_groups.append(group)

    def _all_params(self):
        if self._param_groups and isinstance(self._param_groups[0], dict):
            return [p for g in self._param_groups for p in g["params"]]
        return list(self._param_groups)

    # ---- learning rate ----------------------------------------------------------------------------
    def get_lr(self):
        """The current learning rate (the scheduler's value when one is used)."""
        lr = self._learning_rate
        return float(lr()) if isinstance(lr, LRScheduler) else float(lr)

    def set_lr(self, value):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"set_lr: value must be a float, got {type(value).__name__}")
        if isinstance(self._learning_rate, LRScheduler):
            raise RuntimeError("set_lr: the optimizer's learning rate is an LRScheduler; step the scheduler "
                               "instead (setting it would conflict)")
        self._learning_rate = float(value)

    def set_lr_scheduler(self, scheduler):
        if not isinstance(scheduler, LRScheduler):
            raise TypeError(f"set_lr_scheduler: scheduler must be an LRScheduler, got {type(scheduler).__name__}")
        self._learning_rate = scheduler

    # ---- accumulators -----------------------------------------------------------------------------
    def _add_accumulator(self, name, param, fill_value=0.0, kind="state"):
        if self._name is not None:
            name = self._name + "_" + name
        acc = self._accumulators[name].get(param.name)
        if acc is not None:
            return acc
        from .. import full
        if kind == "pow":  # one element; float32 unless the parameter is float64
            dtype = "float64" if param.dtype == _C.float64 else "float32"
            acc = full([1], fill_value, dtype=dtype)
        else:
            acc = full(param.shape, fill_value, dtype=param.dtype)
        if not acc.place == param.place:
            acc = acc.to(param.place)
        acc.name = f"{param.name}_{name}_0"
        acc.persistable = True
        if acc.name in self._accumulators_holder:
            acc.set_value(self._accumulators_holder.pop(acc.name))
        self._accumulators[name][param.name] = acc
        return acc

    def _get_accumulator(self, name, param):
        if self._name is not None:
            name = self._name + "_" + name
        return self._accumulators[name][param.name]

    def _dummy(self, param):
        key = (str(param.dtype), str(param.place))
        if key not in self._dummies:
            from .. import zeros
            self._dummies[key] = zeros([1], dtype=param.dtype).to(param.place)
        return self._dummies[key]

    # ---- state --------------------------------------------------------------------------------------
    def state_dict(self):
        """{accumulator name: tensor} (+ "LR_Scheduler": the scheduler's state dict). Empty before the
        first step, as in Paddle (except for state loaded and not yet used)."""
        out = dict(self._accumulators_holder)
        for accs in self._accumulators.values():
            for t in accs.values():
                out[t.name] = t
        if isinstance(self._learning_rate, LRScheduler):
            out["LR_Scheduler"] = self._learning_rate.state_dict()
        masters = self.__dict__.get("_master_weights")
        if masters:
            out["master_weights"] = dict(masters)
        return out

    def set_state_dict(self, state_dict):
        """Loads accumulators (tensors or arrays, by name) and the scheduler state. Accumulators not
        created yet take their values when the first step creates them."""
        state_dict = dict(state_dict)
        lr_state = state_dict.pop("LR_Scheduler", None)
        if isinstance(self._learning_rate, LRScheduler):
            if lr_state is None and not isinstance(self._learning_rate, LambdaDecay):
                raise ValueError("set_state_dict: the state dict has no 'LR_Scheduler' entry, but this optimizer "
                                 "uses an LRScheduler")
            if lr_state:
                self._learning_rate.set_state_dict(lr_state)
        held = dict(state_dict.pop("master_weights", None) or {})
        for name, m in self.__dict__.get("_master_weights", {}).items():
            if name in held:
                m.set_value(held.pop(name))
        self._master_holder = held  # masters not created yet take these values when the first step makes them
        existing = {t.name: t for accs in self._accumulators.values() for t in accs.values()}
        for name, t in existing.items():
            if name not in state_dict:
                raise ValueError(f"set_state_dict: optimizer tensor '{name}' not found in the state dict")
            t.set_value(state_dict.pop(name))
        self._accumulators_holder = state_dict

    load_state_dict = set_state_dict

    # ---- gradients ----------------------------------------------------------------------------------
    def clear_grad(self, set_to_zero=True):
        """Clears the gradients of the optimized parameters (zeros them, or sets them to None); one C++
        call for all of them (zeroing is deferred to the next read or accumulation, see docs/optimizer.md)."""
        _C._clear_grads(self._all_params(), bool(set_to_zero))
        if _selected_rows._holders:
            for p in self._all_params():
                _selected_rows.clear_sparse_grad(p)

    def zero_grad(self, set_to_none=True):
        self.clear_grad(set_to_zero=not set_to_none)

    # ---- steps ----------------------------------------------------------------------------------------
    @staticmethod
    def _params_grads(params):
        return [(p, p.grad) for p in params if not p.stop_gradient and p.grad is not None]

    def step(self):
        """Updates the parameters from their current gradients (backward must have run)."""
        if _CAPTURE_WATCH:
            for g in _CAPTURE_WATCH:
                g._note_optimizer(self)
        with no_grad():
            if self._param_groups and isinstance(self._param_groups[0], dict):
                for i, group in enumerate(self._param_groups):
                    self._step_params(group["params"], group, i)
            else:
                self._step_params(self._param_groups, None, None)

    def _step_params(self, params, group, slot):
        """One step over `params` (a group's, or all): through the cached plan of `slot` when it is
        still valid, else as _apply does (building a new plan when the parameters allow one)."""
        grads, key = _C._params_grads(params)
        if _selected_rows._holders and any(_selected_rows.sparse_grad(p) is not None for p in params):
            # row-sparse gradients (Embedding(sparse=True)): the general path, which knows SelectedRows
            self._apply([(p, g) for p, g in self._params_grads(params)], group)
            return
        if self._multi_precision and any(p.dtype in _LOW_FLOATS for p in params):  # master weights: general path
            self._apply([(p, g) for p, g in zip(params, grads) if g is not None], group)
            return
        clip = self._grad_clip if group is None else group.get("grad_clip", self._grad_clip)
        plans = self.__dict__.setdefault("_plans", {})
        plan = plans.get(slot)
        if plan is None or not plan.valid(self, key, clip):
            plan = plans[slot] = _Plan.build(self, params, grads, key, group, clip)
        if plan.buckets is None:  # not cacheable: the general path
            self._apply([(p, g) for p, g in zip(params, grads) if g is not None], group)
            return
        if not plan.buckets:
            return
        grad_scale = None
        if clip is not None:  # a ClipGradByGlobalNorm (the only clip a plan allows): its scale goes in the update
            grad_scale = clip._scale([(p, g) for p, g in zip(params, grads) if g is not None])
        hyper = {k: self._group_value(group, k) for k in self._hyper_keys}
        base_lr = self.get_lr()
        for b in plan.buckets:
            b.run(self, grads, base_lr, hyper, grad_scale)

    def minimize(self, loss, startup_program=None, parameters=None, no_grad_set=None):
        """Dygraph minimize, as Paddle's: does NOT run backward (call loss.backward() first); updates the
        given parameters (tensors or names; default: all) except no_grad_set, and returns
        (None, [(param, grad), ...]). In a static program (loss is a program variable) it appends the
        backward ops and the update ops to the program instead, as Paddle's static minimize."""
        if _C._is_symbolic(loss):
            return self._minimize_static(loss, parameters, no_grad_set)
        params = self._all_params()
        if parameters:
            wanted = {p if isinstance(p, str) else p.name for p in parameters}
            params = [p for p in params if p.name in wanted]
        if no_grad_set:
            skip = {p if isinstance(p, str) else p.name for p in no_grad_set}
            params = [p for p in params if p.name not in skip]
        params_grads = self._params_grads(params)
        with no_grad():
            self._apply(params_grads, None)
        return None, params_grads

    def _minimize_static(self, loss, parameters, no_grad_set):
        from ..static import append_backward
        if parameters is None and self._parameter_list:
            parameters = self._all_params()
        params_grads = append_backward(loss, parameter_list=parameters, no_grad_set=no_grad_set)
        from ..static import program as _prog
        builder = _prog.default_main_program()._builder
        role = builder.op_role
        builder.op_role = 2  # Paddle's op_role Optimize
        program = _prog.default_main_program()
        first = program.desc.num_ops(0)
        # The ops are recorded with a learning rate of 1, so their `learning_rate` attributes hold the
        # per-parameter multipliers; the program then keeps them at multiplier x get_lr() before each run
        # (Program._sync_lr), so a scheduler stepped between runs takes effect.
        self.get_lr = lambda: 1.0
        try:
            with no_grad():
                self._apply(params_grads, None)
        finally:
            del self.get_lr
            builder.op_role = role
        program._track_lr(self, first)
        return None, params_grads

    def _group_value(self, group, key):
        return group[key] if group is not None and key in group else self._default_dict[key]

    # ---- multi_precision: float32 master weights of float16/bfloat16 parameters -----------------------
    def _master(self, p):
        masters = self.__dict__.setdefault("_master_weights", {})
        m = masters.get(p.name)
        if m is None:
            m = p.astype("float32").detach()
            m.name = p.name  # the accumulators are named after the parameter, as Paddle's
            m.persistable = True
            for attr in ("optimize_attr", "regularizer", "need_clip"):
                if hasattr(p, attr):
                    setattr(m, attr, getattr(p, attr))
            held = self.__dict__.get("_master_holder", {}).pop(p.name, None)
            if held is not None:
                m.set_value(held)
            masters[p.name] = m
        return m

    def _with_masters(self, params_grads):
        """multi_precision: each float16/bfloat16 parameter is updated through its float32 master weight with
        the gradient in float32; returns the pairs to update and the (parameter, master) pairs to copy back."""
        if not self._multi_precision:
            return params_grads, []
        out, back = [], []
        for p, g in params_grads:
            if p.dtype in _LOW_FLOATS and not _C._is_symbolic(p):
                m = self._master(p)
                out.append((m, g if g is None or g.dtype == _C.float32 else g.astype("float32")))
                back.append((p, m))
            else:
                out.append((p, g))
        return out, back

    def _apply(self, params_grads, group):
        if not params_grads:
            return
        params_grads, back = self._with_masters(params_grads)
        self._apply_updates(params_grads, group)
        for p, m in back:  # the low-precision parameter is the rounded master weight
            p.set_value(m.astype(p.dtype))

    def _apply_updates(self, params_grads, group):
        clip = self._grad_clip if group is None else group.get("grad_clip", self._grad_clip)
        grad_scale = None
        if clip is not None:
            from ..nn.clip import ClipGradByGlobalNorm
            if type(clip) is ClipGradByGlobalNorm and any(not isinstance(g, SelectedRows) and _C._is_symbolic(g) for _, g in params_grads):
                params_grads = clip._symbolic_clip(params_grads)  # a static program: the scale is a variable
            elif type(clip) is ClipGradByGlobalNorm:
                # one norm op, then the scale goes into the fused update (no multiply per gradient)
                grad_scale = clip._scale(params_grads)
            else:
                params_grads = clip(params_grads)
        hyper = {k: self._group_value(group, k) for k in self._hyper_keys}
        base_lr = self.get_lr()
        # Split by dtype and place: one fused op each.
        buckets = {}
        for p, g in params_grads:
            if isinstance(g, SelectedRows):
                self._sparse_update(p, g, base_lr, hyper, grad_scale)
            elif g is not None:
                buckets.setdefault((p.dtype, p.place), []).append((p, g))
        for items in buckets.values():
            self._update(items, base_lr, hyper, grad_scale)

    def _regularize(self, p, g, scale):
        """Returns (grad, L2 coefficient, gradient scale) for the fused update: L2Decay and the clipping
        scale are applied by the kernel; any other regularizer is added here, after the scaling."""
        reg = getattr(p, "regularizer", None)
        if reg is None:
            reg = self.regularization
        if reg is None:
            return g, 0.0, scale
        if type(reg) is L2Decay:
            return g, reg.coeff, scale
        if scale != 1.0:
            g = g.scale(scale)
        return g + reg(p, g), 0.0, 1.0

    def _state_inputs(self, params, hyper):
        """The accumulator inputs of the fused op for these parameters (block by block), cached per
        parameter list: accumulators are created once and then updated in place."""
        key = tuple(map(id, params))
        cache = self.__dict__.setdefault("_input_cache", {})
        hit = cache.get(key)
        if hit is not None:
            return hit[1]
        flat = []
        for name, kind, fill in self._acc_specs:
            fill = hyper[fill] if isinstance(fill, str) else fill
            flat += [self._add_accumulator(name, p, fill, kind) for p in params]
        flat += self._extra_inputs(params)
        cache[key] = (params, flat)  # holding params keeps their ids from being reused
        return flat

    def _update(self, items, base_lr, hyper, grad_scale=None):
        params = [p for p, _ in items]
        grads, l2, lrs, scales = [], [], [], []
        for p, g in items:
            sc = 1.0 if grad_scale is None or not getattr(p, "need_clip", True) else grad_scale
            g, c, sc = self._regularize(p, g, sc)
            grads.append(g)
            l2.append(c)
            scales.append(sc)
            attr = getattr(p, "optimize_attr", None)
            mult = 1.0 if attr is None else float(attr.get("learning_rate", 1.0))
            lrs.append(base_lr * mult * self._lr_scale(p))
        attrs = self._op_attrs(params, hyper)
        attrs["learning_rate"] = lrs if len(set(lrs)) > 1 else lrs[:1]
        attrs["l2_coeff"] = l2 if len(set(l2)) > 1 else l2[:1]
        attrs["grad_scale"] = scales if len(set(scales)) > 1 else scales[:1]
        prev = _C._set_builder(None)  # accumulators are created with values, also while a program is built
        try:
            state = self._state_inputs(params, hyper)
        finally:
            _C._set_builder(prev)
        _C.Op(self._op)(params + grads + state, **attrs)

    # Subclass hooks.
    def _sparse_update(self, p, sr, base_lr, hyper, grad_scale):
        """The update from a SelectedRows gradient. By default that of the dense gradient it stands for
        (what Paddle's non-lazy optimizers do: rows absent from it still decay their moments)."""
        self._update([(p, sr.to_dense())], base_lr, hyper, grad_scale)

    def _sparse_lr_scale(self, p, base_lr, grad_scale):
        """(learning rate, gradient scale) of p in a row-wise update, as _update computes them."""
        sc = 1.0 if grad_scale is None or not getattr(p, "need_clip", True) else grad_scale
        attr = getattr(p, "optimize_attr", None)
        mult = 1.0 if attr is None else float(attr.get("learning_rate", 1.0))
        return base_lr * mult * self._lr_scale(p), sc

    def _lr_scale(self, p):
        return 1.0

    def _lr_scale_is_fixed(self):
        """True when _lr_scale(p) gives the same value at every step (a step plan may keep it)."""
        return True

    def _op_attrs(self, params, hyper):
        return {}

    def _extra_inputs(self, params):
        return []


class _Bucket:
    """One fused update of a plan: parameters of one dtype and place, their per-parameter attributes and
    accumulator inputs (see _Plan)."""
    __slots__ = ("params", "index", "lr_factors", "lr_uniform", "l2", "need_clip", "clip_uniform", "state", "op")

    def __init__(self, opt, items, index, hyper):
        params = [p for p, _ in items]
        self.params = params
        self.index = index  # positions of the gradients in the group's list, or None when it is all of them
        # (optimize_attr multiplier, lr scale) per parameter: the learning rate is base * mult * scale,
        # multiplied in that order as _update does.
        self.lr_factors = [(float(p.optimize_attr.get("learning_rate", 1.0)), opt._lr_scale(p)) for p in params]
        self.lr_uniform = self.lr_factors[0] if len(set(self.lr_factors)) == 1 else None
        l2 = [opt._regularize(p, g, 1.0)[1] for p, g in items]
        self.l2 = l2 if len(set(l2)) > 1 else l2[:1]
        self.need_clip = [bool(getattr(p, "need_clip", True)) for p in params]
        self.clip_uniform = self.need_clip[0] if len(set(self.need_clip)) == 1 else None
        prev = _C._set_builder(None)
        try:
            self.state = opt._state_inputs(params, hyper)
        finally:
            _C._set_builder(prev)
        self.op = _C.Op(opt._op)

    def run(self, opt, grads, base_lr, hyper, grad_scale):
        params = self.params
        if self.index is not None:
            grads = [grads[i] for i in self.index]
        if self.lr_uniform is not None:
            m, s = self.lr_uniform
            lr = [base_lr * m * s]
        else:
            lrs = [base_lr * m * s for m, s in self.lr_factors]
            lr = lrs if len(set(lrs)) > 1 else lrs[:1]
        if grad_scale is None:
            scale = [1.0]
        elif self.clip_uniform is not None:
            scale = [grad_scale if self.clip_uniform else 1.0]
        else:
            scale = [grad_scale if c else 1.0 for c in self.need_clip]
            scale = scale if len(set(scale)) > 1 else scale[:1]
        attrs = opt._op_attrs(params, hyper)
        attrs["learning_rate"] = lr
        attrs["l2_coeff"] = self.l2
        attrs["grad_scale"] = scale
        self.op(params + grads + self.state, **attrs)


class _Plan:
    """What a step needs that does not change between steps: which parameters have gradients, their
    split into fused updates by dtype and place, and their learning-rate multipliers, L2 coefficients,
    need_clip flags and accumulators. Valid while the parameters, which of them have gradients and
    their dtypes and places are the same (`key`, from _C._params_grads), no Parameter attribute an
    optimizer reads changed (parameter._attr_version), and the regularizers and the clip's type are
    the same. Parameters that are not Parameters (whose attributes are not tracked), regularizers other
    than L2Decay (an op per gradient), clips other than ClipGradByGlobalNorm and per-parameter learning
    rate functions (AdamW's lr_ratio) make a plan without buckets: those steps take the general path."""
    __slots__ = ("key", "version", "default_reg", "regs", "clip_type", "buckets", "params")

    def valid(self, opt, key, clip):
        if (key != self.key or self.version != _attr_version[0] or opt.regularization is not self.default_reg
                or type(clip) is not self.clip_type):
            return False
        return all(r.coeff == c for r, c in self.regs)

    @staticmethod
    def build(opt, params, grads, key, group, clip):
        plan = _Plan()
        plan.key, plan.version, plan.default_reg, plan.clip_type = key, _attr_version[0], opt.regularization, type(clip)
        plan.params = list(params)  # keeps the objects (and so the addresses in key) alive
        plan.regs, plan.buckets = [], None
        if clip is not None and type(clip) is not _global_norm_clip():
            return plan
        if not opt._lr_scale_is_fixed() or not all(type(p) is Parameter for p in params):
            return plan
        regs = {}
        for p in params:
            reg = p.regularizer if p.regularizer is not None else opt.regularization
            if reg is not None:
                if type(reg) is not L2Decay:
                    return plan
                regs[id(reg)] = (reg, reg.coeff)
        plan.regs = list(regs.values())
        hyper = {k: opt._group_value(group, k) for k in opt._hyper_keys}
        buckets = {}
        for i, (p, g) in enumerate(zip(params, grads)):
            if g is not None:
                buckets.setdefault((p.dtype, p.place), []).append(i)
        plan.buckets = []
        n_grads = sum(g is not None for g in grads)
        for idx in buckets.values():
            items = [(params[i], grads[i]) for i in idx]
            whole = len(idx) == len(grads) and n_grads == len(grads)
            plan.buckets.append(_Bucket(opt, items, None if whole else idx, hyper))
        return plan


def _global_norm_clip():
    from ..nn.clip import ClipGradByGlobalNorm
    return ClipGradByGlobalNorm
