"""The custom_cpu plugin's own tests: run them with the plugin installed (its wheel) or found through
OAR_PLUGIN_PATH:

    python -m pytest -q tests

They check this backend's specifics; `python -m oar.testing.plugin_conformance --device custom_cpu` checks
everything the oar core expects of any backend (test_conformance below runs it too)."""
import numpy as np
import pytest

import oar
from oar.testing import plugin_conformance

DEVICE = "custom_cpu"


@pytest.fixture(scope="module", autouse=True)
def _need_plugin():
    if DEVICE not in oar.device.get_all_custom_device_type():
        pytest.fail("the custom_cpu plugin is not loaded; install its wheel or set OAR_PLUGIN_PATH "
                    "(python -m oar.utils.doctor says why)")


def test_devices_and_properties():
    places = [p for p in oar.device.get_available_device() if p.startswith(DEVICE + ":")]
    assert places == ["custom_cpu:0", "custom_cpu:1"]  # CUSTOM_CPU_DEVICE_COUNT defaults to 2
    props = oar._C.device_properties("custom_cpu:1")
    assert props["name"] == "custom_cpu sample device 1"
    assert props["host_accessible"] is False  # the core must copy through the plugin's memcpy


def test_kernels_registered():
    kernels = dict(oar._C.kernels_of(DEVICE))
    for op in ("add", "multiply", "relu", "leaky_relu_grad", "sum", "matmul", "fill"):
        assert kernels.get(op) == ["float32", "float64"], op


def test_mlp_step_matches_cpu():
    """A small forward/backward pass on custom_cpu equals the same pass on the CPU: matmul, add, relu and
    sum run on this plugin, the rest falls back to the CPU plugin."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 5)).astype("float32")
    w = rng.standard_normal((5, 3)).astype("float32")
    b = rng.standard_normal((3,)).astype("float32")

    def step(place):
        xt = oar.to_tensor(x, place=place)
        wt = oar.to_tensor(w, place=place, stop_gradient=False)
        bt = oar.to_tensor(b, place=place, stop_gradient=False)
        loss = oar.nn.functional.relu(oar.matmul(xt, wt) + bt).sum()
        loss.backward()
        return loss.numpy(), wt.grad.numpy(), bt.grad.numpy()

    for got, want in zip(step("custom_cpu:0"), step("cpu")):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_out_of_memory_names_the_plugin():
    total = oar._C.device_properties("custom_cpu:0")["total_memory"]
    with pytest.raises(MemoryError, match="plugin custom_cpu: .*out of device memory"):
        oar._C._kit_allocate("custom_cpu:0", total + 1)


def test_conformance():
    report = plugin_conformance.run(DEVICE)
    assert report.ok, report.format()
