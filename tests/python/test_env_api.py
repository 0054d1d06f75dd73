"""The environment API scripts call first: oar.utils.run_check, oar.version, oar.set_printoptions,
oar.utils.deprecated (Paddle 2.6.2's documented behaviour)."""
import warnings

import numpy as np
import pytest

import oar
from oar import _C


def _gpu_loaded():
    return any(r.loaded and r.device_type == "gpu" for r in _C.plugin_records())


def test_run_check_reports_plugins_and_trains(capsys):
    with oar.utils.unique_name.guard():
        before = oar.utils.unique_name.generate("linear")
        oar.utils.run_check()
        after = oar.utils.unique_name.generate("linear")
    out = capsys.readouterr().out
    assert out.startswith("Running verify oar program ...")
    loaded = [r for r in _C.plugin_records() if r.loaded]
    for r in loaded:
        assert r.path in out
    assert "oar works well on 1 CPU." in out
    assert "installed successfully" in out
    assert (before, after) == ("linear_0", "linear_1")  # run_check's own layer took no name


def test_run_check_in_static_mode(capsys):
    oar.enable_static()
    try:
        main = oar.static.Program()
        with oar.static.program_guard(main, oar.static.Program()):
            oar.utils.run_check()
            assert oar.in_dynamic_mode() is False
        assert main.desc.num_ops(0) == 0 and main.all_parameters() == []  # nothing leaked into it
    finally:
        oar.disable_static()
    assert "oar works well on 1 CPU." in capsys.readouterr().out


def test_run_check_train_step_is_checked():
    from oar.utils.install_check import _train_step
    _train_step("cpu")  # agrees with numpy; a wrong optimizer would raise RuntimeError


def test_version():
    v = oar.version
    assert v.full_version == oar.__version__
    assert [v.major, v.minor, v.patch] == oar.__version__.split(".")
    assert v.istaged is True
    if _gpu_loaded():
        assert v.cuda() != "False" and v.cuda().count(".") == 1
    else:
        assert v.cuda() == "False" and v.cudnn() == "False"  # Paddle's CPU wheel gives the string 'False'
    assert v.cuda_version == v.cuda() and v.cudnn_version == v.cudnn()


def test_version_parses_the_plugin_string(monkeypatch):
    monkeypatch.setattr(oar.version, "_gpu_vendor_versions",
                        lambda: "CUDA 12040 (runtime linked statically), cuBLASLt 12.4, cuDNN 9.1, NCCL 2.21")
    assert oar.version.cuda() == "12.4"
    assert oar.version.cudnn() == "9.1"
    assert oar.version.nccl() == "2.21"
    monkeypatch.setattr(oar.version, "_gpu_vendor_versions", lambda: "CUDA 11080")
    assert oar.version.cuda() == "11.8" and oar.version.cudnn() == "False"
    monkeypatch.setattr(oar.version, "_gpu_vendor_versions", lambda: None)
    assert oar.version.cuda() == "False"


def test_version_show(capsys):
    oar.version.show()
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "full_version: " + oar.__version__
    assert out[1:5] == ["major: " + oar.version.major, "minor: " + oar.version.minor,
                        "patch: " + oar.version.patch, "rc: 0"]
    assert any(line.startswith("cuda: ") for line in out) and any(line.startswith("cudnn: ") for line in out)


def test_set_printoptions():
    t = oar.to_tensor(np.array([1.0 / 3, 2.0 / 3, 5.0], np.float64))
    try:
        oar.set_printoptions(precision=2)
        assert "0.33, 0.67" in repr(t)
        oar.set_printoptions(sci_mode=True)
        assert "3.33e-01" in repr(t) and "5.00e+00" in repr(t)
        oar.set_printoptions(sci_mode=False, threshold=5, edgeitems=1)
        big = oar.arange(100)
        assert "..." in repr(big) and "0, ..., 99" in repr(big)
        oar.set_printoptions(linewidth=20)
        assert max(len(line) for line in repr(oar.arange(30)).splitlines()[1:]) <= 24
        with pytest.raises(TypeError, match="precision"):
            oar.set_printoptions(precision=1.5)
        with pytest.raises(TypeError, match="sci_mode"):
            oar.set_printoptions(sci_mode="yes")
    finally:
        from oar.tensor import tensor_methods
        for k in tensor_methods._print_options:
            tensor_methods._print_options[k] = None
    assert "0.33333333" in repr(t)


def test_deprecated_levels():
    @oar.utils.deprecated(update_to="oar.new_api", since="2.0", reason="renamed", level=1)
    def old(x):
        """Adds one."""
        return x + 1

    with pytest.warns(DeprecationWarning, match="oar.new_api"):
        assert old(1) == 2
    assert "Adds one." in old.__doc__ and "deprecated" in old.__doc__ and old.__name__ == "old"

    @oar.utils.deprecated(update_to="x")
    def quiet():
        return 3

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert quiet() == 3  # level 0: no warning

    @oar.utils.deprecated(reason="gone", level=2)
    def gone():
        return 4

    with pytest.raises(RuntimeError, match="gone"):
        gone()

    @oar.utils.deprecated(update_to="New", level=1)
    class Old:
        def __init__(self, v):
            self.v = v

    with pytest.warns(DeprecationWarning):
        assert Old(5).v == 5
    with pytest.raises(ValueError, match="level"):
        oar.utils.deprecated(level=3)
