"""The vendor plugin kit (docs/plugin_guide.md): the conformance suite shipped in the package
(oar.testing.plugin_conformance), the sample backend samples/custom_device built out of tree against the
installed SDK, and errors from a plugin reaching Python with the plugin's message.

The fresh-venv test runs the walkthrough block of docs/plugin_guide.md literally (it extracts the commands
from the guide), so the guide and the test cannot drift apart."""
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import oar
import oar.sysconfig as sc
from oar.testing import plugin_conformance as pc

from _venv import CLEAN_ENV, ROOT, Venv, core_wheel, need_tools

SAMPLE = os.path.join(ROOT, "samples", "custom_device")
GUIDE = os.path.join(ROOT, "docs", "plugin_guide.md")


def _has_sim():
    return "sim" in oar.device.get_all_custom_device_type()


def _conformance_cli(*args, env=None, python=sys.executable):
    return subprocess.run([python, "-m", "oar.testing.plugin_conformance", *args], capture_output=True, text=True,
                          env=env if env is not None else CLEAN_ENV, cwd="/", timeout=300)


# ---- the suite on sim --------------------------------------------------------------------------------

def test_conformance_suite_passes_on_sim():
    if not _has_sim():
        pytest.skip("no sim plugin installed")
    report = pc.run("sim")
    assert report.ok, report.format(verbose=True)
    status = {r.name: r.status for r in report.results}
    # Every kernel sim registers was compared (none skipped), and sim's collectives and profiler ran.
    for op, dtypes in oar._C.kernels_of("sim"):
        for dt in dtypes:
            assert status["kernels.{}.{}".format(op, dt)] == "PASS", (op, dt)
    for name in ("collectives.all_reduce", "collectives.broadcast", "collectives.all_gather",
                 "collectives.reduce_scatter", "collectives.all_to_all", "collectives.reduce",
                 "collectives.send_recv", "collectives.two_processes", "profiler.trace_events",
                 "streams.events_across_streams", "errors.out_of_memory", "memory.across_devices",
                 "abi.older_core"):
        assert status[name] == "PASS", name
    assert "CONFORMS" in report.format()


def test_conformance_cli_on_sim_selects_and_exits_0():
    if not _has_sim():
        pytest.skip("no sim plugin installed")
    r = _conformance_cli("--device", "sim", "-k", "kernels.matmul", "-k", "abi", "-v")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [line for line in r.stdout.splitlines() if line.startswith(("PASS", "FAIL", "SKIP"))]
    names = sorted(line.split()[1] for line in lines)
    assert names == ["abi.older_core", "abi.version", "kernels.matmul.float32", "kernels.matmul.float64"], r.stdout
    assert "works under ABI 1.0, 1.1, 1.2 cores" in r.stdout  # every older minor of ABI 1.3
    assert "4 passed, 0 failed, 0 skipped" in r.stdout


@pytest.mark.parametrize("value", ["9", "-1", "x", ""])
def test_emulated_core_minor_outside_what_the_core_can_present_is_refused_with_reason(value):
    """OAR_ABI_EMULATE_CORE_MINOR (the older-core check's knob) takes only a minor this core can present;
    anything else skips every plugin with the knob named, never a crash."""
    code = ("from oar import _C\n"
            "recs = [r for r in _C.plugin_records() if r.device_type == 'cpu']\n"
            "print(recs[0].loaded, recs[0].reason)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/",
                       env=dict(CLEAN_ENV, OAR_ABI_EMULATE_CORE_MINOR=value))
    assert "False" in r.stdout and "OAR_ABI_EMULATE_CORE_MINOR='{}' is not a minor this core can present".format(
        value) in r.stdout, r.stdout + r.stderr


def test_the_bundled_plugins_work_under_an_older_core():
    """Under an emulated ABI 1.0 core (trace_event and workspace NULL) the CPU plugin, and sim when present,
    load and compute; a profiled run does not call the missing trace_event."""
    code = ("import numpy as np, oar\n"
            "from oar import _C\n"
            "places = ['cpu'] + (['sim:0'] if _C.device_count('sim') else [])\n"
            "for p in places:\n"
            "    x = oar.to_tensor(np.arange(6, dtype='float32').reshape(2, 3), place=p)\n"
            "    _C._kit_start_profiling()\n"
            "    y = oar.matmul(x, x, transpose_y=True) + 1.0\n"
            "    _C._kit_stop_profiling()\n"
            "    assert np.allclose(y.numpy(), np.array([[6., 15.], [15., 51.]])), y.numpy()\n"
            "print('OK', places)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/",
                       env=dict(CLEAN_ENV, OAR_ABI_EMULATE_CORE_MINOR="0"))
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout + r.stderr


COLLECTIVE_CHECKS = ["collectives." + k for k in ("all_gather", "all_reduce", "all_to_all", "broadcast", "reduce",
                                                  "reduce_scatter", "send_recv", "two_processes")]


def _collective_checks_pass(device, env):
    r = _conformance_cli("--device", device, "-k", "collectives", "-v", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    passed = sorted(line.split()[1] for line in r.stdout.splitlines() if line.startswith("PASS"))
    assert passed == COLLECTIVE_CHECKS, r.stdout
    assert "8 passed, 0 failed, 0 skipped" in r.stdout, r.stdout


@pytest.mark.parametrize("transport", ["auto", "store"])
def test_sim_collectives_in_process_and_through_the_store(transport):
    """OAR_SIM_COLLECTIVE_TRANSPORT=store sends the in-process ranks' data through the core's key-value store,
    the path ranks in several processes take; both transports pass the collective checks."""
    if not _has_sim():
        pytest.skip("no sim plugin installed")
    _collective_checks_pass("sim", dict(CLEAN_ENV, OAR_SIM_COLLECTIVE_TRANSPORT=transport))


def test_sim_store_transport_names_both_calls_when_ranks_disagree(monkeypatch):
    if not _has_sim():
        pytest.skip("no sim plugin installed")
    xs = [np.arange(4, dtype="float32")] * 2
    monkeypatch.setenv("OAR_SIM_COLLECTIVE_TRANSPORT", "store")  # read by sim at every comm_init
    with pytest.raises(Exception) as e:
        oar._C._kit_run_collective("sim", "all_reduce", xs, 0, ["all_reduce", "all_gather"])
    msg = str(e.value)
    assert "ranks disagree on collective #0" in msg, msg
    assert "rank 0 called all_reduce(count 4, float32, op 0)" in msg and "rank 1 called all_gather(count 4, float32)" in msg, msg
    monkeypatch.setenv("OAR_SIM_COLLECTIVE_TRANSPORT", "auto")  # the in-process rendezvous refuses it too
    with pytest.raises(Exception, match="ranks disagree on collective #0"):
        oar._C._kit_run_collective("sim", "all_reduce", xs, 0, ["all_reduce", "all_gather"])
    monkeypatch.setenv("OAR_SIM_COLLECTIVE_TRANSPORT", "pigeon")
    with pytest.raises(Exception, match="OAR_SIM_COLLECTIVE_TRANSPORT='pigeon' is neither 'auto' nor 'store'"):
        oar._C._kit_run_collective("sim", "all_reduce", xs)


def test_two_process_check_on_sim_passes():
    """collectives.two_processes on sim: two ranks in two processes bootstrapped through the TCP store meet
    through sim's store transport (comm_init finds the ranks in different processes)."""
    if not _has_sim():
        pytest.skip("no sim plugin installed")
    import time
    t0 = time.monotonic()
    report = pc.run("sim", ["collectives.two_processes"])
    assert time.monotonic() - t0 < 90
    (res,) = report.results
    assert res.status == "PASS", res.message
    for kind in ("all_reduce(sum) 1000 elements", "broadcast from root 1", "reduce(sum) to root 1",
                 "all_gather", "reduce_scatter(sum)", "all_to_all", "send/recv", "comm_init"):
        assert kind in res.message, res.message


def test_two_process_check_on_the_sample_passes(sample_build):
    r = _conformance_cli("--device", "custom_cpu", "-k", "two_processes", "-v",
                         env=dict(CLEAN_ENV, OAR_PLUGIN_PATH=sample_build))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASS collectives.two_processes" in r.stdout and "send/recv" in r.stdout, r.stdout


def test_kit_comm_one_rank_and_its_errors():
    """The kit's one-rank bindings (_kit_get_unique_id, _KitComm) on sim: a one-rank communicator runs every
    collective; bad arguments raise ValueError, a plugin's refusal raises naming the plugin."""
    if not _has_sim():
        pytest.skip("no sim plugin installed")
    uid = oar._C._kit_get_unique_id("sim")
    assert isinstance(uid, bytes) and len(uid) == 128
    comm = oar._C._KitComm("sim", 1, 1, 0, uid)
    x = np.arange(12, dtype="float32") - 3
    for kind in ("all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter", "all_to_all"):
        np.testing.assert_array_equal(comm.run(kind, x), x, err_msg=kind)
    with pytest.raises(ValueError, match="unknown collective 'gossip'"):
        comm.run("gossip", x)
    with pytest.raises(ValueError, match="root 1 out of range"):
        comm.run("broadcast", x, 1)
    comm.destroy()
    with pytest.raises(ValueError, match="the communicator was destroyed"):
        comm.run("all_reduce", x)
    with pytest.raises(ValueError, match="must be 128 bytes"):
        oar._C._KitComm("sim", 0, 1, 0, b"short")
    with pytest.raises(ValueError, match="rank 2 of 2 is out of range"):
        oar._C._KitComm("sim", 0, 2, 2, uid)
    with pytest.raises(ValueError, match="local device 7 out of range"):
        oar._C._KitComm("sim", 7, 1, 0, uid)
    with pytest.raises(Exception, match="plugin sim: comm_init: sim: comm_init: the id was not made by the sim "
                                        "plugin's get_unique_id"):
        oar._C._KitComm("sim", 0, 1, 0, bytes(128))


def _test_plugin(name):
    path = os.path.join(ROOT, os.environ.get("OAR_BUILD_DIR", "build"), "tests", "plugins",
                        "liboar_plugin_{}.so".format(name))
    if not os.path.exists(path):
        pytest.skip("{} is not built (scripts/build.sh; OAR_BUILD_DIR names the build folder)".format(path))
    return path


def test_two_process_check_fails_in_process_only_collectives_by_timeout():
    """tests/plugins/inproc_collectives.cc: in-process ranks work, but its comm_init waits for ranks that
    never come. collectives.two_processes fails by its own timeout with a readable message, not a hang."""
    path = _test_plugin("inproc_collectives")
    code = """
import sys, time
import oar
from oar import _C
from oar.testing import plugin_conformance as pc
assert _C.load_plugin(sys.argv[1]).loaded
ctx = pc.Context("test_inproc_coll")
pc.check_all_reduce(ctx)  # in-process ranks: fine
t0 = time.monotonic()
try:
    pc.check_two_processes(ctx, timeout=8)
    print("NO FAILURE")
except AssertionError as e:
    print("FAILED after {:.0f} s:".format(time.monotonic() - t0), e)
"""
    r = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert "FAILED after" in out, out
    assert int(out.split("FAILED after ")[1].split()[0]) <= 12, out
    assert "rank(s) 0, 1 did not finish within 8 s: do the plugin's collectives only connect ranks inside one " \
           "process?" in out, out


def _plugin_dir(tmp_path, name):
    """A folder holding only tests/plugins' liboar_plugin_<name>.so, for OAR_PLUGIN_PATH."""
    src = _test_plugin(name)
    d = tmp_path / ("plugins_" + name)
    d.mkdir()
    shutil.copy(src, str(d / os.path.basename(src)))
    return str(d)


def _report_lines(out):
    """{check: (status, message)} from the CLI's report (failures and skips, each with its indented message)."""
    res, last = {}, None
    for line in out.splitlines():
        m = re.match(r"^(PASS|FAIL|SKIP) (\S+) \(", line)
        if m:
            last = m.group(2)
            res[last] = (m.group(1), "")
        elif last and line.startswith("       "):
            res[last] = (res[last][0], (res[last][1] + " " + line.strip()).strip())
    return res


# What tests/plugins/minimal_required.cc (only device.count and memory.allocate/free/memcpy, one float32
# add kernel) legitimately leaves out, and the reason each check gives.
_MINIMAL_SKIPS = {
    "device.properties": "the plugin's device table has no properties; it is optional (docs/device_abi.md)",
    "memory.device_to_device": "the plugin's memory table has no memset; it is optional (docs/device_abi.md)",
    "memory.across_devices": "one device only",
    "streams.events_across_streams": "the plugin has no stream table; streams are optional (docs/device_abi.md)",
    "streams.event_query_sync_timing": "the plugin has no stream table; streams are optional (docs/device_abi.md)",
    "streams.host_threads": "the plugin has no stream table; streams are optional (docs/device_abi.md)",
    "streams.graph_capture": "the plugin has no stream table; streams are optional (docs/device_abi.md)",
    "errors.out_of_memory": "the plugin's device table has no properties; it is optional (docs/device_abi.md)",
    "profiler.trace_events": "no profiler table; profilers are optional (docs/device_abi.md)",
}
_MINIMAL_SKIPS.update({c: "registers no collectives (no collective table); collectives are optional "
                          "(docs/device_abi.md)" for c in COLLECTIVE_CHECKS})


def test_plugin_with_only_the_required_tables_conforms_and_skips_the_rest(tmp_path):
    """A plugin with only what the ABI requires passes the suite; what it leaves out (stream and event
    tables, memset, properties, collectives, profiler) is skipped with the reason, and what it has is
    checked (copies, its kernel, several threads on the default stream, a clean exit)."""
    r = _conformance_cli("--device", "test_minimal", "-v",
                         env=dict(CLEAN_ENV, OAR_PLUGIN_PATH=_plugin_dir(tmp_path, "minimal_required")))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "(plugin minimal_required) CONFORMS" in r.stdout, r.stdout
    res = _report_lines(r.stdout)
    skipped = {name: msg for name, (status, msg) in res.items() if status == "SKIP"}
    assert sorted(skipped) == sorted(_MINIMAL_SKIPS), r.stdout
    for name, why in _MINIMAL_SKIPS.items():
        assert why in skipped[name], (name, skipped[name])
    # Checks that run their required part before skipping the optional one say so.
    assert skipped["streams.host_threads"].startswith("four threads on the default streams checked"), skipped
    assert skipped["memory.device_to_device"].startswith("device->device memcpy checked"), skipped
    for name in ("abi.version", "abi.older_core", "device.enumeration", "memory.host_device_roundtrip",
                 "memory.zero_size", "memory.large", "memory.non_contiguous", "memory.statistics",
                 "kernels.add.float32", "streams.default_stream_order", "errors.bad_device_index",
                 "errors.failing_op", "lifecycle.process_exit"):
        assert res[name][0] == "PASS", (name, res.get(name), r.stdout)
    assert "no extra stream or event was left alive" in res["lifecycle.process_exit"][1]
    assert "0 failed, {} skipped".format(len(_MINIMAL_SKIPS)) in r.stdout, r.stdout


def test_plugin_with_a_broken_required_behaviour_fails(tmp_path):
    """The same plugin whose memcpy drops the last byte of a copy fails the required checks; the skips
    for what it leaves out do not hide that."""
    r = _conformance_cli("--device", "test_minimal_broken",
                         env=dict(CLEAN_ENV, OAR_PLUGIN_PATH=_plugin_dir(tmp_path, "minimal_broken")))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "(plugin minimal_broken) DOES NOT CONFORM" in r.stdout, r.stdout
    res = _report_lines(r.stdout)
    # The required parts of checks that also skip an optional part (memset, own streams) fail first.
    for name in ("memory.host_device_roundtrip", "memory.device_to_device", "kernels.add.float32",
                 "streams.default_stream_order", "streams.host_threads", "lifecycle.process_exit"):
        assert res.get(name, ("PASS",))[0] == "FAIL", (name, r.stdout)
    assert "host->device->host: 1 of 15 elements differ" in res["memory.host_device_roundtrip"][1], r.stdout
    assert "device->device memcpy of 13 floats" in res["memory.device_to_device"][1], r.stdout
    assert res["streams.events_across_streams"][0] == "SKIP"


def test_loader_warns_when_the_plugin_name_and_file_name_disagree(tmp_path):
    """tests/plugins' liboar_plugin_misnamed.so calls itself 'renamed': it loads, the loader logs a
    warning, the doctor shows it in the plugin's record, and the suite's abi.version check fails."""
    env = dict(CLEAN_ENV, OAR_PLUGIN_PATH=_plugin_dir(tmp_path, "misnamed"))
    r = subprocess.run([sys.executable, "-m", "oar.utils.doctor"], capture_output=True, text=True, env=env, cwd="/")
    assert r.returncode == 0, r.stdout + r.stderr
    warning = ("the plugin's name 'renamed' does not match its file name liboar_plugin_misnamed.so "
               "(expected liboar_plugin_renamed.so)")
    m = re.search(r"liboar_plugin_misnamed\.so\n    loaded: renamed .*\n    warning: (.*)\n", r.stdout)
    assert m and m.group(1) == warning, r.stdout
    assert re.search(r"^W.*plugin .*liboar_plugin_misnamed\.so: " + re.escape(warning), r.stderr, re.M), r.stderr
    code = ("from oar import _C\n"
            "rec = [x for x in _C.plugin_records() if x.device_type == 'test_misnamed'][0]\n"
            "print(rec.loaded, rec.name, rec.warnings)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd="/")
    assert "True renamed [\"{}\"]".format(warning) in r.stdout, r.stdout + r.stderr
    r = _conformance_cli("--device", "test_misnamed", "-k", "abi.version", env=env)
    assert r.returncode == 1 and "FAIL abi.version" in r.stdout, r.stdout
    assert "does not match its file" in r.stdout
    # A plugin whose name matches its file loads without that warning.
    env = dict(CLEAN_ENV, OAR_PLUGIN_PATH=_plugin_dir(tmp_path, "minimal_required"))
    r = subprocess.run([sys.executable, "-m", "oar.utils.doctor"], capture_output=True, text=True, env=env, cwd="/")
    assert "loaded: minimal_required" in r.stdout and "does not match its file name" not in r.stdout + r.stderr


def test_conformance_cli_unknown_device_exits_2():
    r = _conformance_cli("--device", "no_such_device")
    assert r.returncode == 2
    assert "device type 'no_such_device' is not available" in r.stderr


# ---- the sample built out of tree against the installed SDK --------------------------------------------

def _build_sample(dest, *defs):
    need_tools("cmake", "c++")
    build = str(dest)
    cfg = ["cmake", "-S", SAMPLE, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-Doar_DIR=" + sc.get_cmake_dir(), *defs]
    r = subprocess.run(cfg, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run(["cmake", "--build", build, "-j", "2"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    plugin = os.path.join(build, "liboar_plugin_custom_cpu.so")
    assert os.path.isfile(plugin)
    if shutil.which("readelf"):  # a plugin never links the core
        dyn = subprocess.run(["readelf", "-d", plugin], check=True, capture_output=True, text=True).stdout
        assert "liboar_core" not in dyn
    return build


@pytest.fixture(scope="module")
def sample_build(tmp_path_factory):
    return _build_sample(tmp_path_factory.mktemp("custom_cpu"))


@pytest.fixture(scope="module")
def faulty_build(tmp_path_factory):
    """The sample built with CUSTOM_CPU_TEST_FAULTS: a wrong `add`, a stream wait that does not wait, a
    failing copy and a failing kernel."""
    return _build_sample(tmp_path_factory.mktemp("custom_cpu_faults"), "-DCUSTOM_CPU_TEST_FAULTS=ON")


def test_sample_passes_conformance(sample_build):
    r = _conformance_cli("--device", "custom_cpu", env=dict(CLEAN_ENV, OAR_PLUGIN_PATH=sample_build))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "(plugin custom_cpu) CONFORMS" in r.stdout
    # Everything ran: the sample has in-process collectives and a profiler.
    assert re.search(r"\d+ passed, 0 failed, 0 skipped", r.stdout), r.stdout


@pytest.mark.parametrize("transport", ["", "store"])
def test_sample_collectives_in_process_and_through_the_store(sample_build, transport):
    """CUSTOM_CPU_COLLECTIVE_TRANSPORT=store: the sample's collectives go through the core's key-value store."""
    _collective_checks_pass("custom_cpu", dict(CLEAN_ENV, OAR_PLUGIN_PATH=sample_build,
                                               CUSTOM_CPU_COLLECTIVE_TRANSPORT=transport))


def test_sample_store_transport_names_both_calls_when_ranks_disagree(sample_build):
    code = ("import numpy as np, oar\n"
            "xs = [np.arange(4, dtype='float32')] * 2\n"
            "try:\n"
            "    oar._C._kit_run_collective('custom_cpu', 'all_reduce', xs, 0, ['all_reduce', 'all_gather'])\n"
            "except Exception as e:\n"
            "    print('ERROR', e)\n")
    env = dict(CLEAN_ENV, OAR_PLUGIN_PATH=sample_build, CUSTOM_CPU_COLLECTIVE_TRANSPORT="store")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd="/", timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ERROR" in r.stdout and "the ranks disagree at call 0" in r.stdout, r.stdout + r.stderr
    assert "rank 0 called all_reduce(count 4, float32" in r.stdout, r.stdout
    assert "rank 1 called all_gather(count 4, float32" in r.stdout, r.stdout


def test_oot_sample_conforms_and_skips_what_it_lacks(tmp_path):
    """samples/oot_plugin (synchronous streams, one device, one kernel, no collectives, no profiler) passes
    too; what it does not implement is skipped with the reason."""
    need_tools("cmake", "c++")
    build = str(tmp_path / "oot")
    for cmd in (["cmake", "-S", os.path.join(ROOT, "samples", "oot_plugin"), "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                 "-Doar_DIR=" + sc.get_cmake_dir()], ["cmake", "--build", build, "-j", "2"]):
        r = subprocess.run(cmd, capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr
    r = _conformance_cli("--device", "oot", env=dict(CLEAN_ENV, OAR_PLUGIN_PATH=build))
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert "(plugin oot) CONFORMS" in out
    assert "SKIP collectives.all_reduce" in out and "plugin oot registers no collectives (no collective table)" in out
    assert "SKIP profiler.trace_events" in out and "plugin oot has no profiler table" in out
    assert "SKIP memory.across_devices" in out and "one device only" in out


def test_sample_own_tests(sample_build):
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", os.path.join(SAMPLE, "tests")],
                       capture_output=True, text=True, env=dict(CLEAN_ENV, OAR_PLUGIN_PATH=sample_build), cwd="/")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "5 passed" in r.stdout


def test_sample_loaded_late_conforms_and_exits_cleanly(sample_build):
    """Loaded after `import oar` (as an entry point does, oar._C.load_plugin here), the plugin's statics are
    destroyed before the core's: the suite's lifecycle check runs a fresh process that loads it the same way and must
    exit with status 0 (the sample once aborted at exit in exactly this order)."""
    code = ("import oar\n"
            "rec = oar._C.load_plugin({!r})\n"
            "assert rec.loaded, rec.reason\n"
            "from oar.testing import plugin_conformance as pc\n"
            "rep = pc.run('custom_cpu', ['lifecycle', 'kernels.matmul', 'streams'])\n"
            "print(rep.format())\n").format(os.path.join(sample_build, "liboar_plugin_custom_cpu.so"))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=CLEAN_ENV, cwd="/")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "8 passed, 0 failed, 0 skipped" in r.stdout, r.stdout  # streams.graph_capture too (SDK streams)


def test_broken_kernel_fails_the_suite_with_a_readable_report(faulty_build):
    """A suite that cannot fail is a defect: with `add` off by one the CLI exits 1 and says what broke."""
    r = _conformance_cli("--device", "custom_cpu", env=dict(CLEAN_ENV, OAR_PLUGIN_PATH=faulty_build))
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout
    assert "(plugin custom_cpu) DOES NOT CONFORM" in out
    # The failing kernel checks name the op, dtype, case and the first differing element.
    m = re.search(r"^FAIL kernels\.add\.float32 .*\n\s+AssertionError: (.*)$", out, re.M)
    assert m, out
    assert "add[same shape] float32 inputs [(3, 4), (3, 4)] vs CPU" in m.group(1)
    assert "elements differ" in m.group(1) and "got " in m.group(1)
    assert "FAIL kernels.add.float64" in out
    # A stream wait that does not wait is caught by the producer/consumer check (stale values).
    m = re.search(r"^FAIL streams\.events_across_streams .*\n\s+AssertionError: (.*)$", out, re.M)
    assert m and "ordered after its producer through an event" in m.group(1), out
    # The profiler that calls trace_event without checking for it crashes under an ABI 1.0 core.
    m = re.search(r"^FAIL abi\.older_core .*\n\s+AssertionError: (.*)$", out, re.M)
    assert m and "under an ABI 1.0 core the process exited with status" in m.group(1), out
    # Kernels the fault does not touch still pass.
    assert "FAIL kernels.matmul" not in out and "FAIL kernels.multiply" not in out
    # The same through the library.
    code = ("from oar.testing import plugin_conformance as pc\n"
            "rep = pc.run('custom_cpu', ['kernels.add.float32', 'kernels.multiply.float32'])\n"
            "print(rep.ok, sorted((r.name, r.status) for r in rep.results))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(CLEAN_ENV, OAR_PLUGIN_PATH=faulty_build), cwd="/")
    assert r.returncode == 0, r.stderr
    assert "False [('kernels.add.float32', 'FAIL'), ('kernels.multiply.float32', 'PASS')]" in r.stdout


def test_plugin_errors_reach_python_with_the_plugins_message(faulty_build):
    """Issue 6 item 4 for plugins: an error a plugin returns from a copy or a kernel, and its out-of-memory
    refusal, become Python exceptions naming the plugin and carrying its message; the device keeps working."""
    code = r"""
import numpy as np, oar
def attempt(what, fn):
    try:
        fn()
        print(what, "NO ERROR")
    except Exception as e:
        print(what, type(e).__name__, "|", str(e).splitlines()[0])
attempt("h2d", lambda: oar.to_tensor(np.ones(1013, "float32"), place="custom_cpu:0"))
big = oar.to_tensor(np.ones(1014, "float32"), place="custom_cpu:0")
attempt("d2h", lambda: big[:1013].numpy())
attempt("kernel", lambda: oar.nn.functional.relu(oar.to_tensor(np.ones(1019, "float32"), place="custom_cpu:1")).numpy())
hold = oar.to_tensor(np.ones(5 << 18, "float32"), place="custom_cpu:0")  # 5 of the device's 8 MiB
attempt("oom", lambda: oar.to_tensor(np.ones(5 << 18, "float32"), place="custom_cpu:0"))
del hold
attempt("oom_total", lambda: oar.to_tensor(np.ones(3 << 20, "float32"), place="custom_cpu:0"))
x = oar.to_tensor(np.arange(6, dtype="float32"), place="custom_cpu:0")
print("AFTER", (x * x).numpy().tolist())
"""
    env = dict(CLEAN_ENV, OAR_PLUGIN_PATH=faulty_build, CUSTOM_CPU_MEMORY_MB="8")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd="/")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    # Each message starts with Paddle's error class word (decision 98), then the plugin's own text.
    assert ("h2d RuntimeError | (External) plugin custom_cpu: memcpy host to device: custom_cpu: injected copy "
            "failure (4052 bytes)") in out, out
    assert ("d2h RuntimeError | (External) plugin custom_cpu: memcpy device to host: custom_cpu: injected copy "
            "failure (4052 bytes)") in out, out
    assert ("kernel ValueError | (InvalidArgument) plugin custom_cpu: relu: custom_cpu: relu: injected kernel "
            "failure") in out, out
    m = re.search(r"^oom MemoryError \| (.*)$", out, re.M)
    assert m, out
    assert "plugin custom_cpu: OutOfMemory: custom_cpu: out of device memory on device 0" in m.group(1)
    assert "CUSTOM_CPU_MEMORY_MB sets the size" in m.group(1)
    # More than the device's total memory is refused by the core before the plugin is asked.
    assert ("oom_total MemoryError | (ResourceExhausted) allocate: a float32 tensor of shape [3145728] needs 12582912 bytes, but "
            "custom_cpu:0 has 8388608 bytes of memory") in out, out
    assert "AFTER [0.0, 1.0, 4.0, 9.0, 16.0, 25.0]" in out


# ---- the guide, followed literally in a fresh virtual environment ---------------------------------------

_BEGIN = "<!-- begin walkthrough: run by tests/python/test_plugin_kit.py -->"
_END = "<!-- end walkthrough -->"


def guide_walkthrough():
    """The shell commands of the guide's walkthrough block (comments and blank lines dropped)."""
    text = open(GUIDE).read()
    assert _BEGIN in text and _END in text, "docs/plugin_guide.md lost its walkthrough markers"
    block = text.split(_BEGIN, 1)[1].split(_END, 1)[0]
    m = re.search(r"```sh\n(.*?)```", block, re.S)
    assert m, "no ```sh block inside the walkthrough markers"
    return [line for line in m.group(1).splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_guide_walkthrough_is_what_the_venv_test_runs():
    cmds = guide_walkthrough()
    assert cmds[0].startswith("cp -r \"$OAR_SRC/samples/custom_device\"")
    assert any("python -m oar.testing.plugin_conformance --device custom_cpu" in c for c in cmds)
    assert any(c.startswith("pip wheel") for c in cmds) and any(c.startswith("pip install") for c in cmds)


@pytest.mark.slow
def test_guide_walkthrough_in_a_fresh_venv(tmp_path, tmp_path_factory):
    """The vendor's path: a venv with the core wheel only; the guide's commands copy the sample, build its
    wheel against the venv's installed SDK, install it, and run the conformance suite and the sample's
    tests, with no environment variable pointing at the plugin."""
    need_tools("cmake", "c++", "bash")
    core = core_wheel(tmp_path_factory)
    venv = Venv(tmp_path / "venv")
    venv.pip_install(core)
    work = tmp_path / "work"
    work.mkdir()
    script = "set -ex\n" + "\n".join(guide_walkthrough()) + "\n"
    env = dict(venv.env, PATH=os.path.join(venv.path, "bin") + os.pathsep + venv.env.get("PATH", ""),
               VIRTUAL_ENV=venv.path, OAR_SRC=ROOT, CMAKE_BUILD_PARALLEL_LEVEL="2")
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, cwd=str(work), timeout=600)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "'custom_cpu:0', 'custom_cpu:1'" in r.stdout
    assert "(plugin custom_cpu) CONFORMS" in r.stdout
    assert "5 passed" in r.stdout
    # The plugin came from the wheel inside the venv, through the entry point.
    r = venv.run("""
        import oar
        print("REC", [r.path for r in oar._C.plugin_records() if r.loaded and r.device_type == "custom_cpu"])
    """)
    assert r.returncode == 0, r.stderr
    site = venv.site_packages()
    assert "REC ['{}/oar_custom_device/liboar_plugin_custom_cpu.so']".format(site) in r.stdout


# ---- the guide's Python usage block, run against sim ------------------------------------------------------

_PY_BEGIN = "<!-- begin python usage: run by tests/python/test_plugin_kit.py with mydev replaced by sim -->"
_PY_END = "<!-- end python usage -->"


def guide_python_usage():
    """The guide's Python block on using a new device (section 12), for device type `mydev`."""
    text = open(GUIDE).read()
    assert _PY_BEGIN in text and _PY_END in text, "docs/plugin_guide.md lost its python usage markers"
    m = re.search(r"```python\n(.*?)```", text.split(_PY_BEGIN, 1)[1].split(_PY_END, 1)[0], re.S)
    assert m, "no ```python block inside the python usage markers"
    return m.group(1)


def test_guide_python_usage_runs_on_sim():
    """Every line of the guide's section on tensors on the new device runs, with sim as the new device:
    placement by to_tensor/to/set_device, ops and gradients there, fallback counts, and back to the host."""
    if not _has_sim():
        pytest.skip("no sim plugin installed")
    code = guide_python_usage()
    assert "mydev" in code and "sim" not in code
    r = subprocess.run([sys.executable, "-c", code.replace("mydev", "sim")], capture_output=True, text=True,
                       env=CLEAN_ENV, cwd="/", timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert "'sim:0'" in lines[0], r.stdout
    counts = eval(lines[1])  # the printed fallback counts: {(op, device type, dtype): calls}
    assert isinstance(counts, dict) and all(dev == "sim" for _, dev, _ in counts), r.stdout
