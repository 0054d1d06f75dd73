"""parameters_to_vector / vector_to_parameters (Paddle's paddle.nn.utils.transform_parameters)."""
from ... import _C
from ...autograd import no_grad

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters, name=None):
    """The parameters flattened and concatenated into one 1-D tensor (a copy, outside the autograd graph;
    stop_gradient False as Paddle)."""
    parameters = list(parameters)
    if not parameters:
        raise ValueError("parameters_to_vector: expected at least one parameter")
    dtype = parameters[0].dtype
    for p in parameters:
        if p.dtype != dtype:
            raise TypeError("parameters_to_vector: every parameter must have dtype {}, got {}".format(dtype, p.dtype))
    from ...tensor.manipulation import concat
    with no_grad():
        out = concat([p.detach().reshape([-1]) for p in parameters], axis=0)
    out.stop_gradient = False
    return out


def vector_to_parameters(vec, parameters, name=None):
    """Copies consecutive slices of the 1-D `vec` into `parameters` (in place, shapes kept). vec may be
    longer than the parameters' total size; the rest is ignored."""
    parameters = list(parameters)
    if not isinstance(vec, _C.Tensor) or vec.ndim != 1:
        raise ValueError("vector_to_parameters: vec must be a 1-D Tensor, got {}".format(
            getattr(vec, "shape", type(vec).__name__)))
    total = sum(int(p.size) for p in parameters)
    if total > vec.shape[0]:
        raise ValueError("vector_to_parameters: vec has {} elements but the parameters need {}".format(
            vec.shape[0], total))
    offset = 0
    with no_grad():
        for p in parameters:
            n = int(p.size)
            part = vec[offset:offset + n].reshape(list(p.shape))
            if part.dtype != p.dtype:
                part = part.astype(p.dtype)
            p.set_value(part)
            offset += n
