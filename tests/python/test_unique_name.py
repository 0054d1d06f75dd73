"""oar.utils.unique_name (Paddle's paddle.utils.unique_name): generate / guard / switch give the names
Paddle 2.6.2 documents, and drive the names of layers, parameters and static-program variables."""
import numpy as np
import pytest

import oar
from oar.utils import unique_name


def test_same_module_as_framework():
    assert unique_name is oar.framework.unique_name


def test_generate_counts_per_key():
    with unique_name.guard():
        assert [unique_name.generate("fc") for _ in range(3)] == ["fc_0", "fc_1", "fc_2"]
        assert unique_name.generate("conv") == "conv_0"
        assert unique_name.generate("fc") == "fc_3"


def test_guard_restarts_and_prefixes():
    with unique_name.guard():
        a = unique_name.generate("fc")
    with unique_name.guard():
        b = unique_name.generate("fc")
    assert a == b == "fc_0"
    with unique_name.guard("A"):
        a = unique_name.generate("fc")
    with unique_name.guard(b"B"):
        b = unique_name.generate("fc")
    assert (a, b) == ("Afc_0", "Bfc_0")


def test_guard_restores_the_outer_generator():
    with unique_name.guard():
        assert unique_name.generate("k") == "k_0"
        with unique_name.guard():
            assert unique_name.generate("k") == "k_0"
        assert unique_name.generate("k") == "k_1"
        with pytest.raises(RuntimeError):
            with unique_name.guard():
                raise RuntimeError("inside")
        assert unique_name.generate("k") == "k_2"


def test_switch_returns_the_previous_pair():
    with unique_name.guard():
        assert unique_name.generate("fc") == "fc_0"
        assert unique_name.generate("fc") == "fc_1"
        pre_generator, pre_checker = unique_name.switch()
        assert unique_name.generate("fc") == "fc_0"
        unique_name.switch(pre_generator, pre_checker)
        assert unique_name.generate("fc") == "fc_2"
        gen = unique_name.UniqueNameGenerator("p_")
        old = unique_name.switch(gen)
        assert unique_name.generate("fc") == "p_fc_0"
        unique_name.switch(*old)
        assert unique_name.generate("fc") == "fc_3"
    with pytest.raises(TypeError, match="new_generator"):
        unique_name.switch("not a generator")
    with pytest.raises(TypeError, match="key must be a str"):
        unique_name.generate(3)


def test_layers_and_parameters_restart_under_guard():
    with unique_name.guard():
        a = oar.nn.Linear(2, 3)
    with unique_name.guard():
        b = oar.nn.Linear(2, 3)
    assert a.full_name() == b.full_name() == "linear_0"
    assert [p.name for p in b.parameters()] == ["linear_0.w_0", "linear_0.b_0"]


def _static_names():
    main, startup = oar.static.Program(), oar.static.Program()
    with oar.static.program_guard(main, startup):
        x = oar.static.data("x", [2, 3], "float32")
        y = oar.nn.functional.relu(x)
        z = oar.nn.functional.relu(y)
    return main, x, y, z


def test_static_variables_are_named_by_the_generator():
    oar.enable_static()
    try:
        with unique_name.guard():
            _, _, y1, z1 = _static_names()
        with unique_name.guard():
            main, x, y2, z2 = _static_names()
        # One source of names: guard() restarts program variables too, and a prefix reaches them.
        assert (y1.name, z1.name) == (y2.name, z2.name)
        assert y2.name != z2.name
        with unique_name.guard("pre_"):
            _, _, y3, _ = _static_names()
        assert y3.name.startswith("pre_")
        exe = oar.static.Executor(oar.CPUPlace())
        xv = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)
        (out,) = exe.run(main, feed={"x": xv}, fetch_list=[z2])
        np.testing.assert_array_equal(out, np.maximum(xv, 0))
    finally:
        oar.disable_static()


def test_names_stay_unique_in_a_program_after_a_reset():
    # A guard inside a program's construction restarts the counters; the program still never reuses a name.
    oar.enable_static()
    try:
        main = oar.static.Program()
        with oar.static.program_guard(main, oar.static.Program()):
            x = oar.static.data("x", [2], "float32")
            with unique_name.guard():
                a = oar.nn.functional.relu(x)
            with unique_name.guard():
                b = oar.nn.functional.relu(x)
        assert a.name != b.name
    finally:
        oar.disable_static()
