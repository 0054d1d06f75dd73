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
from . import amp, device, distributed, inference, io, jit, linalg, metric, nn, optimizer, static, utils, vision  # noqa: F401
from . import geometric, incubate  # noqa: F401,E402  (issue 19)
from . import text  # noqa: F401  (oar.text: viterbi_decode and the text data sets)
from . import regularizer  # noqa: F401,E402
from . import distribution  # noqa: F401,E402  (oar.distribution)
from . import fft, signal, audio  # noqa: F401,E402  (oar.fft on the fft ops; signal and audio on it)
from .device import (is_compiled_with_cinn, is_compiled_with_cuda, is_compiled_with_custom_device,  # noqa: F401,E402
                     is_compiled_with_distribute, is_compiled_with_ipu, is_compiled_with_rocm, is_compiled_with_xpu)


from .utils.dlpack import from_dlpack, to_dlpack  # noqa: F401,E402
from .framework.io import load, save  # noqa: F401,E402

from .tensor.tensor_methods import set_printoptions  # noqa: F401,E402
from . import version  # noqa: F401,E402  (paddle.version)
from . import hapi  # noqa: F401,E402
from . import callbacks  # noqa: F401,E402
from . import profiler  # noqa: F401,E402
from . import sparse  # noqa: F401,E402  (paddle.sparse)
from .hapi import Model, flops, summary  # noqa: F401,E402
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
