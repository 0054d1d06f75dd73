"""DLPack interchange (paddle.utils.dlpack): share CPU tensors with numpy, PyTorch, JAX, ... without
copying. `to_dlpack(x)` gives a capsule; `from_dlpack(obj)` takes a capsule or any object with
`__dlpack__` (numpy arrays, torch tensors, oar tensors). The result shares memory with the source."""
from .. import _C
from .._C import Tensor

__all__ = ["to_dlpack", "from_dlpack"]


def to_dlpack(x):
    """A DLPack capsule sharing x's memory (CPU tensors only)."""
    if not isinstance(x, Tensor):
        raise TypeError("to_dlpack: expected an oar.Tensor, got {}".format(type(x).__name__))
    return _C._to_dlpack(x)


def from_dlpack(dlpack):
    """A Tensor sharing the memory of a DLPack capsule or of an object implementing __dlpack__."""
    if hasattr(dlpack, "__dlpack__"):
        if hasattr(dlpack, "__dlpack_device__"):
            kind, _ = dlpack.__dlpack_device__()
            if int(kind) not in (1, 3):  # kDLCPU, kDLCUDAHost
                raise BufferError("from_dlpack: only CPU memory can be imported (DLPack device type {})".format(
                    int(kind)))
        dlpack = dlpack.__dlpack__()
    return _C._from_dlpack_capsule(dlpack)
