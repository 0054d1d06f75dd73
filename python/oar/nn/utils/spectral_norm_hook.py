"""spectral_norm (Paddle's paddle.nn.utils.spectral_norm_hook).

The parameter `name` becomes `name + "_orig"`; buffers `name + "_u"` and `name + "_v"` hold the power
iteration's singular vectors. A forward pre-hook sets layer.<name> = weight_orig / sigma, where sigma =
u . (W v) estimates the largest singular value of W (weight_orig reshaped to [shape[dim], -1]); in
training mode it first runs n_power_iterations steps v = normalize(W^T u), u = normalize(W v).
"""
from ...autograd import no_grad
from .. import functional as F

__all__ = ["spectral_norm"]


class SpectralNorm:
    """The forward pre-hook that recomputes layer.<name> from <name>_orig, <name>_u and <name>_v."""

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        if n_power_iterations <= 0:
            raise ValueError("spectral_norm: n_power_iterations must be positive, got {}".format(n_power_iterations))
        self.name = name
        self.dim = dim
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight):
        mat = weight
        if self.dim != 0:
            mat = mat.transpose([self.dim] + [d for d in range(mat.ndim) if d != self.dim])
        return mat.reshape([mat.shape[0], -1])

    def compute_weight(self, layer, do_power_iteration):
        weight = getattr(layer, self.name + "_orig")
        u = getattr(layer, self.name + "_u")
        v = getattr(layer, self.name + "_v")
        mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v.set_value(F.normalize(mat.t().matmul(u), axis=0, epsilon=self.eps))
                    u.set_value(F.normalize(mat.matmul(v), axis=0, epsilon=self.eps))
            # Copies: sigma's graph must not see later in-place updates of the buffers.
            u = u.clone()
            v = v.clone()
        sigma = (u * mat.matmul(v)).sum()
        return weight / sigma

    def __call__(self, layer, inputs):
        setattr(layer, self.name, self.compute_weight(layer, do_power_iteration=layer.training))

    @staticmethod
    def apply(layer, name, n_power_iterations, dim, eps):
        for hook in layer._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError("spectral_norm: cannot register two spectral_norm hooks on the parameter "
                                   "'{}'".format(name))
        if name not in layer._parameters or layer._parameters[name] is None:
            raise ValueError("spectral_norm: {} has no parameter named '{}'".format(type(layer).__name__, name))
        weight = layer._parameters[name]
        if not -weight.ndim <= dim < weight.ndim:
            raise ValueError("spectral_norm: dim {} is out of range for a {}-D weight".format(dim, weight.ndim))
        fn = SpectralNorm(name, n_power_iterations, dim % weight.ndim, eps)
        from ...tensor.random import randn
        with no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).shape
            u = F.normalize(randn([h], dtype=weight.dtype).astype(weight.dtype), axis=0, epsilon=eps)
            v = F.normalize(randn([w], dtype=weight.dtype).astype(weight.dtype), axis=0, epsilon=eps)
            if u.place != weight.place:
                u, v = u._copy_to(weight.place), v._copy_to(weight.place)
        del layer._parameters[name]
        layer.add_parameter(name + "_orig", weight)
        layer.register_buffer(name, weight * 1.0, persistable=False)
        layer.register_buffer(name + "_u", u)
        layer.register_buffer(name + "_v", v)
        layer.register_forward_pre_hook(fn)
        return fn


def spectral_norm(layer, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Normalises layer.<name> by its largest singular value (power iteration); dim defaults to 1 for
    Linear and transposed convolutions (their output dim), 0 otherwise. Returns layer."""
    if dim is None:
        from ..layer.common import Linear
        from ..layer.conv import Conv1DTranspose, Conv2DTranspose, Conv3DTranspose
        dim = 1 if isinstance(layer, (Conv1DTranspose, Conv2DTranspose, Conv3DTranspose, Linear)) else 0
    SpectralNorm.apply(layer, name, n_power_iterations, dim, eps)
    return layer
