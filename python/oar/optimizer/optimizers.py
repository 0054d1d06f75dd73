"""The optimizers (Paddle's names, arguments, defaults, accumulator names and update formulas). Each
step is one fused op per parameter group (framework/src/ops_optim.cc; formulas in plugins/cpu/optim.cc
and docs/optimizer.md)."""
import math

from .. import _C
from ..regularizer import L2Decay
from ..tensor.manipulation import _index_select
from .optimizer import Optimizer, _float

__all__ = ["SGD", "Momentum", "Adam", "AdamW", "Adamax", "Adagrad", "Adadelta", "RMSProp", "Lamb"]


def _write_rows(t, rows, new_rows):
    """t[rows] = new_rows, in place (rows unique): the in-place index_put touches only those rows."""
    t[rows] = new_rows.astype(t.dtype) if new_rows.dtype != t.dtype else new_rows


def _regularizer(opt, p):
    reg = getattr(p, "regularizer", None)
    return opt.regularization if reg is None else reg


def _check_range(owner, name, v, lo, hi, hi_open=True):
    v = _float(owner, name, v)
    if not (lo <= v < hi if hi_open else lo <= v <= hi):
        raise ValueError(f"{owner}: {name} must be in [{lo}, {hi}{')' if hi_open else ']'}, got {v}")
    return v


def _check_nonneg(owner, name, v):
    v = _float(owner, name, v)
    if v < 0:
        raise ValueError(f"{owner}: {name} must be >= 0, got {v}")
    return v


class SGD(Optimizer):
    """param -= lr * grad."""
    _op = "merged_sgd"

    def __init__(self, learning_rate=0.001, parameters=None, weight_decay=None, grad_clip=None, multi_precision=False,
                 name=None):
        self._multi_precision = bool(multi_precision)
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)

    def _sparse_update(self, p, sr, base_lr, hyper, grad_scale):
        """Only the rows of a SelectedRows gradient change (the others have a zero gradient); with weight
        decay every row changes, so the dense update runs."""
        if _regularizer(self, p) is not None:
            return super()._sparse_update(p, sr, base_lr, hyper, grad_scale)
        sr = sr.merged()
        lr, sc = self._sparse_lr_scale(p, base_lr, grad_scale)
        rows = sr._rows
        _write_rows(p, rows, _index_select(p, rows, 0) - sr.values().astype(p.dtype) * (lr * sc))


class Momentum(Optimizer):
    """velocity = momentum * velocity + g (g = rescale_grad * grad + L2 term);
    param -= lr * velocity, or with use_nesterov param -= lr * (g + momentum * velocity)."""
    _op = "merged_momentum"
    _acc_specs = (("velocity", "state", 0.0),)
    _hyper_keys = ("momentum", "use_nesterov", "rescale_grad")

    def __init__(self, learning_rate=0.001, momentum=0.9, parameters=None, use_nesterov=False, weight_decay=None,
                 grad_clip=None, multi_precision=False, rescale_grad=1.0, use_multi_tensor=False, name=None):
        if momentum is None:
            raise ValueError("Momentum: momentum must be a float, got None")
        self._momentum = _float("Momentum", "momentum", momentum)
        self._use_nesterov = bool(use_nesterov)
        self._rescale_grad = _float("Momentum", "rescale_grad", rescale_grad)
        self._hyper_defaults = {"momentum": self._momentum, "use_nesterov": self._use_nesterov,
                                "rescale_grad": self._rescale_grad}
        self._multi_precision = bool(multi_precision)
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)

    def _op_attrs(self, params, h):
        return {"mu": float(h["momentum"]), "use_nesterov": int(bool(h["use_nesterov"])),
                "rescale_grad": float(h["rescale_grad"])}


class Adam(Optimizer):
    """Paddle's Adam: m1 = b1 m1 + (1-b1) g; m2 = b2 m2 + (1-b2) g^2;
    param -= lr * sqrt(1-b2^t)/(1-b1^t) * m1 / (sqrt(m2) + epsilon * sqrt(1-b2^t)); amsgrad uses the
    running max of m2. lazy_mode: a row-sparse gradient (Embedding(sparse=True)) updates only its rows
    (docs/sparse.md); dense gradients ignore it. use_multi_tensor is accepted (every step is multi-tensor)."""
    _op = "merged_adam"
    _acc_specs = (("moment1", "state", 0.0), ("moment2", "state", 0.0), ("beta1_pow_acc", "pow", "beta1"),
                  ("beta2_pow_acc", "pow", "beta2"))
    _hyper_keys = ("beta1", "beta2", "epsilon")

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08, parameters=None, weight_decay=None,
                 grad_clip=None, lazy_mode=False, multi_precision=False, use_multi_tensor=False, amsgrad=False,
                 name=None):
        self._init_adam(beta1, beta2, epsilon, lazy_mode, amsgrad)
        self._multi_precision = bool(multi_precision)
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)

    def _init_adam(self, beta1, beta2, epsilon, lazy_mode, amsgrad):
        owner = type(self).__name__
        self._beta1 = _check_range(owner, "beta1", beta1, 0.0, 1.0)
        self._beta2 = _check_range(owner, "beta2", beta2, 0.0, 1.0)
        self._epsilon = _check_nonneg(owner, "epsilon", epsilon)
        self._lazy_mode = bool(lazy_mode)
        self._amsgrad = bool(amsgrad)
        self._hyper_defaults = {"beta1": self._beta1, "beta2": self._beta2, "epsilon": self._epsilon}

    def _op_attrs(self, params, h):
        return {"beta1": float(h["beta1"]), "beta2": float(h["beta2"]), "epsilon": float(h["epsilon"]),
                "amsgrad": int(self._amsgrad)}

    def _decoupled_decay(self, p, hyper):
        return 0.0

    def _sparse_update(self, p, sr, base_lr, hyper, grad_scale):
        """lazy_mode: only the rows of the SelectedRows gradient update their moments and values (Paddle's
        lazy Adam); the beta powers advance once per step as in the dense update. Without lazy_mode the
        dense update runs (every row's moments decay)."""
        reg = _regularizer(self, p)
        if not self._lazy_mode or (reg is not None and type(reg) is not L2Decay):
            return super()._sparse_update(p, sr, base_lr, hyper, grad_scale)
        sr = sr.merged()
        rows = sr._rows
        lr, sc = self._sparse_lr_scale(p, base_lr, grad_scale)
        b1, b2, eps = float(hyper["beta1"]), float(hyper["beta2"]), float(hyper["epsilon"])
        m1 = self._add_accumulator("moment1", p, 0.0, "state")
        m2 = self._add_accumulator("moment2", p, 0.0, "state")
        b1p = self._add_accumulator("beta1_pow_acc", p, b1, "pow")
        b2p = self._add_accumulator("beta2_pow_acc", p, b2, "pow")
        b1p_v, b2p_v = float(b1p.numpy().reshape(-1)[0]), float(b2p.numpy().reshape(-1)[0])
        lr_t = lr * math.sqrt(1 - b2p_v) / (1 - b1p_v)
        eps_t = eps * math.sqrt(1 - b2p_v)
        pr = _index_select(p, rows, 0)
        g = sr.values().astype(p.dtype) * sc
        if reg is not None:  # L2Decay on the rows present
            g = g + pr * reg.coeff
        m1r = _index_select(m1, rows, 0) * b1 + g * (1 - b1)
        m2r = _index_select(m2, rows, 0) * b2 + g * g * (1 - b2)
        _write_rows(m1, rows, m1r)
        _write_rows(m2, rows, m2r)
        if self._amsgrad:
            mx = self._add_accumulator("moment2_max", p, 0.0)
            m2r = _index_select(mx, rows, 0).maximum(m2r)
            _write_rows(mx, rows, m2r)
        decay = 1.0 - lr * self._decoupled_decay(p, hyper)
        _write_rows(p, rows, pr * decay - m1r / (m2r.sqrt() + eps_t) * lr_t)
        _C._assign(b1p, b1p * b1)
        _C._assign(b2p, b2p * b2)

    def _extra_inputs(self, params):
        if self._amsgrad:
            return [self._add_accumulator("moment2_max", p, 0.0) for p in params]
        return [self._dummy(p) for p in params]  # the kernel ignores moment2_max without amsgrad


class AdamW(Adam):
    """Adam with decoupled weight decay: param *= 1 - lr * weight_decay before the Adam update, for
    parameters whose name apply_decay_param_fun accepts (all when it is None); lr_ratio(param) scales
    a parameter's learning rate. weight_decay is the coefficient (not a regularizer)."""
    _hyper_keys = ("beta1", "beta2", "epsilon", "weight_decay")
    _group_sets_regularizer = False

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08, parameters=None, weight_decay=0.01,
                 use_lowprecision_moment=False, lr_ratio=None, apply_decay_param_fun=None, grad_clip=None,
                 lazy_mode=False, multi_precision=False, amsgrad=False, name=None):
        self._init_adam(beta1, beta2, epsilon, lazy_mode, amsgrad)
        self._weight_decay = _float("AdamW", "weight_decay", weight_decay)
        if lr_ratio is not None and not callable(lr_ratio):
            raise TypeError("AdamW: lr_ratio must be a function of the parameter")
        if apply_decay_param_fun is not None and not callable(apply_decay_param_fun):
            raise TypeError("AdamW: apply_decay_param_fun must be a function of the parameter name")
        self._lr_ratio = lr_ratio
        self._apply_decay_param_fun = apply_decay_param_fun
        self._hyper_defaults["weight_decay"] = self._weight_decay
        self._multi_precision = bool(multi_precision)
        Optimizer.__init__(self, learning_rate, parameters, None, grad_clip, name)
        self._coeff = self._weight_decay

    def _lr_scale(self, p):
        return 1.0 if self._lr_ratio is None else float(self._lr_ratio(p))

    def _decoupled_decay(self, p, hyper):
        fn = self._apply_decay_param_fun
        return float(hyper["weight_decay"]) if fn is None or fn(p.name) else 0.0

    def _lr_scale_is_fixed(self):
        return self._lr_ratio is None  # lr_ratio is called at every step, as in Paddle

    def _op_attrs(self, params, h):
        attrs = super()._op_attrs(params, h)
        wd = float(h["weight_decay"])
        fn = self._apply_decay_param_fun
        attrs["coeff"] = [wd if fn is None or fn(p.name) else 0.0 for p in params]
        return attrs


class Adamax(Optimizer):
    """m = b1 m + (1-b1) g; u = max(b2 u + epsilon, |g|); param -= lr / (1 - b1^t) * m / u."""
    _op = "merged_adamax"
    _acc_specs = (("moment", "state", 0.0), ("inf_norm", "state", 0.0), ("beta1_pow_acc", "pow", "beta1"))
    _hyper_keys = ("beta1", "beta2", "epsilon")

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08, parameters=None, weight_decay=None,
                 grad_clip=None, name=None):
        self._beta1 = _check_range("Adamax", "beta1", beta1, 0.0, 1.0)
        self._beta2 = _check_range("Adamax", "beta2", beta2, 0.0, 1.0)
        self._epsilon = _check_nonneg("Adamax", "epsilon", epsilon)
        self._hyper_defaults = {"beta1": self._beta1, "beta2": self._beta2, "epsilon": self._epsilon}
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)

    def _op_attrs(self, params, h):
        return {"beta1": float(h["beta1"]), "beta2": float(h["beta2"]), "epsilon": float(h["epsilon"])}


class Adagrad(Optimizer):
    """moment += g^2; param -= lr * g / (sqrt(moment) + epsilon)."""
    _op = "merged_adagrad"
    _acc_specs = (("moment", "state", "initial_accumulator_value"),)
    _hyper_keys = ("epsilon", "initial_accumulator_value")

    def __init__(self, learning_rate, epsilon=1e-06, parameters=None, weight_decay=None, grad_clip=None, name=None,
                 initial_accumulator_value=0.0):
        self._epsilon = _check_nonneg("Adagrad", "epsilon", epsilon)
        self.initial_accumulator_value = _float("Adagrad", "initial_accumulator_value", initial_accumulator_value)
        self._hyper_defaults = {"epsilon": self._epsilon,
                                "initial_accumulator_value": self.initial_accumulator_value}
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)

    def _op_attrs(self, params, h):
        return {"epsilon": float(h["epsilon"])}


class Adadelta(Optimizer):
    """E[g^2] = rho E[g^2] + (1-rho) g^2; d = -sqrt((E[d^2] + eps) / (E[g^2] + eps)) g;
    E[d^2] = rho E[d^2] + (1-rho) d^2; param += lr * d."""
    _op = "merged_adadelta"
    _acc_specs = (("_avg_squared_grad", "state", 0.0), ("_avg_squared_update", "state", 0.0))
    _hyper_keys = ("rho", "epsilon")

    def __init__(self, learning_rate=0.001, epsilon=1e-06, rho=0.95, parameters=None, weight_decay=None,
                 grad_clip=None, name=None):
        if epsilon is None or rho is None:
            raise ValueError("Adadelta: epsilon and rho must be floats, got None")
        self._epsilon = _check_nonneg("Adadelta", "epsilon", epsilon)
        self._rho = _check_range("Adadelta", "rho", rho, 0.0, 1.0, hi_open=False)
        self._hyper_defaults = {"rho": self._rho, "epsilon": self._epsilon}
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)

    def _op_attrs(self, params, h):
        return {"rho": float(h["rho"]), "epsilon": float(h["epsilon"])}


class RMSProp(Optimizer):
    """ms = rho ms + (1-rho) g^2; (centered: mg = rho mg + (1-rho) g, denominator ms - mg^2 + eps, else
    ms + eps); mom = momentum mom + lr g / sqrt(denominator); param -= mom."""
    _op = "merged_rmsprop"
    _acc_specs = (("mean_square", "state", 0.0), ("mean_grad", "state", 0.0), ("momentum", "state", 0.0))
    _hyper_keys = ("rho", "epsilon", "momentum", "centered")

    def __init__(self, learning_rate, rho=0.95, epsilon=1e-06, momentum=0.0, centered=False, parameters=None,
                 weight_decay=None, grad_clip=None, name=None):
        for n, v in (("rho", rho), ("epsilon", epsilon), ("momentum", momentum)):
            if v is None:
                raise ValueError(f"RMSProp: {n} must be a float, got None")
        self._rho = _check_range("RMSProp", "rho", rho, 0.0, 1.0, hi_open=False)
        self._epsilon = _check_nonneg("RMSProp", "epsilon", epsilon)
        self._momentum = _check_nonneg("RMSProp", "momentum", momentum)
        self._centered = bool(centered)
        self._hyper_defaults = {"rho": self._rho, "epsilon": self._epsilon, "momentum": self._momentum,
                                "centered": self._centered}
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)

    def _op_attrs(self, params, h):
        return {"rho": float(h["rho"]), "epsilon": float(h["epsilon"]), "momentum": float(h["momentum"]),
                "centered": int(bool(h["centered"]))}


class Lamb(Optimizer):
    """Adam moments with bias correction; r = m1_hat / (sqrt(m2_hat) + epsilon) + lamb_weight_decay * param;
    param -= lr * (||param|| / ||r||) * r (ratio 1 when a norm is 0, or for parameters excluded from
    weight decay unless always_adapt)."""
    _op = "merged_lamb"
    _acc_specs = (("moment1", "state", 0.0), ("moment2", "state", 0.0), ("beta1_pow_acc", "pow", "beta1"),
                  ("beta2_pow_acc", "pow", "beta2"))
    _hyper_keys = ("beta1", "beta2", "epsilon", "lamb_weight_decay", "exclude_from_weight_decay_fn")

    def __init__(self, learning_rate=0.001, lamb_weight_decay=0.01, beta1=0.9, beta2=0.999, epsilon=1e-06,
                 parameters=None, grad_clip=None, exclude_from_weight_decay_fn=None, multi_precision=False,
                 always_adapt=False, name=None):
        self._beta1 = _check_range("Lamb", "beta1", beta1, 0.0, 1.0)
        self._beta2 = _check_range("Lamb", "beta2", beta2, 0.0, 1.0)
        self._epsilon = _check_nonneg("Lamb", "epsilon", epsilon)
        self._lamb_weight_decay = _float("Lamb", "lamb_weight_decay", lamb_weight_decay)
        self._exclude_from_weight_decay_fn = exclude_from_weight_decay_fn
        self.always_adapt = bool(always_adapt)
        self._hyper_defaults = {"beta1": self._beta1, "beta2": self._beta2, "epsilon": self._epsilon,
                                "lamb_weight_decay": self._lamb_weight_decay,
                                "exclude_from_weight_decay_fn": exclude_from_weight_decay_fn}
        self._multi_precision = bool(multi_precision)
        super().__init__(learning_rate, parameters, None, grad_clip, name)

    def _op_attrs(self, params, h):
        wd, fn = float(h["lamb_weight_decay"]), h["exclude_from_weight_decay_fn"]
        return {"beta1": float(h["beta1"]), "beta2": float(h["beta2"]), "epsilon": float(h["epsilon"]),
                "weight_decay": [0.0 if fn is not None and fn(p) else wd for p in params],
                "always_adapt": int(self.always_adapt)}
