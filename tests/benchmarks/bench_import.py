"""How long `import oar` takes in a fresh interpreter, and where the time goes (docs/packaging.md).

    python tests/benchmarks/bench_import.py [--runs 10] [--json out.json]

Each figure is the median over `--runs` fresh subprocesses (so nothing is cached in the process; the OS
page cache is warm after the first run, which is the case that matters for a user's second import):
  import_oar       `import oar`, everything (what a user waits for)
  numpy            `import numpy` alone (oar imports it; not ours to speed up)
  C_ext            loading the extension module oar._C and liboar_core (package __init__ bypassed)
  plugin_discovery the first Runtime use: scanning the plugin folders, dlopen + init of every plugin
                   (cpu pulls in oneDNN, sim starts its stream threads)
  entry_points     listing the "oar.plugins" entry points (importlib.metadata) and loading theirs
  python_modules   the rest: oar's Python modules (import_oar minus the parts above)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

# Runs in the child. Loads oar._C without running oar/__init__.py (a bare package module standing in
# for it), then times discovery and the entry point pass separately.
_PARTS = r"""
import importlib.util, os, sys, time, types
t0 = time.perf_counter()
import numpy
t1 = time.perf_counter()
spec = importlib.util.find_spec("oar")
pkg = types.ModuleType("oar"); pkg.__path__ = list(spec.submodule_search_locations); sys.modules["oar"] = pkg
from oar import _C
t2 = time.perf_counter()
_C.plugin_records()
t3 = time.perf_counter()
from oar import _plugins
_plugins.load_entry_point_plugins()
t4 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2, t4 - t3)
"""
_WHOLE = "import time; t = time.perf_counter(); import oar; print(time.perf_counter() - t)"


def _child(code):
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return [float(x) for x in out.split()]


def measure(runs=10):
    whole = [_child(_WHOLE)[0] for _ in range(runs)]
    parts = [_child(_PARTS) for _ in range(runs)]
    med = lambda xs: statistics.median(xs) * 1e3  # noqa: E731
    res = {"import_oar": med(whole)}
    for i, name in enumerate(["numpy", "C_ext", "plugin_discovery", "entry_points"]):
        res[name] = med([p[i] for p in parts])
    res["python_modules"] = res["import_oar"] - sum(res[k] for k in ("numpy", "C_ext", "plugin_discovery",
                                                                       "entry_points"))
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args()
    import oar  # noqa: F401  (which oar, and fail early if it does not import)
    res = measure(args.runs)
    print("oar from {} ({} fresh processes per figure, median, ms)".format(os.path.dirname(oar.__file__),
                                                                              args.runs))
    for k, v in res.items():
        print("  {:<17} {:8.1f}".format(k, v))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
