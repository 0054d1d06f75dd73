"""Complex numbers (Paddle 2.x names): taking complex tensors apart and putting them together. Each is a
core op with a gradient rule (framework/src/ops_complex.cc, docs/ops_complex.md); the arithmetic ops
(add ... pow, exp, log, sqrt, abs, sign, sum, mean, matmul) take complex dtypes themselves.

Gradients follow Paddle's convention: for a real loss L of z = x + iy, z.grad is dL/dx + i dL/dy."""
from .. import _C

__all__ = ["real", "imag", "conj", "angle", "complex", "as_complex", "as_real", "polar"]

_real = _C.Op("real")
_imag = _C.Op("imag")
_conj = _C.Op("conj")
_angle = _C.Op("angle")
_complex = _C.Op("complex")
_as_complex = _C.Op("as_complex")
_as_real = _C.Op("as_real")


def _tensor(fn, x, arg="x"):
    if not isinstance(x, _C.Tensor):
        raise TypeError("{}: {} must be a Tensor, got {}".format(fn, arg, type(x).__name__))


def real(x, name=None):
    """The real part of a complex tensor (float32 for complex64, float64 for complex128)."""
    _tensor("real", x)
    return _real(x)


def imag(x, name=None):
    """The imaginary part of a complex tensor (float32 for complex64, float64 for complex128)."""
    _tensor("imag", x)
    return _imag(x)


def conj(x, name=None):
    """The complex conjugate; a real tensor is returned unchanged (a copy), as in Paddle."""
    _tensor("conj", x)
    return _conj(x)


def angle(x, name=None):
    """The argument atan2(imag, real) in the real dtype; for a real x, 0 where x >= 0 and pi where x < 0.
    Integer inputs are computed in float32 (Paddle's angle takes only floating and complex dtypes)."""
    _tensor("angle", x)
    if x.dtype in (_C.int32, _C.int64, _C.int8, _C.int16, _C.uint8, _C.bool):
        x = _C.Op("cast", "dtype")(x, _C.float32)
    return _angle(x)


def complex(real, imag, name=None):
    """A complex tensor from real and imaginary parts of one floating dtype (float32 gives complex64,
    float64 complex128); the shapes broadcast."""
    _tensor("complex", real, "real")
    _tensor("complex", imag, "imag")
    return _complex(real, imag)


def as_complex(x, name=None):
    """A float32/float64 tensor of shape [..., 2] read as complex pairs: shape [...]."""
    _tensor("as_complex", x)
    return _as_complex(x)


def as_real(x, name=None):
    """A complex tensor as its real and imaginary parts on a new last axis of size 2."""
    _tensor("as_real", x)
    return _as_real(x)


def polar(abs, angle, name=None):
    """The complex numbers abs * (cos(angle) + i sin(angle)), from float32/float64 tensors of one dtype
    (a composition of complex, cos and sin: the gradient flows to both)."""
    _tensor("polar", abs, "abs")
    _tensor("polar", angle, "angle")
    if abs.dtype != angle.dtype or abs.dtype not in (_C.float32, _C.float64):
        raise TypeError("polar: abs and angle must both be float32 or both float64, got {} and {}".format(
            abs.dtype.name, angle.dtype.name))
    return _complex(abs * _C.Op("cos")(angle), abs * _C.Op("sin")(angle))
