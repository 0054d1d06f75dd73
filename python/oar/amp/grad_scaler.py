"""Loss scaling (Paddle 2.x's paddle.amp.GradScaler / AmpScaler), on the core's fused ops:
check_finite_and_unscale (one pass over every gradient: unscale and look for inf/NaN) and
update_loss_scaling (the dynamic scale's counters, on the device). A step whose gradients hold inf/NaN
is skipped and, after decr_every_n_nan_or_inf such steps, the scale shrinks by decr_ratio; after
incr_every_n_steps finite steps it grows by incr_ratio."""
import collections
import enum

import numpy as np

from .. import _C


class OptimizerState(enum.Enum):
    INIT = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_state():
    return {"state": OptimizerState.INIT}


def _check_positive(fn, name, v, lo=None, integer=False):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (integer and int(v) != v):
        raise TypeError(f"{fn}: {name} must be a {'integer' if integer else 'number'}, got {v!r}")
    if lo is not None and not v >= lo:
        raise ValueError(f"{fn}: {name} must be >= {lo}, got {v!r}")


class AmpScaler:
    """Scales the loss so that low-precision gradients do not underflow, and unscales the gradients
    before the optimizer uses them (Paddle's AmpScaler; GradScaler is the same with other defaults)."""

    def __init__(self, enable=True, init_loss_scaling=2.0 ** 15, incr_ratio=2.0, decr_ratio=0.5,
                 incr_every_n_steps=1000, decr_every_n_nan_or_inf=2, use_dynamic_loss_scaling=True):
        name = type(self).__name__
        _check_positive(name, "init_loss_scaling", init_loss_scaling)
        if not init_loss_scaling > 0:
            raise ValueError(f"{name}: init_loss_scaling must be > 0, got {init_loss_scaling!r}")
        _check_positive(name, "incr_ratio", incr_ratio, 1.0)
        _check_positive(name, "decr_ratio", decr_ratio)
        if not 0 < decr_ratio < 1:
            raise ValueError(f"{name}: decr_ratio must be in (0, 1), got {decr_ratio!r}")
        _check_positive(name, "incr_every_n_steps", incr_every_n_steps, 1, integer=True)
        _check_positive(name, "decr_every_n_nan_or_inf", decr_every_n_nan_or_inf, 1, integer=True)
        self._enable = bool(enable)
        self._use_dynamic_loss_scaling = bool(use_dynamic_loss_scaling) and self._enable
        self._init_loss_scaling = float(init_loss_scaling)
        self._incr_ratio = float(incr_ratio)
        self._decr_ratio = float(decr_ratio)
        self._incr_every_n_steps = int(incr_every_n_steps)
        self._decr_every_n_nan_or_inf = int(decr_every_n_nan_or_inf)
        self._scale = self._tensor([self._init_loss_scaling], "float32")
        self._incr_count_t = self._tensor([0], "int32")  # good steps in a row
        self._decr_count_t = self._tensor([0], "int32")  # bad steps in a row
        self._found_inf = self._tensor([False], "bool")
        self._cache_founf_inf = None  # Paddle's (sic) name: whether the last step was skipped
        self._optimizer_states = collections.defaultdict(_fresh_state)

    @staticmethod
    def _tensor(values, dtype):
        from .. import to_tensor
        t = to_tensor(np.array(values, dtype=dtype))
        t.stop_gradient = True
        return t

    # ---- the loop ------------------------------------------------------------------------------------
    def scale(self, var):
        """var * the loss scale (var unchanged when disabled)."""
        if not self._enable:
            return var
        if not isinstance(var, _C.Tensor):
            raise TypeError(f"{type(self).__name__}.scale: var must be a Tensor, got {type(var).__name__}")
        s = self._scale.reshape([])
        if var.dtype != s.dtype:
            var = var.astype("float32")
        return var * s

    def _params(self, optimizer):
        return [p for p in optimizer._all_params() if not p.stop_gradient]

    def _unscale(self, optimizer):
        """Unscales the gradients of `optimizer`'s parameters in place and records whether any is inf/NaN."""
        if not self._enable:
            return
        st = self._optimizer_states[id(optimizer)]
        if st["state"] is OptimizerState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if st["state"] is OptimizerState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        from ..framework.selected_rows import grad_tensors
        grads = [g for p in self._params(optimizer) for g in grad_tensors(p)]
        from ..autograd import no_grad
        with no_grad():
            if grads:
                self._found_inf = _C.Op("check_finite_and_unscale")(grads + [self._scale])
            else:
                self._found_inf = self._tensor([False], "bool")
        st["state"] = OptimizerState.UNSCALED

    def unscale_(self, optimizer):
        """Divides the optimizer's gradients by the scale now (e.g. before clipping them)."""
        return self._unscale(optimizer)

    def _found(self):
        return bool(self._found_inf.numpy().reshape(-1)[0])

    def minimize(self, optimizer, *args, **kwargs):
        """Unscales, then optimizer.minimize(*args, **kwargs) unless a gradient is inf/NaN, then updates
        the scale. Returns what optimizer.minimize returns (None, None when the step was skipped)."""
        if not self._enable:
            return optimizer.minimize(*args, **kwargs)
        st = self._optimizer_states[id(optimizer)]
        if st["state"] is OptimizerState.INIT:
            self._unscale(optimizer)
        result = (None, None)
        if self._found():
            self._cache_founf_inf = True
        else:
            result = optimizer.minimize(*args, **kwargs)
            self._cache_founf_inf = False
        if self._use_dynamic_loss_scaling:
            self._update()
        self._optimizer_states = collections.defaultdict(_fresh_state)
        return result

    def step(self, optimizer):
        """Unscales (unless unscale_ ran), then optimizer.step() unless a gradient is inf/NaN. Call update()
        after it."""
        if not self._enable:
            return optimizer.step()
        st = self._optimizer_states[id(optimizer)]
        if st["state"] is OptimizerState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if st["state"] is OptimizerState.INIT:
            self._unscale(optimizer)
        if self._found():
            self._cache_founf_inf = True
        else:
            optimizer.step()
            self._cache_founf_inf = False
        st["state"] = OptimizerState.STEPPED
        if not self._use_dynamic_loss_scaling:
            self._optimizer_states = collections.defaultdict(_fresh_state)

    def update(self):
        """Updates the dynamic loss scale from the last step (after step())."""
        if not self._enable:
            return
        if self._use_dynamic_loss_scaling:
            self._update()
            self._optimizer_states = collections.defaultdict(_fresh_state)

    def _update(self):
        if not self._use_dynamic_loss_scaling:
            return
        from ..autograd import no_grad
        with no_grad():
            _C.Op("update_loss_scaling")(
                self._found_inf, self._scale, self._incr_count_t, self._decr_count_t,
                incr_every_n_steps=self._incr_every_n_steps, decr_every_n_nan_or_inf=self._decr_every_n_nan_or_inf,
                incr_ratio=self._incr_ratio, decr_ratio=self._decr_ratio)

    # ---- settings ------------------------------------------------------------------------------------
    def is_enable(self):
        return self._enable

    def is_use_dynamic_loss_scaling(self):
        return self._use_dynamic_loss_scaling

    def get_init_loss_scaling(self):
        return self._init_loss_scaling

    def set_init_loss_scaling(self, new_init_loss_scaling):
        _check_positive("set_init_loss_scaling", "new_init_loss_scaling", new_init_loss_scaling)
        self._init_loss_scaling = float(new_init_loss_scaling)
        self._scale = self._tensor([self._init_loss_scaling], "float32")

    def get_incr_ratio(self):
        return self._incr_ratio

    def set_incr_ratio(self, new_incr_ratio):
        _check_positive("set_incr_ratio", "new_incr_ratio", new_incr_ratio, 1.0)
        self._incr_ratio = float(new_incr_ratio)

    def get_decr_ratio(self):
        return self._decr_ratio

    def set_decr_ratio(self, new_decr_ratio):
        if not (isinstance(new_decr_ratio, (int, float)) and 0 < new_decr_ratio < 1):
            raise ValueError(f"set_decr_ratio: new_decr_ratio must be in (0, 1), got {new_decr_ratio!r}")
        self._decr_ratio = float(new_decr_ratio)

    def get_incr_every_n_steps(self):
        return self._incr_every_n_steps

    def set_incr_every_n_steps(self, new_incr_every_n_steps):
        _check_positive("set_incr_every_n_steps", "new_incr_every_n_steps", new_incr_every_n_steps, 1, True)
        self._incr_every_n_steps = int(new_incr_every_n_steps)

    def get_decr_every_n_nan_or_inf(self):
        return self._decr_every_n_nan_or_inf

    def set_decr_every_n_nan_or_inf(self, new_decr_every_n_nan_or_inf):
        _check_positive("set_decr_every_n_nan_or_inf", "new_decr_every_n_nan_or_inf", new_decr_every_n_nan_or_inf,
                        1, True)
        self._decr_every_n_nan_or_inf = int(new_decr_every_n_nan_or_inf)

    def get_loss_scaling(self):
        """The current scale (a float32 Tensor of one element)."""
        return self._scale

    # ---- state ---------------------------------------------------------------------------------------
    def state_dict(self):
        """The scaler's state (empty when disabled), as Paddle's."""
        if not self._enable:
            return {}
        return {
            "scale": self._scale.numpy(),
            "incr_ratio": self._incr_ratio,
            "decr_ratio": self._decr_ratio,
            "incr_every_n_steps": self._incr_every_n_steps,
            "decr_every_n_nan_or_inf": self._decr_every_n_nan_or_inf,
            "incr_count": int(self._incr_count_t.numpy()[0]),
            "decr_count": int(self._decr_count_t.numpy()[0]),
            "use_dynamic_loss_scaling": self._use_dynamic_loss_scaling,
        }

    def load_state_dict(self, state_dict):
        if not self._enable:
            return
        if not isinstance(state_dict, dict) or not state_dict:
            raise RuntimeError("load_state_dict: the state dict is empty, possibly because it was saved from a "
                               "disabled instance of GradScaler")
        scale = np.asarray(state_dict["scale"], dtype="float32").reshape(-1)
        self._init_loss_scaling = float(scale[0])
        self._scale = self._tensor([self._init_loss_scaling], "float32")
        self._incr_ratio = float(state_dict["incr_ratio"])
        self._decr_ratio = float(state_dict["decr_ratio"])
        self._incr_every_n_steps = int(state_dict["incr_every_n_steps"])
        self._decr_every_n_nan_or_inf = int(state_dict["decr_every_n_nan_or_inf"])
        self._incr_count_t = self._tensor([int(state_dict["incr_count"])], "int32")
        self._decr_count_t = self._tensor([int(state_dict["decr_count"])], "int32")
        self._use_dynamic_loss_scaling = bool(state_dict["use_dynamic_loss_scaling"])

    set_state_dict = load_state_dict


class GradScaler(AmpScaler):
    """Paddle's paddle.amp.GradScaler: AmpScaler with init_loss_scaling 2**16, incr_every_n_steps 2000 and
    decr_every_n_nan_or_inf 1.

        scaler = oar.amp.GradScaler(init_loss_scaling=1024)
        with oar.amp.auto_cast(dtype='bfloat16'):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt); scaler.update()        # or: scaler.minimize(opt, scaled)
        opt.clear_grad()
    """

    def __init__(self, enable=True, init_loss_scaling=2.0 ** 16, incr_ratio=2.0, decr_ratio=0.5,
                 incr_every_n_steps=2000, decr_every_n_nan_or_inf=1, use_dynamic_loss_scaling=True):
        super().__init__(enable, init_loss_scaling, incr_ratio, decr_ratio, incr_every_n_steps,
                         decr_every_n_nan_or_inf, use_dynamic_loss_scaling)
