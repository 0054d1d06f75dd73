"""weight_norm / remove_weight_norm (Paddle's paddle.nn.utils.weight_norm_hook).

weight_norm replaces the parameter `name` by two parameters, `name + "_g"` (magnitude: the norm of each
slice along `dim`) and `name + "_v"` (direction), and recomputes weight = g * v / ||v|| in a forward
pre-hook, so gradients flow to g and v. dim=None (or -1) uses one norm for the whole tensor.
"""
from ...autograd import no_grad
from .. import functional as F

__all__ = ["weight_norm", "remove_weight_norm"]


def _norm_except_dim(p, dim):
    """The L2 norm of every slice p[..., i, ...] along `dim` (shape [p.shape[dim]]); dim -1: a 0-D norm."""
    if dim == -1:
        return ((p * p).sum() + 1e-12).sqrt()
    perm = [dim] + [d for d in range(p.ndim) if d != dim]
    mat = p.transpose(perm).reshape([p.shape[dim], -1])
    return ((mat * mat).sum(axis=1) + 1e-12).sqrt()


def _new_param_like(layer, shape, value):
    """A parameter of `layer` holding `value`, on value's device (create_parameter makes it on the default
    device)."""
    p = layer.create_parameter(list(shape), dtype=value.dtype)
    with no_grad():
        if p.place != value.place:
            p._replace_with(p._to_place(value.place).detach())
            p.stop_gradient = False
        p.set_value(value)
    return p


def _weight_norm(v, g, dim):
    if dim == -1:
        return v / ((v * v).sum().sqrt() + 1e-12) * g
    perm = [dim] + [d for d in range(v.ndim) if d != dim]
    mat = v.transpose(perm).reshape([v.shape[dim], -1])
    mat = F.normalize(mat, axis=1)
    shape = [1] * v.ndim
    shape[dim] = v.shape[dim]
    inv = [perm.index(d) for d in range(v.ndim)]
    direction = mat.reshape([v.shape[d] for d in perm]).transpose(inv)
    return direction * g.reshape(shape)


class WeightNorm:
    """The forward pre-hook that recomputes layer.<name> from <name>_g and <name>_v."""

    def __init__(self, name, dim):
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, layer):
        return _weight_norm(getattr(layer, self.name + "_v"), getattr(layer, self.name + "_g"), self.dim)

    @staticmethod
    def apply(layer, name, dim):
        # Setting up runs eagerly, also while a program is being built (as layers' __init__ does): the new
        # parameters get their values now; the forward pre-hook is what programs record.
        from ...static.program import _eager_guard
        with _eager_guard():
            return WeightNorm._apply(layer, name, dim)

    @staticmethod
    def _apply(layer, name, dim):
        for hook in layer._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError("weight_norm: cannot register two weight_norm hooks on the parameter "
                                   "'{}'".format(name))
        if name not in layer._parameters or layer._parameters[name] is None:
            raise ValueError("weight_norm: {} has no parameter named '{}'".format(type(layer).__name__, name))
        w = layer._parameters[name]
        rank = w.ndim
        if dim is None:
            dim = -1
        if not -rank <= dim < rank:
            raise ValueError("weight_norm: dim must be in [-{0}, {0}) for a {0}-D weight, got {1}".format(rank, dim))
        if dim != -1:
            dim = dim % rank
        fn = WeightNorm(name, dim)
        with no_grad():
            g_value = _norm_except_dim(w, dim)
        del layer._parameters[name]
        layer.add_parameter(name + "_v", _new_param_like(layer, w.shape, w.detach()))
        layer.add_parameter(name + "_g", _new_param_like(layer, g_value.shape, g_value))
        # As Paddle: the computed weight is a non-persistable buffer (not in state_dict).
        layer.register_buffer(name, fn.compute_weight(layer), persistable=False)
        layer.register_forward_pre_hook(fn)
        return fn

    def remove(self, layer):
        with no_grad():
            w_value = self.compute_weight(layer)
        delattr(layer, self.name)
        del layer._parameters[self.name + "_g"]
        del layer._parameters[self.name + "_v"]
        layer.add_parameter(self.name, _new_param_like(layer, w_value.shape, w_value))

    def __call__(self, layer, inputs):
        setattr(layer, self.name, self.compute_weight(layer))


def weight_norm(layer, name="weight", dim=0):
    """Reparameterises layer.<name> as g * v / ||v|| (norms over every dim but `dim`); returns layer."""
    WeightNorm.apply(layer, name, dim)
    return layer


def remove_weight_norm(layer, name="weight"):
    """Folds g and v back into a single parameter layer.<name>; returns layer."""
    for key, hook in list(layer._forward_pre_hooks.items()):
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(layer)
            del layer._forward_pre_hooks[key]
            return layer
    raise ValueError("remove_weight_norm: weight_norm of '{}' not found in {}".format(name, type(layer).__name__))
