"""oar.version (Paddle's paddle.version): oar's own version, and the CUDA / cuDNN versions of the loaded
gpu plugin.

Paddle bakes cuda() and cudnn() into the wheel; oar is one build for every backend, so they come from the
vendor versions string of the gpu plugin loaded in this process (oar._C.plugin_records(), the line
`python -m oar.utils.doctor` shows). Without one they are the string 'False', as on Paddle's CPU wheel.
"""
import re as _re

from . import __version__ as full_version
from . import _C

__all__ = ["full_version", "major", "minor", "patch", "rc", "istaged", "commit", "with_mkl", "show", "cuda",
           "cudnn", "mkl", "nccl", "xpu", "cinn"]

major, minor, patch = full_version.split(".")[:3]
rc = "0"
istaged = True  # a released version: show() prints the numbers, not a commit
commit = "Unknown"
with_mkl = "OFF"


def _gpu_vendor_versions():
    for r in _C.plugin_records():
        if r.loaded and r.device_type == "gpu":
            return r.vendor_versions or ""
    return None


def _vendor_version(library):
    """'<major>.<minor>' of `library` in the gpu plugin's vendor versions, or 'False'. The plugin writes
    CUDA as CUDART_VERSION ("CUDA 12040" is 12.4) and the others as "cuDNN 9.1"."""
    text = _gpu_vendor_versions()
    if not text:
        return "False"
    m = _re.search(r"\b{}\s+(\d+)(?:\.(\d+))?(?:\.(\d+))?".format(_re.escape(library)), text, _re.IGNORECASE)
    if not m:
        return "False"
    if m.group(2) is None:  # one integer: the vendor's encoded form, major * 1000 + minor * 10
        n = int(m.group(1))
        return "{}.{}".format(n // 1000, (n % 1000) // 10) if n >= 1000 else str(n)
    return ".".join(g for g in m.groups() if g is not None)


def cuda():
    """The CUDA version of the loaded gpu plugin ('12.4'), or 'False' without one."""
    return _vendor_version("CUDA")


def cudnn():
    """The cuDNN version of the loaded gpu plugin ('9.1'), or 'False' without one."""
    return _vendor_version("cuDNN")


def nccl():
    """The NCCL version of the loaded gpu plugin, or 'False' without one."""
    return _vendor_version("NCCL")


def mkl():
    return with_mkl


def xpu():
    """oar has no XPU plugin: 'False', as on Paddle's CPU wheel."""
    return "False"


def cinn():
    return False


def show():
    """Prints the version and the versions of the gpu plugin's libraries (Paddle's paddle.version.show)."""
    lines = ["full_version: " + full_version, "major: " + major, "minor: " + minor, "patch: " + patch,
             "rc: " + rc] if istaged else ["commit: " + commit]
    lines += ["cuda: {!r}".format(cuda()) if cuda() != "False" else "cuda: False",
              "cudnn: {!r}".format(cudnn()) if cudnn() != "False" else "cudnn: False",
              "cinn: False"]
    print("\n".join(lines))


def __getattr__(name):
    # Paddle's module-level strings, computed when asked (the plugins are loaded by then).
    if name == "cuda_version":
        return cuda()
    if name == "cudnn_version":
        return cudnn()
    raise AttributeError("module 'oar.version' has no attribute '{}'".format(name))
