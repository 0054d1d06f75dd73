"""TransformedDistribution: the distribution of y = t_n(...t_1(x)) for x from a base distribution."""
import typing

import numpy as np

from . import transform as _transform
from .. import _C
from .distribution import Distribution, _sum_rightmost, _dtype_name, _to_tensor


class TransformedDistribution(Distribution):
    def __init__(self, base, transforms):
        from .independent import Independent
        if not isinstance(base, Distribution):
            raise TypeError("TransformedDistribution: base must be a Distribution, got {}".format(type(base).__name__))
        if not isinstance(transforms, typing.Sequence):
            raise TypeError("TransformedDistribution: transforms must be a sequence of Transforms, got {}".format(
                type(transforms).__name__))
        if not all(isinstance(t, _transform.Transform) for t in transforms):
            raise TypeError("TransformedDistribution: every element of transforms must be a Transform")
        self._base = base
        self._transforms = list(transforms)
        if not self._transforms:
            super().__init__(base.batch_shape, base.event_shape)
            return
        chain = _transform.ChainTransform(self._transforms)
        base_shape = tuple(base.batch_shape) + tuple(base.event_shape)
        need = chain._domain.event_rank
        if len(base_shape) < need:
            raise ValueError("TransformedDistribution: the base's shape {} has fewer than the {} axes the "
                             "transforms' event needs".format(list(base_shape), need))
        if need > len(base.event_shape):  # the transforms read batch axes as part of one event
            base = Independent(base, need - len(base.event_shape))
            self._base = base
        shape = tuple(chain.forward_shape(base_shape))
        event_rank = chain._codomain.event_rank + max(len(base.event_shape) - need, 0)
        super().__init__(shape[:len(shape) - event_rank], shape[len(shape) - event_rank:])

    def sample(self, shape=()):
        x = self._base.sample(shape)
        for t in self._transforms:
            x = t.forward(x)
        return x

    def rsample(self, shape=()):
        x = self._base.rsample(shape)
        for t in self._transforms:
            x = t.forward(x)
        return x

    def log_prob(self, value):
        """log p(y) = log p_base(x) - sum of each transform's log|det J| at its input."""
        if not isinstance(value, _C.Tensor):  # numbers and arrays take the dtype of the base's parameters
            d = self._base
            while not hasattr(d, "dtype") and hasattr(d, "_base"):  # through Independent / Transformed
                d = d._base
            dtype = _dtype_name(getattr(d, "dtype", "float32"))
            value = _to_tensor(np.asarray(value, dtype=dtype))
        total = 0.0
        y = value
        rank = len(self.event_shape)
        for t in reversed(self._transforms):
            x = t.inverse(y)
            rank += t._domain.event_rank - t._codomain.event_rank
            total = total - _sum_rightmost(t.forward_log_det_jacobian(x), rank - t._domain.event_rank)
            y = x
        return total + _sum_rightmost(self._base.log_prob(y), rank - len(self._base.event_shape))
