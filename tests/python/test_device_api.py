"""Paddle's device API: oar.device.Stream / Event / current_stream / set_stream / stream_guard and the memory
statistics, for real on sim:0 (a custom device whose streams are worker threads); oar.device.cuda and
is_compiled_with_* on this machine, and with a gpu plugin that is refused the way the CUDA plugin is
without a driver (tests/plugins/init_error.cc built as gpu_refused). Tests that need a GPU skip with the
gpu plugin's refusal reason."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import oar
from oar import _C

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
TEST_PLUGINS = os.path.join(ROOT, os.environ.get("OAR_BUILD_DIR", "build"), "tests", "plugins")
SIM = "sim:0"

needs_sim = pytest.mark.skipif(SIM not in oar.device.get_available_device(), reason="no sim device")
needs_gpu = pytest.mark.skipif(oar.device.cuda.device_count() == 0,
                               reason="no usable GPU: " + str(oar.device.cuda.unavailable_reason()))


def _run(code, **env):
    """Runs `code` in a fresh interpreter with extra environment variables; returns its stdout."""
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                       env=dict(os.environ, **env), cwd="/")
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


# ---- streams and events on sim -------------------------------------------------------------------

@needs_sim
def test_stream_and_event_basics():
    s = oar.device.Stream(SIM)
    assert s.device == oar.CustomPlace("sim", 0) and s.stream_handle != 0
    assert s != oar.device.current_stream(SIM) and s == s and s == oar.device.Stream(stream_base=s.stream_base)
    x = oar.to_tensor(np.arange(6, dtype="float32"), place=SIM)
    with oar.device.stream_guard(s):
        y = x * 2
    e = s.record_event()
    assert isinstance(e, oar.device.Event) and e.device == s.device
    e.synchronize()
    assert e.query() and s.query()
    s.synchronize()
    np.testing.assert_array_equal(y.numpy(), np.arange(6) * 2)
    assert oar.device.Event(SIM).query()  # never recorded: complete
    high = oar.device.Stream(SIM, priority=1)
    high.synchronize()
    with pytest.raises(ValueError, match="priority must be 1"):
        oar.device.Stream(SIM, priority=0)
    with pytest.raises(NotImplementedError, match="interprocess"):
        oar.device.Event(SIM, interprocess=True)
    with pytest.raises(TypeError, match="expected an oar.device.Event"):
        s.wait_event(s)


@needs_sim
def test_current_stream_is_the_default_unless_set():
    d = oar.device.current_stream(SIM)
    assert d == oar.device.default_stream(SIM)
    oar.set_device(SIM)
    assert oar.device.current_stream() == d  # None: the current device
    s = oar.device.Stream()
    assert s.device == oar.CustomPlace("sim", 0)
    prev = oar.device.set_stream(s)
    try:
        assert prev == d
        assert oar.device.current_stream(SIM) is s
        assert oar.device.current_stream("sim:1") == oar.device.default_stream("sim:1")  # per device
    finally:
        assert oar.device.set_stream(prev) is s
    assert oar.device.current_stream(SIM) == d


@needs_sim
def test_stream_guard_runs_ops_on_its_stream_and_restores():
    """The profiler's records say which stream each task ran on: the add under the guard ran on the guarded
    stream (the same stream id as a memset queued on it explicitly), the one after it on the default stream."""
    if not _C._kit_has_profiler("sim"):
        pytest.skip("the sim plugin has no profiler")
    s = oar.device.Stream(SIM)
    x = oar.to_tensor(np.ones(4, dtype="float32"), place=SIM)
    buf = oar.to_tensor(np.zeros(4, dtype="float32"), place=SIM)
    oar.device.synchronize(SIM)
    _C._kit_start_profiling()
    try:
        with oar.device.stream_guard(s):
            assert oar.get_device() == SIM  # the guard switches to the stream's device
            assert oar.device.current_stream() is s
            y = x + x
        _C._kit_memset(buf, 0, s.stream_base)
        s.synchronize()
        z = x + y  # after the guard: the default stream, ordered after s by the synchronize above
        oar.device.synchronize(SIM)
    finally:
        events = _C._kit_stop_profiling()
    assert oar.get_device() == "cpu" and oar.device.current_stream(SIM) == oar.device.default_stream(SIM)
    np.testing.assert_array_equal(z.numpy(), [3, 3, 3, 3])
    adds = [e for e in events if e[0] == "add" and e[4] == 0]
    memsets = [e for e in events if e[0] == "memset" and e[4] == 0]
    assert len(adds) == 2 and len(memsets) == 1, events
    assert adds[0][5] == memsets[0][5], "the add under stream_guard did not run on the guarded stream"
    assert adds[1][5] != memsets[0][5], "the add after stream_guard still ran on the guarded stream"


@needs_sim
def test_wait_stream_orders_a_consumer_after_its_producer():
    """With a 2 ms latency per task and poisoned new memory, a consumer stream that did not wait for the
    producer would read NaN. Timing events need both records complete: elapsed_time covers the five queued
    tasks, each of which sleeps at least the latency first."""
    out = _run("""
        import numpy as np, oar
        P = "sim:0"
        x = oar.to_tensor(np.arange(1 << 16, dtype="float32"), place=P)
        oar.device.synchronize(P)
        producer, consumer = oar.device.Stream(P), oar.device.Stream(P)
        start, end = oar.device.Event(P, enable_timing=True), oar.device.Event(P, enable_timing=True)
        with oar.device.stream_guard(producer):
            start.record()
            y = x
            for _ in range(4):
                y = y * 2
            end.record(producer)
        consumer.wait_stream(producer)
        with oar.device.stream_guard(consumer):
            z = y + 1
        consumer.synchronize()
        np.testing.assert_array_equal(z.numpy(), np.arange(1 << 16, dtype="float32") * 16 + 1)
        end.synchronize()
        ms = start.elapsed_time(end)
        assert ms >= 4 * 2.0, ms
        try:
            oar.device.Event(P).elapsed_time(end)
        except ValueError as e:
            assert "enable_timing" in str(e)
        else:
            raise AssertionError("elapsed_time without timing did not raise")
        print("ok", ms)
    """, OAR_SIM_LATENCY_US="2000", OAR_SIM_POISON="1")
    assert out.startswith("ok")


@needs_sim
def test_streams_and_events_check_their_devices():
    s0, s1 = oar.device.Stream("sim:0"), oar.device.Stream("sim:1")
    e1 = oar.device.Event("sim:1")
    with pytest.raises(ValueError, match="cannot be recorded on a stream of sim:0"):
        e1.record(s0)
    with pytest.raises(ValueError, match="cannot wait for an event of sim:1"):
        s0.wait_event(e1)
    e1.record(s1)
    s1.wait_event(e1)
    s1.synchronize()


def test_streams_on_the_cpu():
    """The cpu plugin's streams and events are synchronous: everything is done when queued."""
    s = oar.device.Stream("cpu")
    start, end = oar.device.Event("cpu", enable_timing=True), oar.device.Event("cpu", enable_timing=True)
    with oar.device.stream_guard(s):
        start.record()
        y = oar.to_tensor([1.0, 2.0]) * 3
        end.record()
    assert s.query() and end.query() and start.elapsed_time(end) >= 0
    np.testing.assert_array_equal(y.numpy(), [3.0, 6.0])
    assert oar.device.current_stream("cpu") == oar.device.default_stream("cpu")


def test_streams_on_a_device_without_a_stream_table():
    """A plugin with only the required tables (tests/plugins/minimal_required.cc) is synchronous: its
    current stream is the NULL stream, which is always done; new streams and events are refused naming
    the plugin."""
    plugin = os.path.join(TEST_PLUGINS, "liboar_plugin_minimal_required.so")
    if not os.path.exists(plugin):
        pytest.skip("test plugins not built (cmake --build build --target oar_test_plugins)")
    out = _run("""
        import sys, oar
        assert oar._C.load_plugin(sys.argv[1] if len(sys.argv) > 1 else {plugin!r}).loaded
        cur = oar.device.current_stream("test_minimal:0")
        assert cur.stream_handle == 0 and cur.query()
        cur.synchronize()
        for make, what in ((oar.device.Stream, "stream creation"), (oar.device.Event, "events")):
            try:
                make("test_minimal:0")
            except NotImplementedError as e:
                assert "minimal_required plugin does not implement " + what in str(e), e
            else:
                raise AssertionError(what)
        print("ok")
    """.format(plugin=plugin))
    assert out == "ok\n"


# ---- memory statistics ---------------------------------------------------------------------------

@needs_sim
def test_memory_stats_and_separate_peak_resets():
    dev = oar.device
    dev.synchronize(SIM)
    dev.empty_cache(SIM)
    base_alloc = dev.memory_allocated(SIM)
    t = oar.zeros([1 << 20], dtype="float32").to(SIM)  # 4 MiB
    dev.synchronize(SIM)
    assert dev.memory_allocated(SIM) - base_alloc >= 4 << 20
    assert dev.memory_reserved(SIM) >= dev.memory_allocated(SIM)
    del t
    assert dev.memory_allocated(SIM) == base_alloc
    assert dev.max_memory_allocated(SIM) >= base_alloc + (4 << 20)
    reserved_peak = dev.max_memory_reserved(SIM)
    dev.reset_max_memory_allocated(SIM)
    assert dev.max_memory_allocated(SIM) == dev.memory_allocated(SIM)
    assert dev.max_memory_reserved(SIM) == reserved_peak  # untouched by the allocated reset
    dev.empty_cache(SIM)
    assert dev.memory_reserved(SIM) < reserved_peak
    dev.reset_max_memory_reserved(SIM)
    assert dev.max_memory_reserved(SIM) == dev.memory_reserved(SIM)


# ---- is_compiled_with_* and oar.device.cuda on this machine --------------------------------------

def test_is_compiled_with():
    assert oar.is_compiled_with_cuda is oar.device.is_compiled_with_cuda
    assert oar.device.is_compiled_with_cuda() == (oar.device.cuda.device_count() > 0)
    assert oar.device.is_compiled_with_cuda() == ("gpu" in oar.device.get_all_device_type())
    assert not oar.device.is_compiled_with_xpu() and not oar.device.is_compiled_with_ipu()
    assert not oar.device.is_compiled_with_cinn() and oar.device.is_compiled_with_distribute()
    assert oar.device.is_compiled_with_custom_device("sim") == ("sim" in oar.device.get_all_custom_device_type())
    assert not oar.device.is_compiled_with_custom_device("gpu") and not oar.device.is_compiled_with_custom_device("cpu")
    if not oar.device.is_compiled_with_cuda():
        assert not oar.device.is_compiled_with_rocm() and oar.device.get_cudnn_version() is None


def test_paddle_test_harness_pattern_never_breaks():
    """Paddle's tests do `if paddle.is_compiled_with_cuda(): places.append(paddle.CUDAPlace(0))`."""
    places = [oar.CPUPlace()]
    if oar.is_compiled_with_cuda():
        places.append(oar.CUDAPlace(0))
    for p in places:
        np.testing.assert_array_equal(oar.to_tensor([1.0, 2.0], place=p).numpy(), [1.0, 2.0])


def test_cuda_without_a_gpu_says_why():
    if oar.device.cuda.device_count() > 0:
        pytest.skip("a GPU is usable here")
    reason = oar.device.cuda.unavailable_reason()
    assert reason == _C._device_type_refusal("gpu") and reason
    cuda = oar.device.cuda
    for call in (cuda.memory_allocated, cuda.max_memory_allocated, cuda.memory_reserved, cuda.max_memory_reserved,
                 cuda.reset_max_memory_allocated, cuda.reset_max_memory_reserved, cuda.synchronize,
                 cuda.current_stream, cuda.get_device_properties, cuda.get_device_name, cuda.get_device_capability,
                 cuda.Stream, cuda.Event):
        with pytest.raises(RuntimeError) as e:
            call()
        assert "no usable GPU: " + reason in str(e.value)
    cuda.empty_cache()  # nothing to release: no error, as Paddle
    with pytest.raises(ValueError) as e:
        oar.CUDAPlace(0)
    assert "unknown device type 'gpu'" in str(e.value) and reason in str(e.value)
    with pytest.raises(ValueError) as e:
        oar.set_device("gpu")
    assert reason in str(e.value)


_REFUSED_GPU = os.path.join(TEST_PLUGINS, "liboar_plugin_gpu_refused.so")
_DRIVER_MSG = "CUDA driver version is insufficient for CUDA runtime version"
_REFUSAL = "oar_plugin_init failed: Unavailable: " + _DRIVER_MSG  # the loader's words for the plugin's error


def _refused_gpu_dir(tmp_path):
    if not os.path.exists(_REFUSED_GPU):
        pytest.skip("test plugins not built (cmake --build build --target oar_test_plugins)")
    if oar.device.cuda.device_count() > 0:
        pytest.skip("a gpu plugin is loaded here: a refused one would not be the one asked about")
    d = tmp_path / "plugins"
    d.mkdir()
    os.symlink(_REFUSED_GPU, str(d / "liboar_plugin_gpu_refused.so"))
    return str(d)


def test_refused_gpu_plugin_reason_reaches_every_gpu_call(tmp_path):
    out = _run("""
        import oar, numpy as np
        cuda = oar.device.cuda
        assert not oar.is_compiled_with_cuda() and cuda.device_count() == 0
        want = {msg!r}
        assert want in cuda.unavailable_reason(), cuda.unavailable_reason()
        for call in (cuda.memory_allocated, cuda.synchronize, cuda.Event, cuda.get_device_name):
            try:
                call()
            except RuntimeError as e:
                assert want in str(e) and "liboar_plugin_gpu_refused.so" in str(e), e
            else:
                raise AssertionError(call)
        try:
            oar.CUDAPlace(0)
        except ValueError as e:
            assert want in str(e), e
        else:
            raise AssertionError("CUDAPlace(0)")
        places = [oar.CPUPlace()] + ([oar.CUDAPlace(0)] if oar.is_compiled_with_cuda() else [])
        assert [str(p) for p in places] == ["Place(cpu)"]
        print("ok")
    """.format(msg=_REFUSAL), OAR_PLUGIN_PATH=_refused_gpu_dir(tmp_path))
    assert out == "ok\n"


def _gpu_line(report):
    """The doctor's device line for gpu ("  gpu: not available: <reasons>"); an installed oar-cuda adds its own."""
    lines = [ln for ln in report.split("\ndevices:\n", 1)[1].splitlines() if ln.startswith("  gpu: not available: ")]
    assert len(lines) == 1, report
    return lines[0]


def test_doctors_show_a_refused_gpu_plugin(tmp_path):
    d = _refused_gpu_dir(tmp_path)
    env = dict(os.environ, OAR_PLUGIN_PATH=d)
    path = os.path.join(d, "liboar_plugin_gpu_refused.so")
    want = "the plugin {} was not loaded: {}".format(path, _REFUSAL)
    py = subprocess.run([sys.executable, "-m", "oar.utils.doctor"], check=True, capture_output=True, text=True,
                        env=env, cwd="/").stdout
    assert "    skipped: " + _REFUSAL in py
    assert want in _gpu_line(py), py
    exe = os.path.join(ROOT, os.environ.get("OAR_BUILD_DIR", "build"), "bin", "oar-doctor")
    if os.path.exists(exe):
        cpp = subprocess.run([exe], check=True, capture_output=True, text=True, env=env).stdout
        assert want in _gpu_line(cpp), cpp


# ---- with a GPU ----------------------------------------------------------------------------------

@needs_gpu
def test_cuda_streams_events_and_memory():
    cuda = oar.device.cuda
    assert oar.is_compiled_with_cuda() and oar.CUDAPlace(0).is_gpu_place()
    props = cuda.get_device_properties(0)
    assert props.name == cuda.get_device_name() and props.total_memory > 0 and props.multi_processor_count > 0
    s = cuda.Stream()
    assert s.cuda_stream != 0 and s.device == oar.CUDAPlace(0)
    x = oar.to_tensor(np.arange(1 << 20, dtype="float32"), place="gpu:0")
    start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
    s.wait_stream(cuda.current_stream())
    with cuda.stream_guard(s):
        start.record()
        y = x * 2
        end.record()
    end.synchronize()
    assert start.elapsed_time(end) >= 0
    cuda.current_stream().wait_stream(s)
    np.testing.assert_array_equal(y.numpy(), np.arange(1 << 20, dtype="float32") * 2)
    assert cuda.memory_allocated() >= 8 << 20 and cuda.max_memory_reserved() >= cuda.memory_reserved()
    cuda.synchronize()
    cuda.empty_cache()
