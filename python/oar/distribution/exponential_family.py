"""ExponentialFamily: p(x) = h(x) exp(<eta, T(x)> - A(eta)). Its entropy (and the KL divergence between
two members of one family) come from the log normaliser A by automatic differentiation."""
from .distribution import Distribution, _sum_rightmost


def _differentiable(params):
    """The natural parameters as tensors autograd can differentiate A with respect to: a parameter
    that already requires gradients is kept (so the result's gradient reaches the user's tensors through
    grad A, computed with create_graph), a constant one gets a differentiable copy."""
    out = []
    for p in params:
        if p.stop_gradient:
            p = p.detach()
            p.stop_gradient = False
        out.append(p)
    return out


class ExponentialFamily(Distribution):
    @property
    def _natural_parameters(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_parameters):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        """H = A(eta) - <eta, grad A(eta)> - E[log h(x)]."""
        import oar
        etas = _differentiable(self._natural_parameters)
        with oar.enable_grad():  # also inside no_grad: the gradient is part of the value
            log_norm = self._log_normalizer(*etas)
            grads = oar.grad(log_norm.sum(), etas, create_graph=True)
        ent = log_norm - self._mean_carrier_measure
        for p, g in zip(etas, grads):
            ent = ent - _sum_rightmost(p * g, len(self.event_shape))
        return ent
