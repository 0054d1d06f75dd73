"""Domains of transforms: whether values are discrete, how many rightmost axes form one event
(event_rank), and the constraint a value must meet."""


def _oar():
    import oar
    return oar


class Variable(object):
    def __init__(self, is_discrete=False, event_rank=0, constraint=None):
        self._is_discrete = is_discrete
        self._event_rank = event_rank
        self._constraint = constraint

    @property
    def is_discrete(self):
        return self._is_discrete

    @property
    def event_rank(self):
        return self._event_rank

    def constraint(self, value):
        return self._constraint(value)


class Real(Variable):
    def __init__(self, event_rank=0):
        super().__init__(False, event_rank, lambda v: v == v)


class Positive(Variable):
    def __init__(self, event_rank=0):
        super().__init__(False, event_rank, lambda v: v > 0)


def _range(lo, hi):
    return lambda v: (v >= lo) & (v <= hi)


def _simplex(v):
    o = _oar()
    ok = (v >= 0).all(-1)
    return ok & ((v.sum(-1) - 1).abs() < 1e-6)


class Independent(Variable):
    """`base` with its `reinterpreted_batch_rank` rightmost batch axes made part of the event."""

    def __init__(self, base, reinterpreted_batch_rank):
        self._base = base
        self._reinterpreted_batch_rank = reinterpreted_batch_rank
        super().__init__(base.is_discrete, base.event_rank + reinterpreted_batch_rank)

    def constraint(self, value):
        ok = self._base.constraint(value)
        n = self._reinterpreted_batch_rank
        if ok.ndim < n:
            raise ValueError("Independent: the value needs at least {} axes, got {}".format(n, ok.ndim))
        return ok.reshape(list(ok.shape[:ok.ndim - n]) + [-1]).all(-1) if n > 0 else ok


class Stack(Variable):
    """Domains stacked along `axis` (StackTransform)."""

    def __init__(self, vars, axis=0):
        self._vars = vars
        self._axis = axis
        super().__init__()

    @property
    def is_discrete(self):
        return any(v.is_discrete for v in self._vars)

    @property
    def event_rank(self):
        rank = max(v.event_rank for v in self._vars)
        return rank + 1 if self._axis + rank < 0 else rank

    def constraint(self, value):
        o = _oar()
        parts = o.unbind(value, self._axis)
        return o.stack([v.constraint(p) for v, p in zip(self._vars, parts)], self._axis)


real = Real()
positive = Positive()
unit_interval = Variable(False, 0, _range(0.0, 1.0))
symmetric_unit_interval = Variable(False, 0, _range(-1.0, 1.0))
simplex = Variable(False, 1, _simplex)
