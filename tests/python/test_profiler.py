"""oar.profiler: Paddle's scheduler states, operator/kernel/user events with exact counts, record_shapes,
profile_memory, the chrome trace round trip, and the refusals."""
import json
import threading

import numpy as np
import pytest

import oar
from oar import profiler


def _record(fn, **kw):
    """Runs fn() inside one recording period and returns the result."""
    p = profiler.Profiler(on_trace_ready=lambda prof: None, **kw)
    p.start()
    fn()
    p.stop()
    return p.profiler_result


def test_make_scheduler_states_as_paddle():
    # Recorded from paddle 2.6.2's make_scheduler(closed=1, ready=1, record=2, repeat=2, skip_first=1).
    s = profiler.make_scheduler(closed=1, ready=1, record=2, repeat=2, skip_first=1)
    expect = ["CLOSED", "CLOSED", "READY", "RECORD", "RECORD_AND_RETURN", "CLOSED", "READY", "RECORD",
              "RECORD_AND_RETURN", "CLOSED", "CLOSED", "CLOSED"]
    assert [s(i).name for i in range(12)] == expect
    forever = profiler.make_scheduler(closed=0, ready=0, record=1)
    assert all(forever(i) == profiler.ProfilerState.RECORD_AND_RETURN for i in range(5))
    with pytest.raises(ValueError, match="record"):
        profiler.make_scheduler(closed=1, ready=1, record=0)
    with pytest.raises(ValueError, match="closed"):
        profiler.make_scheduler(closed=-1, ready=1, record=1)


def test_operator_and_kernel_events_are_counted_exactly(device):
    a = oar.to_tensor(np.ones((2, 3), "float32"), place=device)
    b = oar.to_tensor(np.full((2, 3), 2.0, "float32"), place=device)

    def work():
        for _ in range(7):
            oar.add(a, b)
        oar.device.synchronize(device)

    r = _record(work)
    adds = [e for e in r.host_events("operator") if e.name == "add"]
    assert len(adds) == 7
    assert all(e.end_ns >= e.start_ns for e in adds)
    kernels = [e for e in r.device_events() if e.name == "add"]
    kind = device.split(":")[0]
    assert len(kernels) == 7, f"{kind}: {len(kernels)} add kernel events"
    assert {e.device_type for e in kernels} == {kind}


def test_host_only_target_records_no_device_events():
    a = oar.ones([4])
    r = _record(lambda: oar.exp(a), targets=[profiler.ProfilerTarget.CPU])
    assert [e.name for e in r.host_events("operator")] == ["exp"]
    assert r.device_events() == []


def test_scheduler_range_records_the_named_steps_and_calls_on_trace_ready_once():
    seen = []
    p = profiler.Profiler(scheduler=(2, 4), on_trace_ready=lambda prof: seen.append(prof.profiler_result))
    x = oar.ones([3])
    p.start()
    for step in range(6):
        for _ in range(step + 1):  # step i runs i+1 exp calls
            oar.exp(x)
        p.step()
    p.stop()
    assert len(seen) == 1
    r = seen[0]
    assert [s[0] for s in r.steps] == [2, 3]
    assert len([e for e in r.host_events("operator") if e.name == "exp"]) == 3 + 4
    steps = [e for e in r.host_events("user") if e.name.startswith("ProfileStep#")]
    assert [e.name for e in steps] == ["ProfileStep#2", "ProfileStep#3"]
    # every recorded op lies inside a step range
    for e in r.host_events("operator"):
        assert any(s.start_ns <= e.start_ns and e.end_ns <= s.end_ns for s in steps)


def test_record_event_ranges_nest_and_decorate():
    x = oar.ones([2, 2])

    @profiler.RecordEvent("decorated")
    def f():
        return oar.matmul(x, x)

    def work():
        with profiler.RecordEvent("outer"):
            f()
            ev = profiler.RecordEvent("manual")
            ev.begin()
            oar.exp(x)
            ev.end()

    r = _record(work)
    user = {e.name: e for e in r.host_events("user") if not e.name.startswith("ProfileStep#")}
    assert set(user) == {"outer", "decorated", "manual"}
    outer = user["outer"]
    for name in ("decorated", "manual"):
        assert outer.start_ns <= user[name].start_ns <= user[name].end_ns <= outer.end_ns
    mm = [e for e in r.host_events("operator") if e.name == "matmul"]
    assert len(mm) == 1 and user["decorated"].start_ns <= mm[0].start_ns <= mm[0].end_ns <= user["decorated"].end_ns
    # outside a recording, ranges cost nothing and record nothing
    with profiler.RecordEvent("idle"):
        pass
    with pytest.raises(ValueError, match="name"):
        profiler.RecordEvent("")


def test_record_shapes_and_profile_memory():
    a = oar.ones([256, 256])
    b = oar.ones([256, 256])
    r = _record(lambda: oar.add(a, b), record_shapes=True, profile_memory=True, targets=[profiler.ProfilerTarget.CPU])
    (e,) = r.host_events("operator")
    assert e.shapes == "[256, 256], [256, 256]"
    assert e.bytes == 256 * 256 * 4  # the output, still alive when the call returns


def test_static_program_build_records_nothing_and_its_run_records_ops():
    oar.enable_static()
    try:
        main, startup = oar.static.Program(), oar.static.Program()
        with oar.static.program_guard(main, startup):
            x = oar.static.data("x", [2, 3], "float32")
            r_build = _record(lambda: oar.tanh(x), targets=[profiler.ProfilerTarget.CPU])
            y = oar.tanh(x)
        exe = oar.static.Executor()
        feed = {"x": np.ones((2, 3), "float32")}
        r_run = _record(lambda: exe.run(main, feed=feed, fetch_list=[y]), targets=[profiler.ProfilerTarget.CPU])
    finally:
        oar.disable_static()
    assert r_build.host_events("operator") == []
    # the program holds both tanh calls (the one built while recording too): the run executes both
    assert [e.name for e in r_run.host_events("operator")].count("tanh") == 2


def test_chrome_trace_round_trip(tmp_path):
    x = oar.ones([8])
    p = profiler.Profiler(on_trace_ready=profiler.export_chrome_tracing(str(tmp_path), "w0"), record_shapes=True)
    with p:
        with profiler.RecordEvent("block"):
            oar.sqrt(oar.exp(x))
    files = list(tmp_path.iterdir())
    assert len(files) == 1 and files[0].name.startswith("w0_time_") and files[0].name.endswith(".paddle_trace.json")
    data = json.loads(files[0].read_text())
    names = [e["name"] for e in data["traceEvents"]]
    assert {"exp", "sqrt", "block"} <= set(names)
    assert all(e["ph"] == "X" and e["dur"] >= 0 for e in data["traceEvents"])
    back = profiler.load_profiler_result(str(files[0]))
    assert [(e.name, e.category, e.start_ns, e.shapes) for e in back.events] == \
        [(e.name, e.category, e.start_ns, e.shapes) for e in p.profiler_result.events]
    text = p.summary(time_unit="us", views=[profiler.SummaryView.OperatorView])
    assert "Operator Summary" in text and "exp" in text and "sqrt" in text


def test_refusals(tmp_path):
    p = profiler.Profiler(on_trace_ready=lambda prof: None)
    with pytest.raises(RuntimeError, match="nothing recorded"):
        p.summary()
    with pytest.raises(RuntimeError, match="nothing recorded"):
        p.export(str(tmp_path / "t.json"))
    with pytest.raises(ValueError, match="scheduler"):
        profiler.Profiler(scheduler=(3, 2))
    with pytest.raises(ValueError, match="targets"):
        profiler.Profiler(targets=["cpu"])
    with pytest.raises(NotImplementedError, match="chrome"):
        profiler.export_protobuf(str(tmp_path))
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(ValueError, match="not a trace"):
        profiler.load_profiler_result(str(bad))
    p.start()
    try:
        with pytest.raises(RuntimeError, match="already started"):
            profiler.Profiler(on_trace_ready=lambda prof: None).start()
        errors = []
        t = threading.Thread(target=lambda: errors.append(_try(oar._C._profiler_stop)))
        t.start()
        t.join()
        assert "thread" in errors[0]
    finally:
        p.stop()
    with pytest.raises(ValueError, match="format"):
        p.export(str(tmp_path / "t.pb"), "pb")


def _try(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return str(e)
    return ""


def test_step_info_reports_throughput():
    p = profiler.Profiler(timer_only=True)
    p.start()
    for _ in range(3):
        oar.exp(oar.ones([4]))
        p.step(num_samples=32)
    info = p.step_info(unit="images")
    p.stop()
    assert info.startswith("batch_cost: ") and "images/s" in info
    assert p.profiler_result is None  # timer_only records no events
