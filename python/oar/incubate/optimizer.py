"""Optimizer wrappers from paddle.incubate: LookAhead (k fast steps of an inner optimizer, then the
slow weights move alpha of the way to the fast ones and the fast weights restart there) and ModelAverage
(a sliding-window average of the parameters, swapped in by apply() and back by restore()). Both keep
their state in tensors named after the parameters, as Paddle's accumulators, so state_dict round-trips."""
import contextlib
import numbers

import numpy as np

from .. import _C
from ..autograd import no_grad
from ..tensor.creation import zeros, zeros_like

__all__ = ["LookAhead", "ModelAverage"]

# Paddle's average_accumulates moves sum_1 into sum_2 every this many updates (float32 precision).
_MAX_NUM_ACCUMULATES = 16384


def _params_of(owner, parameters):
    if parameters is None:
        raise AttributeError("{}: parameters must be given (a list of tensors)".format(owner))
    if isinstance(parameters, _C.Tensor):
        raise TypeError("{}: parameters must be a list of tensors, not one Tensor".format(owner))
    params = []
    for p in parameters:
        if isinstance(p, dict):  # a parameter group
            params.extend(p["params"])
        else:
            params.append(p)
    for p in params:
        if not isinstance(p, _C.Tensor):
            raise TypeError("{}: parameters must be tensors, got {}".format(owner, type(p).__name__))
    return params


def _with_grad(params):
    return [p for p in params if not p.stop_gradient and p.grad is not None]


class LookAhead:
    """LookAhead(inner_optimizer, alpha=0.5, k=5): after every k-th step of inner_optimizer,
    slow = slow + alpha * (fast - slow) and fast = slow; slow starts as the parameters after the first
    step (Paddle's rule). alpha in [0, 1], k a positive int."""

    def __init__(self, inner_optimizer, alpha=0.5, k=5, name=None):
        if inner_optimizer is None or not hasattr(inner_optimizer, "step"):
            raise TypeError("LookAhead: inner_optimizer must be an optimizer, got {!r}".format(inner_optimizer))
        if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0.0 <= alpha <= 1.0:
            raise ValueError("LookAhead: alpha must be a float in [0, 1], got {!r}".format(alpha))
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k <= 0:
            raise ValueError("LookAhead: k must be a positive int, got {!r}".format(k))
        self.inner_optimizer = inner_optimizer
        self.alpha = float(alpha)
        self.k = int(k)
        self._name = name
        self._parameter_list = _params_of("LookAhead", inner_optimizer._all_params())
        self._slow = {}  # parameter name -> slow weights
        self._held = {}  # slow weights loaded by set_state_dict before their parameter's first step
        self._global_step = 0

    def _slow_name(self, p):
        return "{}_slow_0".format(p.name)

    @no_grad()
    def step(self):
        """One inner step, then the LookAhead update of every parameter that has a gradient."""
        self.inner_optimizer.step()
        self._global_step += 1
        sync = self._global_step % self.k == 0
        for p in _with_grad(self._parameter_list):
            slow = self._slow.get(p.name)
            if slow is None:
                slow = p.clone()
                slow.name = self._slow_name(p)
                if slow.name in self._held:
                    slow.set_value(self._held.pop(slow.name))
                self._slow[p.name] = slow
            elif self._global_step == 1:
                slow.set_value(p)
            if sync:
                slow.set_value(slow + (p - slow) * self.alpha)
                p.set_value(slow)

    def minimize(self, loss, startup_program=None, parameters=None, no_grad_set=None):
        """Dygraph minimize: the gradients must already be there (loss.backward()); one step()."""
        self.step()
        return None, [(p, p.grad) for p in _with_grad(self._parameter_list)]

    def clear_grad(self, set_to_zero=True):
        self.inner_optimizer.clear_grad(set_to_zero)

    def get_lr(self):
        return self.inner_optimizer.get_lr()

    def set_lr(self, value):
        self.inner_optimizer.set_lr(value)

    def set_lr_scheduler(self, scheduler):
        self.inner_optimizer.set_lr_scheduler(scheduler)

    def state_dict(self):
        """The inner optimizer's state, the slow weights ("<param>_slow_0") and the step count
        ("lookahead_step")."""
        out = dict(self.inner_optimizer.state_dict())
        out.update(self._held)
        for slow in self._slow.values():
            out[slow.name] = slow
        out["lookahead_step"] = self._global_step
        return out

    def set_state_dict(self, state_dict):
        state = dict(state_dict)
        step = state.pop("lookahead_step", None)
        if step is None:
            raise ValueError("LookAhead.set_state_dict: the state dict has no 'lookahead_step' entry")
        self._global_step = int(step)
        slow_names = {self._slow_name(p) for p in self._parameter_list}
        for p_name, slow in self._slow.items():
            if slow.name not in state:
                raise ValueError("LookAhead.set_state_dict: '{}' not found in the state dict".format(slow.name))
            slow.set_value(state.pop(slow.name))
        self._held = {n: state.pop(n) for n in list(state) if n in slow_names}
        self.inner_optimizer.set_state_dict(state)

    load_state_dict = set_state_dict


class ModelAverage:
    """ModelAverage(average_window_rate, parameters, min_average_window=10000, max_average_window=10000):
    step() adds the current parameters to running sums (Paddle's average_accumulates rule: the window
    restarts once num_accumulates >= min_average_window and >= min(max_average_window,
    num_updates * average_window_rate), keeping the finished window's sum); apply() swaps in the average
    over the current and the previous window, restore() puts the trained values back."""

    def __init__(self, average_window_rate, parameters=None, min_average_window=10000, max_average_window=10000,
                 name=None):
        if isinstance(average_window_rate, bool) or not isinstance(average_window_rate, numbers.Real) \
                or not average_window_rate > 0:
            raise ValueError("ModelAverage: average_window_rate must be a positive float, got {!r}".format(
                average_window_rate))
        for arg, v in (("min_average_window", min_average_window), ("max_average_window", max_average_window)):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v <= 0:
                raise ValueError("ModelAverage: {} must be a positive int, got {!r}".format(arg, v))
        if min_average_window > max_average_window:
            raise ValueError("ModelAverage: min_average_window ({}) must be <= max_average_window ({})".format(
                min_average_window, max_average_window))
        self.average_window = float(average_window_rate)
        self.min_average_window = int(min_average_window)
        self.max_average_window = int(max_average_window)
        self._name = name
        self._parameter_list = _params_of("ModelAverage", parameters)
        self._acc = {}  # parameter name -> {accumulator: tensor}
        self._host_counts = {}  # parameter name -> the counters' values (mirrors the int64 tensors)
        self._held = {}

    _SUMS = ("sum_1", "sum_2", "sum_3", "restore")
    _COUNTS = ("num_accumulates", "old_num_accumulates", "num_updates")

    def _accumulators(self, p):
        acc = self._acc.get(p.name)
        if acc is None:
            acc = {}
            for key in self._SUMS + self._COUNTS:
                t = zeros_like(p) if key in self._SUMS else zeros([1], dtype="int64")
                t.name = "{}_{}_0".format(p.name, key)
                if t.name in self._held:
                    t.set_value(self._held.pop(t.name))
                acc[key] = t
            self._acc[p.name] = acc
        return acc

    @no_grad()
    def step(self):
        """Accumulates every parameter that has a gradient (call it after the optimizer's step)."""
        for p in _with_grad(self._parameter_list):
            a = self._accumulators(p)
            counts = self._counts(p, a)  # host copies: no device read per step
            num_updates = counts["num_updates"] + 1
            num_acc = counts["num_accumulates"] + 1
            old_num = counts["old_num_accumulates"]
            a["sum_1"].set_value(a["sum_1"] + p)
            if num_updates % _MAX_NUM_ACCUMULATES == 0:  # move the sum along before float32 loses it
                a["sum_2"].set_value(a["sum_2"] + a["sum_1"])
                a["sum_1"].set_value(zeros_like(p))
            if num_acc >= self.min_average_window and \
                    num_acc >= min(self.max_average_window, int(num_updates * self.average_window)):
                a["sum_3"].set_value(a["sum_1"] + a["sum_2"])
                a["sum_1"].set_value(zeros_like(p))
                a["sum_2"].set_value(zeros_like(p))
                old_num, num_acc = num_acc, 0
            counts.update(num_updates=num_updates, num_accumulates=num_acc, old_num_accumulates=old_num)
            for key in self._COUNTS:
                a[key].set_value(np.array([counts[key]], np.int64))

    def _counts(self, p, a):
        c = self._host_counts.get(p.name)
        if c is None:
            c = self._host_counts[p.name] = {key: int(a[key].item()) for key in self._COUNTS}
        return c

    def minimize(self, loss, startup_program=None, parameters=None, no_grad_set=None):
        """Dygraph minimize, as Paddle's: one step() (the gradients must already be there)."""
        self.step()

    def clear_grad(self, set_to_zero=True):
        _C._clear_grads(self._parameter_list, bool(set_to_zero))

    @contextlib.contextmanager
    def apply(self, executor=None, need_restore=True):
        """Context manager: inside it the parameters hold their averages ((sum_1 + sum_2 + sum_3) /
        (num_accumulates + old_num_accumulates), computed in float32 as Paddle); on exit they get
        their trained values back unless need_restore is False (then call restore() later)."""
        with no_grad():
            for p in self._parameter_list:
                a = self._acc.get(p.name)
                if a is None:
                    continue  # never accumulated (no gradient yet): the parameter stays as it is
                c = self._counts(p, a)
                total = c["num_accumulates"] + c["old_num_accumulates"]
                if total == 0:
                    raise RuntimeError("ModelAverage.apply: parameter '{}' has no accumulated values".format(p.name))
                a["restore"].set_value(p)
                s = (a["sum_1"] + a["sum_2"] + a["sum_3"]).astype("float32")
                p.set_value(s / float(total))
        try:
            yield
        finally:
            if need_restore:
                self.restore()

    @no_grad()
    def restore(self, executor=None):
        """Puts back the parameter values saved by apply()."""
        for p in self._parameter_list:
            a = self._acc.get(p.name)
            if a is not None:
                p.set_value(a["restore"])

    def state_dict(self):
        """Every accumulator, named "<param>_<sum_1|sum_2|sum_3|restore|num_accumulates|
        old_num_accumulates|num_updates>_0" as Paddle's."""
        out = dict(self._held)
        for acc in self._acc.values():
            for t in acc.values():
                out[t.name] = t
        return out

    def set_state_dict(self, state_dict):
        state = dict(state_dict)
        for acc in self._acc.values():
            for t in acc.values():
                if t.name not in state:
                    raise ValueError("ModelAverage.set_state_dict: '{}' not found in the state dict".format(t.name))
                t.set_value(state.pop(t.name))
        self._host_counts = {}  # re-read from the loaded tensors
        self._held = state

    load_state_dict = set_state_dict
