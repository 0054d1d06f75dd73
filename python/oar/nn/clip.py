"""Gradient clipping strategies (Paddle's paddle.nn.ClipGradByValue / ByNorm / ByGlobalNorm).

Each is passed to an optimizer as `grad_clip=` and called by it with the list of (param, grad) pairs
of a step, before weight decay; it returns a new list with the clipped gradients (new tensors: the
parameters' .grad are left as they are). Parameters with `need_clip == False` keep their gradient.
"""
from .. import _C
from ..autograd import no_grad
from ..framework.errors import AssertionValueError
from ..framework.selected_rows import SelectedRows

__all__ = ["ClipGradBase", "GradientClipBase", "ClipGradByValue", "ClipGradByNorm", "ClipGradByGlobalNorm"]


def _flat_sum_squares(grads):
    """sum(g * g) over every element of every tensor in grads, as a 0-d float tensor (float64 for
    float64 gradients): one fused op over the whole list ("merged_sum_squares"), not a reduction per
    tensor."""
    return _C.Op("merged_sum_squares")(list(grads))


def _dense_part(g):
    """The tensor whose elements are g's nonzero part: a SelectedRows gradient's merged values."""
    return g.merged().values() if isinstance(g, SelectedRows) else g


def _check_number(owner, name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{owner}: {name} must be a float, got {type(value).__name__}")
    return float(value)


class ClipGradBase:
    """Base class: `clip(params_grads)` returns the clipped list."""

    def __str__(self):
        raise NotImplementedError

    def __call__(self, params_grads):
        with no_grad():
            return self._dygraph_clip(list(params_grads))

    def _symbolic_clip(self, params_grads):
        """Clipping recorded into a static program: the scale is computed when the program runs."""
        from ..tensor.math import maximum
        norm = self.global_norm(params_grads)
        if norm is None:
            return params_grads
        scale = self.clip_norm / maximum(norm, norm * 0 + self.clip_norm)
        return [(p, g * scale.astype(g.dtype) if g is not None and getattr(p, "need_clip", True) else g)
                for p, g in params_grads]

    def _dygraph_clip(self, params_grads):
        raise NotImplementedError


GradientClipBase = ClipGradBase  # Paddle's name for the base in type checks


def _to_clip(p, g):
    return g is not None and getattr(p, "need_clip", True)


class ClipGradByValue(ClipGradBase):
    """Clips every gradient element into [min, max]; min defaults to -max (max must then be > 0)."""

    def __init__(self, max, min=None):
        max = _check_number("ClipGradByValue", "max", max)
        if min is None:
            if max <= 0.0:
                raise AssertionValueError(f"ClipGradByValue: max must be > 0 when min is None, got {max}")
            min = -max
        min = _check_number("ClipGradByValue", "min", min)
        if min > max:
            raise ValueError(f"ClipGradByValue: min ({min}) must not exceed max ({max})")
        self.max, self.min = max, min

    def __str__(self):
        return f"Clip Gradient By Value, min = {self.min:f}, max={self.max:f}"

    def _dygraph_clip(self, params_grads):
        return [(p, g.clip(self.min, self.max) if _to_clip(p, g) else g) for p, g in params_grads]


class ClipGradByNorm(ClipGradBase):
    """Clips each gradient to L2 norm at most clip_norm: g * clip_norm / ||g|| when ||g|| > clip_norm."""

    def __init__(self, clip_norm):
        self.clip_norm = _check_number("ClipGradByNorm", "clip_norm", clip_norm)
        if self.clip_norm <= 0:  # Paddle refuses it too, when clipping (ValueError from clip_by_norm)
            raise ValueError(f"ClipGradByNorm: clip_norm must be > 0, got {self.clip_norm}")

    def __str__(self):
        return f"Gradient Clip By Norm, clip_norm={self.clip_norm:f}"

    def _dygraph_clip(self, params_grads):
        out = []
        for p, g in params_grads:
            if _to_clip(p, g):
                h = _dense_part(g)
                norm = (h * h).sum().sqrt()
                # Paddle's clip_by_norm: unchanged unless the norm exceeds clip_norm
                scale = (norm.clip(min=self.clip_norm) / self.clip_norm).reciprocal().astype(g.dtype)
                g = g * scale
            out.append((p, g))
        return out


class ClipGradByGlobalNorm(ClipGradBase):
    """Scales all gradients by clip_norm / max(global_norm, clip_norm), global_norm being the L2 norm of
    all the clipped gradients together. With auto_skip_clip, gradients are left untouched (not
    multiplied) when global_norm <= clip_norm."""

    def __init__(self, clip_norm, group_name="default_group", auto_skip_clip=False):
        # Any value, as in Paddle: a negative clip_norm gives the factor clip_norm / global_norm (< 0).
        self.clip_norm = _check_number("ClipGradByGlobalNorm", "clip_norm", clip_norm)
        if not isinstance(group_name, str):
            raise TypeError(f"ClipGradByGlobalNorm: group_name must be a str, got {type(group_name).__name__}")
        self.group_name = group_name
        self.auto_skip_clip = bool(auto_skip_clip)

    def __str__(self):
        return f"Gradient Clip By GlobalNorm, global_norm={self.clip_norm:f}"

    def global_norm(self, params_grads):
        """The global L2 norm (0-d float tensor) of the gradients this strategy clips, or None."""
        grads = [_dense_part(g) for p, g in params_grads if _to_clip(p, g)]
        return _flat_sum_squares(grads).sqrt() if grads else None

    def _scale(self, params_grads):
        """The factor the clipped gradients get (a float), or None when nothing is to be scaled. The
        optimizers pass it to their fused update instead of multiplying each gradient."""
        norm = self.global_norm(params_grads)
        if norm is None:
            return None
        norm = float(norm)
        if self.auto_skip_clip and norm <= self.clip_norm:
            return None
        return self.clip_norm / max(norm, self.clip_norm)

    def _dygraph_clip(self, params_grads):
        norm = self.global_norm(params_grads)
        if norm is None:
            return params_grads
        if self.auto_skip_clip and float(norm) <= self.clip_norm:
            return params_grads
        scale = self.clip_norm / norm.clip(min=self.clip_norm)
        out = []
        for p, g in params_grads:
            if _to_clip(p, g):
                g = g * (scale if scale.dtype == g.dtype else scale.astype(g.dtype))
            out.append((p, g))
        return out
