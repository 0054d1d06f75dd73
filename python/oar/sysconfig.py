"""oar.sysconfig: where the installed package keeps what extenders build against.

The core wheel carries the SDK next to the Python code (docs/packaging.md):

    oar/include/            the device ABI (oar/device_api.h), the plugin SDK (oar/sdk.h, oar/sdk/*.h)
                            and the core's C++ headers (oar/core/*.h, oar/ir/*.h, oar/inference/*.h)
    oar/lib/liboar_core.so.0
    oar/lib/cmake/oar/      oarConfig.cmake: find_package(oar) -> oar::sdk, oar::core, oar_add_plugin()
    oar/plugins/            the plugins shipped with oar (liboar_plugin_cpu.so)

A plugin or program is configured with

    cmake -S . -B build -Doar_DIR=$(python -c "import oar.sysconfig as s; print(s.get_cmake_dir())")

Like torch.utils / tensorflow.sysconfig, each function checks that its folder exists and raises
FileNotFoundError otherwise (an oar imported from a source tree has no SDK: install it with pip).
The module only computes paths: it loads no library of its own.
"""
import os

__all__ = ["get_include", "get_lib", "get_cmake_dir", "get_plugin_dir", "get_compile_flags", "get_link_flags"]

_PKG = os.path.dirname(os.path.abspath(__file__))
_CORE_SONAME = "liboar_core.so.0"


def _existing(path, what):
    if not os.path.isdir(path):
        raise FileNotFoundError("oar.sysconfig: the {} folder {} does not exist; this oar ({}) was not installed "
                                "from a wheel (`pip install .` puts the SDK there)".format(what, path, _PKG))
    return path


def get_include():
    """The folder to put on the include path: holds oar/device_api.h, oar/sdk.h and oar/core/*.h."""
    return _existing(os.path.join(_PKG, "include"), "include")


def get_lib():
    """The folder holding liboar_core.so.0 (the only library a program embedding the core links)."""
    return _existing(os.path.join(_PKG, "lib"), "library")


def get_cmake_dir():
    """The folder holding oarConfig.cmake: pass it as -Doar_DIR=... to find_package(oar)."""
    return _existing(os.path.join(_PKG, "lib", "cmake", "oar"), "CMake package")


def get_plugin_dir():
    """The folder the core loads its bundled plugins from (liboar_plugin_cpu.so, ...)."""
    return _existing(os.path.join(_PKG, "plugins"), "plugin")


def get_compile_flags():
    """Compiler flags for code using the SDK or the core headers, as a list."""
    return ["-I" + get_include(), "-std=c++17"]


def get_link_flags():
    """Linker flags for a program or library that links liboar_core, as a list. Plugins must not use these:
    they build against the headers alone. The wheel holds only the versioned file, hence -l:<soname>."""
    lib = get_lib()
    return ["-L" + lib, "-l:" + _CORE_SONAME, "-Wl,-rpath," + lib]
