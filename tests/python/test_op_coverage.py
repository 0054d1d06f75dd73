"""Every op the core defines, and every kernel a loaded plugin registers, is exercised by the op
suite's samples (declared next to each op's definition; oar.testing.ops). The suite itself runs in
test_op_suite.py."""
import oar
from oar import _C
from oar.testing import ops as suite


def test_every_op_and_kernel_has_samples():
    problems = suite.meta_check()
    assert not problems, "add samples in the op's register_*_samples (docs/ops.md):\n" + "\n".join(problems)


def test_every_sample_matches_its_op_schema():
    # Attributes the schema does not have, or a wrong number of inputs, would only show when the sample
    # runs; catch them here, per op.
    bad = []
    for op in _C.op_names():
        schema = _C._kit_op_schema(op)
        names = {a[0] for a in schema["attrs"]}
        for s in _C._op_samples(op):
            extra = sorted(set(s["attrs"]) - names)
            if extra:
                bad.append("{}[{}]: unknown attributes {}".format(op, s["name"], extra))
            if not schema["variadic"] and len(s["inputs"]) != len(schema["inputs"]):
                bad.append("{}[{}]: {} inputs, the op takes {}".format(op, s["name"], len(s["inputs"]),
                                                                      len(schema["inputs"])))
            for i in s["inputs"]:
                if i["view"] == "transpose" and len(i["shape"]) < 2 or i["view"] == "flip" and not i["shape"]:
                    bad.append("{}[{}]: a {} view of shape {}".format(op, s["name"], i["view"], i["shape"]))
    assert not bad, bad


def test_exceptions_name_real_ops():
    unknown = sorted(set(suite.EXCEPTIONS) - set(_C.op_names()))
    assert not unknown, unknown


def test_meta_check_reports_an_op_without_samples(monkeypatch):
    real = _C._op_samples
    monkeypatch.setattr(_C, "_op_samples", lambda name: [] if name == "add" else real(name))
    problems = suite.meta_check(device_types=["cpu"])
    assert any("'add' has no samples" in p for p in problems)
    assert any(p.startswith("kernel add ") for p in problems)
