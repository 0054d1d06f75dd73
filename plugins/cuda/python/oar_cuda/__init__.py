"""oar-cuda: the NVIDIA GPU backend for oar (device type "gpu"), shipped as a plugin wheel.

Nothing to import by hand: the wheel registers `plugin_dir` in the "oar.plugins" entry point group, and
`import oar` calls it, then loads liboar_plugin_cuda.so from this folder. The plugin links the CUDA runtime
statically and cuBLAS(Lt), cuDNN and NCCL dynamically, by soname. `plugin_dir` first loads those from the
nvidia-* wheels (site-packages/nvidia/...) when they are installed, with RTLD_GLOBAL, so the plugin's
dependencies resolve to them whatever LD_LIBRARY_PATH says; a library no wheel provides is left to the
system's loader (ld.so.conf, LD_LIBRARY_PATH). If one is found nowhere, the plugin is refused and
`python -m oar.utils.doctor` names the missing library. docs/packaging.md has the details.
"""
import ctypes
import os
import sys
import warnings

# (soname, folders under site-packages/nvidia that hold it), in dependency order (cuBLAS needs cuBLASLt).
# CUDA 13's toolkit wheels (nvidia-cublas) share one folder, cu13/lib; cuDNN and NCCL keep their own.
# cublas/lib is where CUDA 12's wheels put cuBLAS, kept for a cuBLAS 13 packaged that way.
VENDOR_LIBRARIES = (
    ("libcublasLt.so.13", ("cu13/lib", "cublas/lib")),
    ("libcublas.so.13", ("cu13/lib", "cublas/lib")),
    ("libcudnn.so.9", ("cudnn/lib",)),
    ("libnccl.so.2", ("nccl/lib",)),
)

_preloaded = {}  # soname -> the wheel's file that was loaded


def _nvidia_folders():
    """site-packages/nvidia of every sys.path entry that has one, in sys.path order."""
    seen = set()
    for entry in sys.path:
        folder = os.path.join(entry or os.getcwd(), "nvidia")
        if folder not in seen and os.path.isdir(folder):
            seen.add(folder)
            yield folder


def preload_vendor_libraries():
    """Loads each vendor library from the nvidia-* wheels, once; returns {soname: path} of those loaded.

    A library whose wheel is not installed is skipped (the system's copy is used). One that is installed
    but cannot be loaded gives a RuntimeWarning and is skipped too: the plugin is then loaded with the
    system's copy, or refused with the loader's reason (in oar._C.plugin_records() and the doctor)."""
    for soname, subfolders in VENDOR_LIBRARIES:
        if soname in _preloaded:
            continue
        for folder in _nvidia_folders():
            path = next((p for p in (os.path.join(folder, s, soname) for s in subfolders) if os.path.exists(p)), None)
            if path:
                try:
                    ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
                except OSError as e:
                    warnings.warn("oar-cuda: cannot load {}: {}".format(path, e), RuntimeWarning)
                    continue
                _preloaded[soname] = path
                break
    return dict(_preloaded)


def plugin_dir():
    """The folder holding liboar_plugin_cuda.so (what the "oar.plugins" entry point returns), after the
    vendor libraries of the nvidia-* wheels are loaded."""
    preload_vendor_libraries()
    return os.path.dirname(os.path.abspath(__file__))
