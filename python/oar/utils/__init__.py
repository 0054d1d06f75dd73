"""oar.utils: helpers. `python -m oar.utils.doctor` (oar.utils.doctor.report()) says what the runtime
found; run_check() checks that every device trains; unique_name names layers and program variables;
deprecated marks old APIs; dlpack shares CPU tensors with other libraries; cpp_extension (custom C++
ops) is filled in later work."""
import importlib

from . import cpp_extension, dlpack  # noqa: F401
from ..framework import unique_name  # noqa: F401  (Paddle's paddle.utils.unique_name)
from ._custom_op import load_op_library  # noqa: F401
from .deprecated import deprecated  # noqa: F401
from .install_check import run_check  # noqa: F401


def __getattr__(name):
    # doctor is imported on first use, so `python -m oar.utils.doctor` runs it fresh as __main__.
    if name == "doctor":
        return importlib.import_module(".doctor", __name__)
    raise AttributeError("module 'oar.utils' has no attribute '{}'".format(name))
