"""Submodules of oar that `import oar` does not load: they load on first attribute access (decision 111).

`oar.<name>` for a lazy submodule, and the top-level names taken from one (`oar.Model` from oar.hapi),
go through the package's module-level __getattr__. Tensor methods that a lazy module installs when it
loads (sparse's `is_sparse`, signal's `stft`, ...) are there from the start as stubs: the first call
loads the module, which replaces the stubs with the real methods, and then runs the real one.
"""
import importlib
import sys

# Submodules loaded on first use: Paddle namespaces that a training script mostly does not touch, and that
# nothing loaded by `import oar` needs (tests/python/test_lazy_import.py checks both).
MODULES = ("audio", "callbacks", "distribution", "fft", "geometric", "hapi", "incubate", "profiler", "signal",
           "sparse", "text", "vision")
# Top-level names that come from a lazy submodule: name -> submodule.
NAMES = {"Model": "hapi", "flops": "hapi", "summary": "hapi"}
# Tensor methods a lazy submodule installs when it loads: submodule -> method names.
TENSOR_METHODS = {
    "signal": ("stft", "istft"),
    "sparse": ("is_sparse", "is_sparse_coo", "is_sparse_csr", "is_selected_rows", "to_sparse_coo", "to_sparse_csr",
               "is_dense", "to_dense", "indices", "values", "crows", "cols", "nnz", "coalesce"),
}


def load(package, name):
    """The value of `package.name` for a lazy name (the module, or the name taken from one)."""
    if name in MODULES:
        return importlib.import_module(package.__name__ + "." + name)  # also sets it on the package
    value = getattr(importlib.import_module(package.__name__ + "." + NAMES[name]), name)
    setattr(package, name, value)
    return value


def _stub(cls, module, name):
    def method(self, *args, **kwargs):
        importlib.import_module(module)  # installs the real method over this stub
        real = getattr(cls, name)
        if getattr(real, "_oar_lazy_stub", False):
            raise AttributeError("Tensor.{}: loading {} did not install it".format(name, module))
        return real(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = "Loads {} (which defines Tensor.{}) on first call.".format(module, name)
    method._oar_lazy_stub = True
    return method


def install_tensor_stubs(package, cls):
    for sub, names in TENSOR_METHODS.items():
        module = package.__name__ + "." + sub
        if module in sys.modules:  # already loaded: its real methods are in place
            continue
        for name in names:
            setattr(cls, name, _stub(cls, module, name))
