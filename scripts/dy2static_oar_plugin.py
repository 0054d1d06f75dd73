"""pytest plugin (stress check of oar.jit.dy2static, not a test): converts every Python function and
method of oar's own nn, tensor, vision, optimizer, metric, io, linalg and autograd modules and patches the
converted versions in before the test suite runs, so the suite checks them against numpy:

    PYTHONPATH=<oar install>:scripts python3 -m pytest -p dy2static_oar_plugin tests/python

(The one expected failure is an identity check of method aliases, which patching separates.)"""
import importlib, pkgutil, types, warnings, sys
import oar
from oar.jit.dy2static import convert_to_static

PKGS = ["oar.nn", "oar.tensor", "oar.vision", "oar.optimizer", "oar.metric", "oar.io", "oar.linalg", "oar.autograd"]
patched, skipped = [], 0
mods = []
for p in PKGS:
    m = importlib.import_module(p)
    mods.append(m)
    if hasattr(m, "__path__"):
        for info in pkgutil.walk_packages(m.__path__, p + "."):
            try:
                mods.append(importlib.import_module(info.name))
            except Exception:
                pass
seen = set()
for mod in mods:
    for name, obj in list(vars(mod).items()):
        targets = []
        if isinstance(obj, types.FunctionType) and obj.__module__ == mod.__name__:
            targets.append((mod, name, obj))
        elif isinstance(obj, type) and obj.__module__ == mod.__name__ and id(obj) not in seen:
            seen.add(id(obj))
            targets += [(obj, an, av) for an, av in list(vars(obj).items()) if isinstance(av, types.FunctionType)]
        for owner, an, f in targets:
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                c = convert_to_static(f)
            if c is f:
                skipped += 1
                if w and "conversion failed" in str(w[0].message):
                    print("INTERNAL", mod.__name__, an, str(w[0].message)[:300], file=sys.stderr)
            else:
                setattr(owner, an, c)
                patched.append((owner, an))
print("dy2st plugin: patched", len(patched), "skipped", skipped, file=sys.stderr)
