"""oar.sysconfig: where the installed package keeps what extenders build against.

The core wheel carries the SDK next to the Python code (docs/packaging.md):

    oar/include/oar_sdk/    the device ABI (oar/device_api.h), the plugin SDK (oar/sdk.h, oar/sdk/*.h) and
                            the custom-op headers (oar/extension.h, paddle/extension.h): get_include()
    oar/include/oar_core/   the core's C++ headers (oar/core/*.h, oar/ir/*.h, oar/inference/*.h), kept
                            apart so that a plugin cannot include them by mistake: get_core_include()
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

__all__ = ["get_include", "get_core_include", "get_lib", "get_cmake_dir", "get_plugin_dir", "get_compile_flags", "get_link_flags"]

_PKG = os.path.dirname(os.path.abspath(__file__))
_CORE_SONAME = "liboar_core.so.0"


def _existing(path, what):
    if not os.path.isdir(path):
        raise FileNotFoundError("oar.sysconfig: the {} folder {} does not exist; this oar ({}) was not installed "
                                "from a wheel (`pip install .` puts the SDK there)".format(what, path, _PKG))
    return path


def get_include():
    """The SDK's include folder (what plugins and custom ops use): oar/device_api.h, oar/sdk.h, oar/sdk/*.h,
    oar/extension.h. It holds none of the core's headers (get_core_include())."""
    return _existing(os.path.join(_PKG, "include", "oar_sdk"), "include")


def get_core_include():
    """The core's C++ headers (oar/core/*.h, ...), for programs that link liboar_core; they include the
    ABI, so such a program puts both folders on its include path (get_compile_flags() does)."""
    return _existing(os.path.join(_PKG, "include", "oar_core"), "core include")


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
    """Compiler flags for a program using the core's C++ API (the SDK's and the core's include folders), as a
    list. A plugin needs only -I<get_include()>."""
    return ["-I" + get_include(), "-I" + get_core_include(), "-std=c++17"]


def get_link_flags():
    """Linker flags for a program or library that links liboar_core, as a list. Plugins must not use these:
    they build against the headers alone. The wheel holds only the versioned file, hence -l:<soname>."""
    lib = get_lib()
    return ["-L" + lib, "-l:" + _CORE_SONAME, "-Wl,-rpath," + lib]
