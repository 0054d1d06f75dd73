"""oar: a deep-learning framework whose Python API follows PaddlePaddle 2.x (`import oar as paddle`).

It has tensors, the eager op library, dtypes, places and devices, and autograd (Tensor.backward,
.grad, .stop_gradient, oar.grad, oar.no_grad; see oar.autograd).
"""
__version__ = "0.1.0"

from . import _C
from ._C import (CPUPlace, CUDAPlace, CustomPlace, Place, Tensor, dtype, get_default_dtype, get_device, seed,
                 set_default_dtype, set_device)
from ._C import (bfloat16, bool, complex64, complex128, float16, float32, float64, int8, int16, int32, int64,
                 uint8)
from . import _plugins
_plugins.load_entry_point_plugins()
from . import sysconfig  # noqa: F401  (paths only: where the SDK, liboar_core and plugins are)
from .tensor import *  # noqa: F401,F403
from .tensor.logic import is_tensor  # noqa: F401
from . import autograd  # noqa: F401
from .autograd import enable_grad, grad, is_grad_enabled, no_grad, set_grad_enabled  # noqa: F401

from . import framework  # noqa: F401
from .framework import ParamAttr, create_parameter  # noqa: F401
from . import amp, device, distributed, inference, io, jit, linalg, metric, nn, optimizer, static, utils  # noqa: F401
from . import regularizer  # noqa: F401,E402
from .device import (is_compiled_with_cinn, is_compiled_with_cuda, is_compiled_with_custom_device,  # noqa: F401,E402
                     is_compiled_with_distribute, is_compiled_with_ipu, is_compiled_with_rocm, is_compiled_with_xpu)


from .utils.dlpack import from_dlpack, to_dlpack  # noqa: F401,E402
from .framework.io import load, save  # noqa: F401,E402

from .tensor.tensor_methods import set_printoptions  # noqa: F401,E402
from . import version  # noqa: F401,E402  (paddle.version)
import sys as _sys  # noqa: E402
from . import _lazy  # noqa: E402
# audio, callbacks, distribution, fft, geometric, hapi (Model, flops, summary), incubate, profiler, signal,
# sparse, text and vision load on first use (module __getattr__ below; decision 111).
_lazy.install_tensor_stubs(_sys.modules[__name__], Tensor)
from .distributed.parallel import DataParallel  # noqa: F401,E402


def _dtype_from_name(name):
    """Unpickling helper for dtype objects."""
    return _C.to_dtype(name)


def in_dynamic_mode():
    """True unless static mode is on (enable_static)."""
    return not static.program._in_static_mode()


def enable_static():
    """Static mode: oar ops build the default main program instead of running (oar.static)."""
    static.program._enable_static()


def disable_static(place=None):
    """Back to eager (dynamic graph) execution."""
    static.program._disable_static()
    if place is not None:
        set_device(place)


in_dygraph_mode = in_dynamic_mode


def __getattr__(name):
    if name in _lazy.MODULES or name in _lazy.NAMES:
        return _lazy.load(_sys.modules[__name__], name)
    raise AttributeError("module 'oar' has no attribute '{}'".format(name))


def __dir__():
    return sorted(set(globals()) | set(_lazy.MODULES) | set(_lazy.NAMES))
