"""oar.optimizer.lr: learning-rate schedulers (Paddle's paddle.optimizer.lr).

A scheduler holds `last_epoch` (steps taken, -1 before the first) and `last_lr`; constructing one takes
the first step (last_epoch 0). `scheduler()` is the current rate, `step()` advances it (call it once per
epoch or iteration, as you define it), `state_dict()` / `set_state_dict()` save and restore
`last_epoch` and `last_lr` (plus the scheduler's own counters). Pass a scheduler as an optimizer's
`learning_rate`; the optimizer reads `scheduler()` at each step. The formulas are Paddle's.
"""
import math
import warnings

import numpy as np

from ..framework.errors import AssertionValueError

__all__ = ["LRScheduler", "NoamDecay", "PiecewiseDecay", "NaturalExpDecay", "InverseTimeDecay",
           "PolynomialDecay", "LinearWarmup", "ExponentialDecay", "MultiStepDecay", "StepDecay", "LambdaDecay",
           "ReduceOnPlateau", "CosineAnnealingDecay", "MultiplicativeDecay", "OneCycleLR", "CyclicLR"]


def _number(owner, name, v):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"{owner}: {name} must be a float, got {type(v).__name__}")
    return float(v)


def _positive_int(owner, name, v):
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"{owner}: {name} must be an int, got {type(v).__name__}")
    if v <= 0:
        # Paddle asserts this; the message carries Paddle's wording ('warmup_steps' must be a positive integer)
        raise AssertionValueError(f"{owner}: '{name}' must be a positive integer, got {v}")
    return v


class LRScheduler:
    """Base class. Subclasses implement get_lr() from self.base_lr and self.last_epoch."""

    def __init__(self, learning_rate=0.1, last_epoch=-1, verbose=False):
        learning_rate = _number(type(self).__name__, "learning_rate", learning_rate)
        if learning_rate < 0:
            raise ValueError(f"{type(self).__name__}: learning_rate must be >= 0, got {learning_rate}")
        self.base_lr = learning_rate
        self.last_lr = learning_rate
        self.last_epoch = last_epoch
        self.verbose = verbose
        self.step()

    def __call__(self):
        return self.last_lr

    def step(self, epoch=None):
        """Advances one step, or jumps to `epoch` (using the closed form where there is one)."""
        if epoch is None:
            self.last_epoch += 1
            self.last_lr = self.get_lr()
        else:
            self.last_epoch = epoch
            closed = getattr(self, "_get_closed_form_lr", None)
            self.last_lr = closed() if closed else self.get_lr()
        if self.verbose:
            print(f"Epoch {self.last_epoch}: {type(self).__name__} set learning rate to {self.last_lr}.")

    def get_lr(self):
        raise NotImplementedError

    def state_keys(self):
        self.keys = ["last_epoch", "last_lr"]

    def state_dict(self):
        self.state_keys()
        out = {}
        for k in self.keys:
            if k not in self.__dict__:
                continue
            v = self.__dict__[k]
            if hasattr(v, "numpy"):  # a one-element tensor (a metric kept as best)
                v = float(v)
            out[k] = v
        return out

    def set_state_dict(self, state_dict):
        self.state_keys()
        for k in self.keys:
            if k not in state_dict:
                raise RuntimeError(f"{type(self).__name__}.set_state_dict: key '{k}' missing from the state dict")
            self.__dict__[k] = state_dict[k]
        if len(state_dict) > len(self.keys):
            warnings.warn(f"{type(self).__name__}.set_state_dict: the state dict has keys this scheduler does not use")

    set_dict = set_state_dict


class NoamDecay(LRScheduler):
    """lr = learning_rate * d_model^-0.5 * min(epoch^-0.5, epoch * warmup_steps^-1.5) (epoch 0: the first
    term is 1)."""

    def __init__(self, d_model, warmup_steps, learning_rate=1.0, last_epoch=-1, verbose=False):
        if d_model <= 0:
            raise ValueError(f"NoamDecay: d_model must be > 0, got {d_model}")
        self.d_model, self.warmup_steps = d_model, warmup_steps
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        a = 1 if self.last_epoch == 0 else self.last_epoch ** -0.5
        b = self.warmup_steps ** -1.5 * self.last_epoch
        return self.base_lr * self.d_model ** -0.5 * min(a, b)


class PiecewiseDecay(LRScheduler):
    """values[i] while epoch < boundaries[i]; values[-1] after the last boundary."""

    def __init__(self, boundaries, values, last_epoch=-1, verbose=False):
        if len(boundaries) == 0:
            raise ValueError("PiecewiseDecay: boundaries must not be empty")
        if len(values) <= len(boundaries):
            raise ValueError(f"PiecewiseDecay: values needs len(boundaries) + 1 = {len(boundaries) + 1} entries, "
                             f"got {len(values)}")
        self.boundaries, self.values = list(boundaries), list(values)
        super().__init__(last_epoch=last_epoch, verbose=verbose)

    def get_lr(self):
        for b, v in zip(self.boundaries, self.values):
            if self.last_epoch < b:
                return v
        return self.values[-1]


class NaturalExpDecay(LRScheduler):
    """lr = learning_rate * exp(-gamma * epoch)."""

    def __init__(self, learning_rate, gamma, last_epoch=-1, verbose=False):
        if not gamma > 0.0:
            raise ValueError(f"NaturalExpDecay: gamma must be > 0, got {gamma}")
        self.gamma = gamma
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * math.exp(-1 * self.gamma * self.last_epoch)


class InverseTimeDecay(LRScheduler):
    """lr = learning_rate / (1 + gamma * epoch)."""

    def __init__(self, learning_rate, gamma, last_epoch=-1, verbose=False):
        self.gamma = gamma
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr / (1 + self.gamma * self.last_epoch)


class PolynomialDecay(LRScheduler):
    """lr = (learning_rate - end_lr) * (1 - t / T)^power + end_lr with t = min(epoch, decay_steps) and
    T = decay_steps; with cycle, t = epoch and T = decay_steps * ceil(epoch / decay_steps) (1 at 0)."""

    def __init__(self, learning_rate, decay_steps, end_lr=0.0001, power=1.0, cycle=False, last_epoch=-1,
                 verbose=False):
        self.decay_steps = _positive_int("PolynomialDecay", "decay_steps", decay_steps)
        if not power > 0.0:
            raise ValueError(f"PolynomialDecay: power must be > 0, got {power}")
        self.end_lr, self.power, self.cycle = end_lr, power, cycle
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        t, T = self.last_epoch, self.decay_steps
        if self.cycle:
            T = self.decay_steps * (1 if t == 0 else math.ceil(t / self.decay_steps))
        else:
            t = min(t, self.decay_steps)
        return (self.base_lr - self.end_lr) * (1 - float(t) / float(T)) ** self.power + self.end_lr


class LinearWarmup(LRScheduler):
    """start_lr -> end_lr linearly over warmup_steps, then learning_rate (a float, or a scheduler
    stepped to epoch - warmup_steps)."""

    def __init__(self, learning_rate, warmup_steps, start_lr, end_lr, last_epoch=-1, verbose=False):
        if isinstance(learning_rate, bool) or not isinstance(learning_rate, (int, float, LRScheduler)):
            raise TypeError("LinearWarmup: learning_rate must be a float or an LRScheduler, got "
                            f"{type(learning_rate).__name__}")
        self.learning_rate = learning_rate
        self.warmup_steps = _positive_int("LinearWarmup", "warmup_steps", warmup_steps)
        if not end_lr > start_lr:
            raise ValueError(f"LinearWarmup: end_lr ({end_lr}) must be greater than start_lr ({start_lr})")
        self.start_lr, self.end_lr = start_lr, end_lr
        super().__init__(start_lr, last_epoch, verbose)

    def state_dict(self):
        out = super().state_dict()
        if isinstance(self.learning_rate, LRScheduler):
            out["LinearWarmup_LR"] = self.learning_rate.state_dict()
        return out

    def set_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        inner = state_dict.pop("LinearWarmup_LR", None)
        super().set_state_dict(state_dict)
        if isinstance(self.learning_rate, LRScheduler):
            if inner is None:
                raise RuntimeError("LinearWarmup.set_state_dict: key 'LinearWarmup_LR' missing from the state dict")
            self.learning_rate.set_state_dict(inner)

    def get_lr(self):
        if self.last_epoch < self.warmup_steps:
            return (self.end_lr - self.start_lr) * float(self.last_epoch) / float(self.warmup_steps) + self.start_lr
        if isinstance(self.learning_rate, LRScheduler):
            self.learning_rate.step(self.last_epoch - self.warmup_steps)
            return self.learning_rate()
        return self.learning_rate


class ExponentialDecay(LRScheduler):
    """lr = learning_rate * gamma^epoch, 0 < gamma < 1."""

    def __init__(self, learning_rate, gamma, last_epoch=-1, verbose=False):
        if not 0.0 < gamma < 1.0:
            raise ValueError(f"ExponentialDecay: gamma must be in (0, 1), got {gamma}")
        self.gamma = gamma
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * self.gamma ** self.last_epoch


class MultiStepDecay(LRScheduler):
    """lr = learning_rate * gamma^(number of milestones <= epoch)."""

    def __init__(self, learning_rate, milestones, gamma=0.1, last_epoch=-1, verbose=False):
        if not isinstance(milestones, (tuple, list)):
            raise TypeError(f"MultiStepDecay: milestones must be a list or tuple, got {type(milestones).__name__}")
        if any(a >= b for a, b in zip(milestones, milestones[1:])):
            raise ValueError(f"MultiStepDecay: milestones must be increasing, got {list(milestones)}")
        if gamma >= 1.0:
            raise ValueError(f"MultiStepDecay: gamma must be < 1.0, got {gamma}")
        self.milestones, self.gamma = milestones, gamma
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        for i, m in enumerate(self.milestones):
            if self.last_epoch < m:
                return self.base_lr * self.gamma ** i
        return self.base_lr * self.gamma ** len(self.milestones)


class StepDecay(LRScheduler):
    """lr = learning_rate * gamma^(epoch // step_size)."""

    def __init__(self, learning_rate, step_size, gamma=0.1, last_epoch=-1, verbose=False):
        self.step_size = _positive_int("StepDecay", "step_size", step_size)
        if gamma >= 1.0:
            raise ValueError(f"StepDecay: gamma must be < 1.0, got {gamma}")
        self.gamma = gamma
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * self.gamma ** (self.last_epoch // self.step_size)


class LambdaDecay(LRScheduler):
    """lr = learning_rate * lr_lambda(epoch)."""

    def __init__(self, learning_rate, lr_lambda, last_epoch=-1, verbose=False):
        if not callable(lr_lambda):
            raise TypeError(f"LambdaDecay: lr_lambda must be callable, got {type(lr_lambda).__name__}")
        self.lr_lambda = lr_lambda
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * self.lr_lambda(self.last_epoch)


class ReduceOnPlateau(LRScheduler):
    """Multiplies the rate by `factor` (not below min_lr) when the metric passed to step(metrics) has not
    improved for more than `patience` steps, then waits `cooldown` steps. Improvement: mode 'min'/'max',
    threshold relative ('rel': best * (1 -/+ threshold)) or absolute ('abs': best -/+ threshold)."""

    def __init__(self, learning_rate, mode="min", factor=0.1, patience=10, threshold=1e-4, threshold_mode="rel",
                 cooldown=0, min_lr=0, epsilon=1e-8, verbose=False):
        mode = str(mode).lower()
        if mode not in ("min", "max"):
            raise ValueError(f"ReduceOnPlateau: mode must be 'min' or 'max', got '{mode}'")
        if factor >= 1.0:
            raise ValueError(f"ReduceOnPlateau: factor must be < 1.0, got {factor}")
        threshold_mode = str(threshold_mode).lower()
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"ReduceOnPlateau: threshold_mode must be 'rel' or 'abs', got '{threshold_mode}'")
        learning_rate = _number("ReduceOnPlateau", "learning_rate", learning_rate)
        self.mode, self.factor, self.threshold_mode = mode, factor, threshold_mode
        self.patience, self.threshold, self.cooldown = patience, threshold, cooldown
        self.min_lr, self.epsilon = min_lr, epsilon
        self.cooldown_counter = 0
        self.best = None
        self.num_bad_epochs = 0
        self.base_lr = self.last_lr = learning_rate
        self.last_epoch = 0  # no step at construction: the first step needs a metric
        self.verbose = verbose

    def state_keys(self):
        self.keys = ["cooldown_counter", "best", "num_bad_epochs", "last_epoch", "last_lr"]

    def step(self, metrics, epoch=None):
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        if hasattr(metrics, "numpy") or isinstance(metrics, np.ndarray):
            if int(np.prod(metrics.shape)) != 1:
                raise ValueError("ReduceOnPlateau.step: metrics must have one element, got shape "
                                 f"{list(metrics.shape)}")
            metrics = float(np.asarray(metrics._numpy_view() if hasattr(metrics, "numpy") else metrics).reshape(()))
        elif isinstance(metrics, bool) or not isinstance(metrics, (int, float, np.floating, np.integer)):
            raise TypeError(f"ReduceOnPlateau.step: metrics must be a number or a one-element tensor, got "
                            f"{type(metrics).__name__}")
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            return
        if self.best is None or self._is_better(metrics, self.best):
            self.best = metrics
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.num_bad_epochs > self.patience:
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
            new_lr = max(self.last_lr * self.factor, self.min_lr)
            if self.last_lr - new_lr > self.epsilon:  # changes smaller than epsilon are ignored
                self.last_lr = new_lr
                if self.verbose:
                    print(f"Epoch {self.last_epoch}: ReduceOnPlateau set learning rate to {self.last_lr}.")

    def _is_better(self, current, best):
        if self.mode == "min":
            return current < (best - best * self.threshold if self.threshold_mode == "rel" else best - self.threshold)
        return current > (best + best * self.threshold if self.threshold_mode == "rel" else best + self.threshold)


class CosineAnnealingDecay(LRScheduler):
    """Cosine annealing, with Paddle's recursive form when stepped one by one:
    lr_t = (1 + cos(pi t / T)) / (1 + cos(pi (t-1) / T)) * (lr_{t-1} - eta_min) + eta_min, and at the
    restart points lr_{t-1} + (base - eta_min) (1 - cos(pi / T)) / 2. step(epoch) uses the closed form
    eta_min + (base - eta_min) (1 + cos(pi epoch / T)) / 2."""

    def __init__(self, learning_rate, T_max, eta_min=0, last_epoch=-1, verbose=False):
        self.T_max = _positive_int("CosineAnnealingDecay", "T_max", T_max)
        self.eta_min = _number("CosineAnnealingDecay", "eta_min", eta_min)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        t, T = self.last_epoch, self.T_max
        if t == 0:
            return self.base_lr
        if (t - 1 - T) % (2 * T) == 0:
            return self.last_lr + (self.base_lr - self.eta_min) * (1 - math.cos(math.pi / T)) / 2
        return ((1 + math.cos(math.pi * t / T)) / (1 + math.cos(math.pi * (t - 1) / T)) *
                (self.last_lr - self.eta_min) + self.eta_min)

    def _get_closed_form_lr(self):
        return self.eta_min + (self.base_lr - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2


class MultiplicativeDecay(LRScheduler):
    """lr = learning_rate * prod(lr_lambda(e) for e in 1..epoch)."""

    def __init__(self, learning_rate, lr_lambda, last_epoch=-1, verbose=False):
        if not callable(lr_lambda):
            raise TypeError(f"MultiplicativeDecay: lr_lambda must be callable, got {type(lr_lambda).__name__}")
        self.lr_lambda = lr_lambda
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        lr = self.base_lr
        for e in range(1, self.last_epoch + 1):
            lr = lr * self.lr_lambda(e)
        return lr


class OneCycleLR(LRScheduler):
    """One cycle: max_learning_rate / divide_factor up to max_learning_rate over phase_pct of total_steps,
    then down to end_learning_rate (three_phase: back to the initial rate first, then to the end),
    annealing by 'cos' or 'linear'."""

    def __init__(self, max_learning_rate, total_steps, divide_factor=25.0, end_learning_rate=0.0001, phase_pct=0.3,
                 anneal_strategy="cos", three_phase=False, last_epoch=-1, verbose=False):
        max_learning_rate = _number("OneCycleLR", "max_learning_rate", max_learning_rate)
        if max_learning_rate < 0:
            raise ValueError(f"OneCycleLR: max_learning_rate must be >= 0, got {max_learning_rate}")
        end_learning_rate = _number("OneCycleLR", "end_learning_rate", end_learning_rate)
        if end_learning_rate < 0:
            raise ValueError(f"OneCycleLR: end_learning_rate must be >= 0, got {end_learning_rate}")
        self.total_steps = _positive_int("OneCycleLR", "total_steps", total_steps)
        if not isinstance(phase_pct, float):
            raise TypeError(f"OneCycleLR: phase_pct must be a float, got {type(phase_pct).__name__}")
        if not 0 <= phase_pct <= 1:
            raise ValueError(f"OneCycleLR: phase_pct must be in [0, 1], got {phase_pct}")
        initial_lr = max_learning_rate / _number("OneCycleLR", "divide_factor", divide_factor)
        n = self.total_steps
        if three_phase:
            if phase_pct >= 0.5:
                raise ValueError(f"OneCycleLR: phase_pct must be < 0.5 with three_phase, got {phase_pct}")
            self._step_config = [0, phase_pct * n - 1, 2 * phase_pct * n - 2, n - 1, n - 1]
            s = self._step_config
            self._steps_size = [s[1] - s[0], s[2] - s[1], s[3] - s[2], s[3] - s[2]]
            self._lr_config = [initial_lr, max_learning_rate, initial_lr, end_learning_rate]
        else:
            self._step_config = [0, phase_pct * n - 1, n - 1, n - 1]
            s = self._step_config
            self._steps_size = [s[1] - s[0], s[2] - s[1], s[2] - s[1]]
            self._lr_config = [initial_lr, max_learning_rate, end_learning_rate]
        if anneal_strategy == "cos":
            self.anneal_func = self._cos_annealing
        elif anneal_strategy == "linear":
            self.anneal_func = self._linear_annealing
        else:
            raise ValueError(f"OneCycleLR: anneal_strategy must be 'cos' or 'linear', got '{anneal_strategy}'")
        super().__init__(initial_lr, last_epoch, verbose)

    @staticmethod
    def _cos_annealing(start_lr, end_lr, pct):
        return end_lr + (start_lr - end_lr) / 2.0 * (math.cos(math.pi * pct) + 1)

    @staticmethod
    def _linear_annealing(start_lr, end_lr, pct):
        return (end_lr - start_lr) * pct + start_lr

    def get_lr(self):
        t = self.last_epoch
        if t > self.total_steps:
            raise ValueError(f"OneCycleLR: stepped {t} times, but total_steps is {self.total_steps}")
        last = len(self._lr_config) - 2
        for i, (end_step, size) in enumerate(zip(self._step_config[1:], self._steps_size)):
            if t <= end_step or i == last:
                return self.anneal_func(self._lr_config[i], self._lr_config[i + 1], (t - self._step_config[i]) / size)


class CyclicLR(LRScheduler):
    """Cycles between base_learning_rate and max_learning_rate: up over step_size_up steps, down over
    step_size_down (default step_size_up); the amplitude is scaled by mode 'triangular' (1),
    'triangular2' (halved each cycle), 'exp_range' (exp_gamma^iterations), or scale_fn(cycle or
    iterations, per scale_mode)."""

    def __init__(self, base_learning_rate, max_learning_rate, step_size_up, step_size_down=None, mode="triangular",
                 exp_gamma=1.0, scale_fn=None, scale_mode="cycle", last_epoch=-1, verbose=False):
        max_learning_rate = _number("CyclicLR", "max_learning_rate", max_learning_rate)
        if max_learning_rate < 0:
            raise ValueError(f"CyclicLR: max_learning_rate must be >= 0, got {max_learning_rate}")
        up = _positive_int("CyclicLR", "step_size_up", step_size_up)
        down = up if step_size_down is None else _positive_int("CyclicLR", "step_size_down", step_size_down)
        if not isinstance(exp_gamma, float):
            raise TypeError(f"CyclicLR: exp_gamma must be a float, got {type(exp_gamma).__name__}")
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError(f"CyclicLR: mode must be 'triangular', 'triangular2' or 'exp_range' (or give scale_fn), "
                             f"got '{mode}'")
        if scale_mode not in ("cycle", "iterations"):
            raise ValueError(f"CyclicLR: scale_mode must be 'cycle' or 'iterations', got '{scale_mode}'")
        self.cycle_size = float(up + down)
        self.step_up_pct = up / self.cycle_size
        self.max_lr = max_learning_rate
        self.amplitude = self.max_lr - base_learning_rate
        self.mode, self.gamma = mode, exp_gamma
        if scale_fn is not None:
            self.scale_fn, self.scale_mode = scale_fn, scale_mode
        elif mode == "triangular":
            self.scale_fn, self.scale_mode = (lambda x: 1.0), "cycle"
        elif mode == "triangular2":
            self.scale_fn, self.scale_mode = (lambda x: 1 / (2.0 ** (x - 1))), "cycle"
        else:
            self.scale_fn, self.scale_mode = (lambda x: self.gamma ** x), "iterations"
        super().__init__(base_learning_rate, last_epoch, verbose)

    def get_lr(self):
        it = self.last_epoch
        cycle = 1 + it // self.cycle_size
        pct = 1.0 + it / self.cycle_size - cycle
        scale = pct / self.step_up_pct if pct <= self.step_up_pct else (1 - pct) / (1 - self.step_up_pct)
        x = cycle if self.scale_mode == "cycle" else it
        return self.base_lr + self.amplitude * scale * self.scale_fn(x)
