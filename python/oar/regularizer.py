"""oar.regularizer: weight-decay regularizers (Paddle's paddle.regularizer).

A regularizer adds a term to a parameter's gradient before the optimizer update: L2Decay adds
coeff * param, L1Decay adds coeff * sign(param). Set one on an optimizer (`weight_decay=`; a float
means L2Decay) or on a parameter (`ParamAttr(regularizer=...)`, `param.regularizer`), which then takes
precedence over the optimizer's. The optimizers fuse L2Decay into their update kernels.
"""
__all__ = ["L1Decay", "L2Decay", "WeightDecayRegularizer"]


class WeightDecayRegularizer:
    """Base class: `regularizer(param, grad)` returns the term added to grad."""

    def __init__(self, coeff=0.0):
        if isinstance(coeff, bool) or not isinstance(coeff, (int, float)):
            raise TypeError(f"{type(self).__name__}: coeff must be a float, got {type(coeff).__name__}")
        self._coeff = float(coeff)

    @property
    def coeff(self):
        return self._coeff

    def __call__(self, param, grad, block=None):
        raise NotImplementedError

    def __str__(self):
        return f"{type(self).__name__}, coeff={self._coeff:f}"

    __repr__ = __str__


class L2Decay(WeightDecayRegularizer):
    """L2 weight decay: adds coeff * param to the gradient (loss + coeff/2 * ||param||^2)."""

    def __call__(self, param, grad, block=None):
        return param.scale(self._coeff)


class L1Decay(WeightDecayRegularizer):
    """L1 weight decay: adds coeff * sign(param) to the gradient (loss + coeff * ||param||_1)."""

    def __call__(self, param, grad, block=None):
        return param.sign().scale(self._coeff)
