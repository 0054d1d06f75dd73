"""`import paddle` meaning oar, for running Paddle's own test suites against oar.

Put this directory first on PYTHONPATH. `paddle` and every `paddle.X.Y` are the very module objects
`oar` and `oar.X.Y` (so `paddle.nn.functional is oar.nn.functional`), whether the submodule was imported
before this shim ran or later. Measurement only: nothing in oar imports it.
"""
import importlib
import importlib.abc
import importlib.util
import sys

import oar

_PREFIX = "paddle."


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves `paddle.X` to the module `oar.X` (imported on demand)."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(_PREFIX):
            return None
        real = "oar." + fullname[len(_PREFIX):]
        try:
            found = importlib.util.find_spec(real)
        except (ImportError, ValueError):
            found = None
        if found is None:
            return None
        return importlib.util.spec_from_loader(fullname, self, is_package=found.submodule_search_locations is not None)

    def create_module(self, spec):
        module = importlib.import_module("oar." + spec.name[len(_PREFIX):])
        # importlib overwrites __spec__ on the object it gets back; keep the real one to restore.
        self._real_spec = getattr(module, "__spec__", None)
        return module

    def exec_module(self, module):
        if self._real_spec is not None:
            module.__spec__ = self._real_spec


def _alias_loaded():
    for name, module in list(sys.modules.items()):
        if name.startswith("oar.") and module is not None:
            sys.modules.setdefault(_PREFIX + name[len("oar."):], module)


sys.meta_path.insert(0, _AliasFinder())
_alias_loaded()
sys.modules["paddle"] = oar
