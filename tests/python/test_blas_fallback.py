"""The CPU plugin's BLAS/LAPACK choice (plugins/cpu/blas.cc): OAR_BLAS_LIBRARY names the library. The
linalg tests run again in a fresh process on the reference LAPACK (the fallback when OpenBLAS is missing),
and a library that cannot load gives a clear error for the ops that need it while the rest still works."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE = "/usr/lib/x86_64-linux-gnu/lapack/liblapack.so.3"  # Debian's liblapack3 (install_deps.sh)
REFERENCE_BLAS_DIR = "/usr/lib/x86_64-linux-gnu/blas"  # its libblas.so.3 dependency: the reference BLAS, not
# the alternatives' choice (OpenBLAS once installed), so the run is what a machine without OpenBLAS does


def _run(code_or_args, library, timeout=900):
    env = dict(os.environ, OAR_BLAS_LIBRARY=library, OMP_NUM_THREADS="1",
               LD_LIBRARY_PATH=":".join(filter(None, [REFERENCE_BLAS_DIR, os.environ.get("LD_LIBRARY_PATH")])))
    args = code_or_args if isinstance(code_or_args, list) else ["-c", code_or_args]
    return subprocess.run([sys.executable] + args, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.skipif(not os.path.exists(REFERENCE), reason="reference LAPACK not installed: " + REFERENCE)
def test_linalg_suite_on_the_reference_lapack():
    check = _run("import oar; oar.linalg.inv(oar.eye(2, dtype='float64'))\n"
                 "print([ln.split()[-1] for ln in open('/proc/self/maps') if 'lapack' in ln or 'blas' in ln])",
                 REFERENCE)
    assert check.returncode == 0, check.stderr[-2000:]
    loaded = [p for p in eval(check.stdout.strip().splitlines()[-1]) if "numpy" not in p]  # numpy has its own
    assert loaded and all(p.startswith(("/usr/lib/x86_64-linux-gnu/lapack/", REFERENCE_BLAS_DIR)) for p in loaded), \
        loaded
    r = _run(["-m", "pytest", "-q", "-p", "no:cacheprovider", os.path.join(HERE, "test_linalg.py"), "-k",
              "not grads and not grad"], REFERENCE)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert " passed" in r.stdout and " failed" not in r.stdout


def test_unloadable_library_is_a_clear_error():
    code = """
import numpy as np, oar
x = oar.to_tensor(np.eye(3, dtype='float32') * 2)
print('matmul', float(oar.matmul(x, x).sum()))  # float32 matmul is oneDNN's: unaffected
try:
    oar.linalg.inv(x)
except Exception as e:
    print('error', type(e).__name__, str(e).replace(chr(10), ' '))
"""
    r = _run(code, "/nonexistent/libnolapack.so")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "matmul 12.0" in r.stdout
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("error")]
    assert line and "OAR_BLAS_LIBRARY" in line[0] and "/nonexistent/libnolapack.so" in line[0], r.stdout
