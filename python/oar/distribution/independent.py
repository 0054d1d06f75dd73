"""Independent: reinterprets the rightmost batch axes of a distribution as event axes."""
import numbers

from .distribution import Distribution, _sum_rightmost


class Independent(Distribution):
    def __init__(self, base, reinterpreted_batch_rank):
        if not isinstance(base, Distribution):
            raise TypeError("Independent: base must be a Distribution, got {}".format(type(base).__name__))
        n = reinterpreted_batch_rank
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or not 0 < n <= len(base.batch_shape):
            raise ValueError("Independent: reinterpreted_batch_rank must be an int in (0, {}] (the base's batch "
                             "rank), got {!r}".format(len(base.batch_shape), n))
        self._base = base
        self._reinterpreted_batch_rank = int(n)
        shape = tuple(base.batch_shape) + tuple(base.event_shape)
        k = len(base.batch_shape) - self._reinterpreted_batch_rank
        super().__init__(shape[:k], shape[k:])

    @property
    def mean(self):
        return self._base.mean

    @property
    def variance(self):
        return self._base.variance

    def sample(self, shape=()):
        return self._base.sample(shape)

    def rsample(self, shape=()):
        return self._base.rsample(shape)

    def log_prob(self, value):
        return _sum_rightmost(self._base.log_prob(value), self._reinterpreted_batch_rank)

    def prob(self, value):
        return self.log_prob(value).exp()

    def entropy(self):
        return _sum_rightmost(self._base.entropy(), self._reinterpreted_batch_rank)
