"""In-place gradient clipping of parameters (Paddle's paddle.nn.utils.clip_grad_norm_ / clip_grad_value_)."""
import math

from ...autograd import no_grad
from ...framework.selected_rows import grad_tensors
from ..clip import _flat_sum_squares

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def _params(parameters):
    from ... import Tensor
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """Scales the .grad of `parameters` in place so that their joint norm (of order norm_type, inf
    allowed) is at most max_norm: each grad *= min(1, max_norm / (total_norm + 1e-6)). Returns the total
    norm before clipping (0-d tensor). error_if_nonfinite: raise RuntimeError when it is nan or inf."""
    from ... import to_tensor
    params = _params(parameters)
    max_norm, norm_type = float(max_norm), float(norm_type)
    grads = [g for p in params for g in grad_tensors(p)]  # a row-sparse gradient: its merged values
    if not grads:
        return to_tensor(0.0)
    with no_grad():
        if norm_type == 2.0:
            total = _flat_sum_squares(grads).sqrt()
        elif math.isinf(norm_type):
            from ... import concat
            flat = concat([g.reshape([-1]).abs().astype("float32") for g in grads])
            total = flat.max() if norm_type > 0 else flat.min()
        else:
            from ... import concat
            flat = concat([g.reshape([-1]).abs().astype("float32") for g in grads])
            total = flat.pow(norm_type).sum().pow(1.0 / norm_type)
        value = float(total)
        if error_if_nonfinite and not math.isfinite(value):
            raise RuntimeError(
                f"clip_grad_norm_: the total norm of order {norm_type} of the gradients is non-finite ({value}), "
                "so it cannot be clipped; set error_if_nonfinite=False to scale anyway")
        coef = max_norm / (value + 1e-6)
        if coef < 1.0:
            for g in grads:
                g.scale_(coef)
    return total


def clip_grad_value_(parameters, clip_value):
    """Clips every element of the .grad of `parameters` into [-clip_value, clip_value], in place."""
    clip_value = float(clip_value)
    with no_grad():
        for p in _params(parameters):
            for g in grad_tensors(p):
                g.clip_(-clip_value, clip_value)
