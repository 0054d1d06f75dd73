"""The op suite (oar.testing.ops): every registered op on its sample inputs, on cpu, sim:0 and sim:1,
one test per (op, device) so that a failure names both (the message lists the failing samples)."""
import numpy as np
import pytest

import oar
from oar import _C
from oar.testing import ops as suite


def _devices():
    out = ["cpu"]
    for _, name, available, count in _C.device_types():
        if name == "sim" and available:
            out += ["sim:{}".format(i) for i in range(min(count, 2))]
    return out


DEVICES = _devices()
_KERNELS = {}


def _kernels(device_type):
    if device_type not in _KERNELS:
        _KERNELS[device_type] = {op: list(d) for op, d in _C.kernels_of(device_type)}
    return _KERNELS[device_type]


def test_sim_is_present():
    # The suite must reach both sim devices, or the device half of it would silently not run.
    assert "sim:0" in DEVICES and "sim:1" in DEVICES, DEVICES


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", _C.op_names())
def test_op(op, device):
    r = suite.check_op(op, device, kernels=_kernels(device.split(":")[0]), cpu_kernels=_kernels("cpu"))
    assert r.status == "PASS" or (r.status == "SKIP" and op in suite.EXCEPTIONS), r.format(verbose=True)


def test_meta_check():
    # Every registered op and every kernel of every loaded plugin is exercised by a sample.
    problems = suite.meta_check()
    assert not problems, "\n".join(problems)


def test_suite_catches_a_wrong_result(monkeypatch):
    # The suite can fail: a CPU oracle that disagrees with the device is reported, naming the sample.
    real = suite._result_arrays
    calls = []

    def skewed(op, tensors):
        arrays = real(op, tensors)
        calls.append(1)
        if len(calls) % 2 == 0:  # the reference side of each comparison
            arrays = [a + 1 for a in arrays]
        return arrays

    monkeypatch.setattr(suite, "_result_arrays", skewed)
    r = suite.check_op("add", "sim:0" if "sim:0" in DEVICES else "cpu", dtypes=["float32"], grad=False)
    assert r.status == "FAIL" and "add[same shape] float32 inputs [(3, 4), (3, 4)]" in r.format()


def test_runner_command_line(capsys):
    assert suite.main(["--device", "cpu", "--op", "add", "--op", "matmul", "--no-grad"]) == 0
    out = capsys.readouterr().out
    assert "cpu: 2 ops passed, 0 failed" in out


def test_plugin_conformance_kernel_checks_run_the_suite_and_old_recipes(monkeypatch):
    # plugin_conformance's kernels.<op>.<dtype> checks are the suite's samples; a KERNEL_RECIPES entry a
    # plugin author adds (deprecated) still runs, as an extra sample of its op.
    from oar.testing import plugin_conformance as pc
    if "sim:0" not in DEVICES:
        pytest.skip("no sim device")
    rep = pc.run("sim", ["kernels.add.float32"])
    assert rep.ok, rep.format(verbose=True)
    n = len(_C._op_samples("add"))
    assert "{} sample(s)".format(n) in rep.format(verbose=True)
    monkeypatch.setitem(pc.KERNEL_RECIPES, "add", [([((2, 3), -1, 1), ((2, 3), -1, 1, "T")], {})])
    rep = pc.run("sim", ["kernels.add.float32"])
    assert rep.ok and "{} sample(s)".format(n + 1) in rep.format(verbose=True), rep.format(verbose=True)
    monkeypatch.setitem(pc.KERNEL_RECIPES, "add", [([((2, 3), -1, 1), ((4,), -1, 1)], {})])  # not broadcastable
    rep = pc.run("sim", ["kernels.add.float32"])
    assert not rep.ok and "add[KERNEL_RECIPES[0]] float32" in rep.format(), rep.format()


# ---- bugs the suite found, each with its own regression test -------------------------------------------

def test_sort_and_topk_gradient_of_a_0d_input():
    for op, attrs in (("sort", {"stable": 1}), ("topk", {"k": 1})):
        x = oar.to_tensor(np.array(2.5))
        x.stop_gradient = False
        out = _C.Op(op)(x, **attrs)[0]
        (g,) = oar.grad([out * 3.0], [x])
        assert g.shape == [] and float(g.numpy()) == 3.0, op


def test_layer_norm_grad_checks_its_statistics():
    x = oar.ones([4, 6], dtype="float16")
    w = oar.ones([6], dtype="float16")
    stats16 = oar.ones([4], dtype="float16")  # layer_norm's statistics are float32 for float16 x
    with pytest.raises(TypeError, match="layer_norm_grad: mean.dtype float16 must be float32"):
        _C.Op("layer_norm_grad")(x, w, stats16, stats16, x, begin_norm_axis=1)
    with pytest.raises(ValueError, match=r"layer_norm_grad: dy.shape \[4, 5\]"):
        _C.Op("layer_norm_grad")(x, w, oar.ones([4]), oar.ones([4]), oar.ones([4, 5], dtype="float16"),
                                 begin_norm_axis=1)


def test_index_put_accumulate_on_bool_names_the_op():
    x = oar.zeros([3], dtype="bool")
    with pytest.raises(TypeError, match="index_put: accumulate=True is not supported for bool"):
        _C.Op("index_put")(x, oar.to_tensor(np.array([[0], [0]])), oar.ones([2], dtype="bool"), accumulate=1)
