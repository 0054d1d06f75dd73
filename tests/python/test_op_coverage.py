"""Every op the core defines is tested: either by the C++ conformance suite (its contract table in
tests/conformance/test_ops.cc, run on every place) or by a Python op test module that lists it in
COVERED_OPS (forward against numpy on every device, gradients against finite differences)."""
import glob
import importlib.util
import os
import re

import oar

HERE = os.path.dirname(os.path.abspath(__file__))


def conformance_ops():
    src = open(os.path.join(HERE, "..", "conformance", "test_ops.cc")).read()
    table = src[src.index("CoversEveryOpAndDtype"):]
    table = table[:table.index("};")]
    return set(re.findall(r'\{"(\w+)",', table)) | {"assign"}  # assign: tests/conformance/test_inplace.cc


def python_ops():
    covered = {}
    for path in sorted(glob.glob(os.path.join(HERE, "test_*.py"))):
        text = open(path).read()
        if "COVERED_OPS" not in text or path == os.path.abspath(__file__):
            continue
        spec = importlib.util.spec_from_file_location("_cov_" + os.path.basename(path)[:-3], path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for op in mod.COVERED_OPS:
            covered.setdefault(op, []).append(os.path.basename(path))
    return covered


def test_every_core_op_has_tests():
    registered = set(oar._C.op_names())
    covered = conformance_ops() | set(python_ops())
    missing = sorted(registered - covered)
    assert not missing, "ops without tests (add them to a COVERED_OPS list or the conformance table): {}".format(
        missing)


def test_covered_ops_exist():
    unknown = sorted(set(python_ops()) - set(oar._C.op_names()))
    assert not unknown, "COVERED_OPS names ops the core does not define: {}".format(unknown)
