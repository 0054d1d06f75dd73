"""Custom C++ ops end to end, as a user builds and uses them (issue 6 item 2; docs/custom_op.md "Building
and loading"; samples/custom_op/README.md): the core wheel installed into a fresh virtual environment, the
sample copied out of the tree, built with oar.utils.cpp_extension.load (JIT, cached) and with its setup.py,
then used in dygraph (forward and backward against numpy, on cpu and sim), under to_static, saved with
jit.save and reloaded with jit.load, run by the inference predictor, and in a static program. Also the
build cache (a second load does not compile; a change rebuilds), two processes building at once, compile
errors, and CUDA sources.

One virtual environment per module (the `user` fixture); the sim plugin of the oar running the tests is
put on the environment's OAR_PLUGIN_PATH so the ops are also checked on sim:0."""
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import oar
from _venv import CLEAN_ENV, ROOT, Venv, core_wheel, need_tools

SAMPLE = os.path.join(ROOT, "samples", "custom_op")
JIT_NAME = "custom_jit_ops"

# Measured numbers, printed at the end of the module (pytest -s shows them).
TIMES = {}


def _sim_plugin():
    for r in oar._C.plugin_records():
        if r.loaded and r.device_type == "sim":
            return r.path
    return None


def _copy_sample(dest):
    shutil.copytree(SAMPLE, str(dest), ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    return str(dest)


class User:
    """A user's machine: a virtual environment with the core wheel, a copy of samples/custom_op, an
    extension cache folder of its own."""

    def __init__(self, base, core):
        self.base = str(base)
        self.venv = Venv(base / "venv")
        self.venv.pip_install(core)
        plugins = base / "plugins"
        plugins.mkdir()
        sim = _sim_plugin()
        if sim:
            shutil.copy(sim, str(plugins / os.path.basename(sim)))
        self.has_sim = sim is not None
        self.sample = _copy_sample(base / "custom_op")
        self.cache = str(base / "cache")
        # OAR_SAMPLE_CUDA=0: the sample's .cu part is built by its own test only (nvcc is slow).
        self.env = {"OAR_EXTENSION_DIR": self.cache, "OAR_PLUGIN_PATH": str(plugins), "OAR_SAMPLE_CUDA": "0"}

    def run(self, code, cwd=None, env=None, ok=True):
        e = dict(self.env)
        e.update(env or {})
        r = self.venv.run(code, cwd=cwd or self.sample, env=e)
        if ok:
            assert r.returncode == 0, r.stdout + r.stderr
        return r

    def shell(self, cmd, cwd=None, env=None):
        """One command line from the README, with the environment's python first on the PATH."""
        e = dict(self.venv.env)
        e.update(self.env)
        e.update(env or {})
        e["PATH"] = os.path.join(self.venv.path, "bin") + os.pathsep + e.get("PATH", "")
        e["VIRTUAL_ENV"] = self.venv.path
        r = subprocess.run(cmd, shell=True, cwd=cwd or self.sample, env=e, capture_output=True, text=True)
        assert r.returncode == 0, "$ {}\n{}{}".format(cmd, r.stdout, r.stderr)
        return r


@pytest.fixture(scope="module")
def user(tmp_path_factory):
    need_tools("c++")
    core = core_wheel(tmp_path_factory)
    return User(tmp_path_factory.mktemp("custom_op_user"), core)


@pytest.fixture(scope="module")
def built(user):
    """`python use_load.py` once: the first load compiles the sample (timed) and checks it on every device."""
    t = time.time()
    r = user.shell("python use_load.py")
    TIMES["load: first call (compile + checks)"] = time.time() - t
    return r.stdout + r.stderr


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    if TIMES:
        sys.stdout.write("\ncustom op e2e timings: " + ", ".join("{} {:.2f} s".format(k, v) for k, v in TIMES.items())
                         + "\n")


# A script that uses the sample's JIT-built ops (the import finds use_load.py in the sample folder).
USE = """
import numpy as np, oar
from use_load import ops
"""


# ---- load: compile on first use, the cache ----------------------------------------------------------------

def test_use_load_builds_and_checks_on_every_device(user, built):
    assert "building extension '{}'".format(JIT_NAME) in built
    # The compile command: oar's flags and the SDK of the environment's oar (not the source tree's).
    site = user.venv.site_packages()
    cmd = [l for l in built.splitlines() if "relu_op.cc -o" in l]
    assert cmd, built
    assert "-std=c++17 -fPIC -O2 -fvisibility=hidden" in cmd[0]
    assert "-I" + os.path.join(site, "oar", "include") in cmd[0]
    assert "-Wall" in cmd[0]  # extra_cxx_cflags
    assert "custom_relu on cpu: forward and backward match numpy" in built
    assert "custom_linear on cpu: forward and backward match numpy" in built
    if user.has_sim:
        assert "custom_relu on sim:0: forward and backward match numpy" in built
        assert "custom_linear on sim:0: forward and backward match numpy" in built
    lib = os.path.join(user.cache, JIT_NAME, JIT_NAME + ".so")
    assert os.path.isfile(lib)
    if shutil.which("readelf"):
        # Built against the headers only: no liboar_core. -fvisibility=hidden: the init symbol is exported,
        # the op's own functions and oar:: helpers are not (libstdc++'s templates keep their default).
        assert "liboar_core" not in subprocess.run(["readelf", "-d", lib], capture_output=True, text=True).stdout
        syms = subprocess.run(["readelf", "--dyn-syms", "-W", lib], capture_output=True, text=True).stdout
        defined = [l.split()[-1] for l in syms.splitlines() if " DEFAULT " in l and " UND " not in l]
        assert "oar_custom_op_init" in defined, defined
        ours = [d for d in defined if d.startswith(("_ZN3oar", "_ZNK3oar")) or "Relu" in d or "Linear" in d]
        assert not ours, ours


def test_second_load_uses_the_cache(user, built):
    lib = os.path.join(user.cache, JIT_NAME, JIT_NAME + ".so")
    before = os.stat(lib).st_mtime_ns
    t = time.time()
    r = user.run(USE + "print('RELU', ops.custom_relu(oar.to_tensor([-1.0, 2.0])).numpy().tolist())")
    TIMES["load: cache hit (new process, import oar + load)"] = time.time() - t
    out = r.stdout
    assert "extension '{}' is up to date".format(JIT_NAME) in out
    assert "building" not in out and "c++" not in out
    assert "RELU [0.0, 2.0]" in out
    assert os.stat(lib).st_mtime_ns == before
    # Inside one process a second load() returns the same module at once.
    r = user.run(USE + textwrap.dedent("""
        import time
        from oar.utils.cpp_extension import load
        t = time.time()
        again = load(name="custom_jit_ops", sources=["relu_op.cc", "custom_linear.cc"], extra_cxx_cflags=["-Wall"])
        print("SAME", again is ops, "SECONDS", time.time() - t)
    """))
    assert "SAME True" in r.stdout
    TIMES["load: cache hit (same process)"] = float(re.search(r"SECONDS (\S+)", r.stdout).group(1))


@pytest.mark.slow
def test_load_rebuilds_when_sources_or_flags_change(user, tmp_path):
    src = tmp_path / "relu_op.cc"
    shutil.copy(os.path.join(user.sample, "relu_op.cc"), str(src))
    cache = str(tmp_path / "cache")
    lib = os.path.join(cache, "relu_only", "relu_only.so")
    code = USE.replace("from use_load import ops", "") + textwrap.dedent("""
        from oar.utils.cpp_extension import load
        ops = load(name="relu_only", sources=[{src!r}], build_directory={cache!r}, verbose=True,
                   extra_cxx_cflags=FLAGS)
        print("RELU", ops.custom_relu(oar.to_tensor([-3.0, 4.0])).numpy().tolist())
    """).format(src=str(src), cache=cache)

    def step(flags=None, prelude=""):
        r = user.run(prelude + code.replace("FLAGS", repr(flags)))
        assert "RELU [0.0, 4.0]" in r.stdout
        return "building extension 'relu_only'" in r.stdout, os.stat(lib).st_mtime_ns

    built1, m1 = step()
    assert built1
    built2, m2 = step()
    assert not built2 and m2 == m1
    time.sleep(0.01)
    src.write_text(src.read_text() + "\n// an edit\n")  # any change of the source text
    built3, m3 = step()
    assert built3 and m3 != m2
    built4, m4 = step(["-DSOME_FLAG=1"])  # other flags
    assert built4 and m4 != m3
    built5, m5 = step(["-DSOME_FLAG=1"])
    assert not built5 and m5 == m4
    # Another oar version (as after an upgrade) rebuilds too.
    built6, m6 = step(["-DSOME_FLAG=1"], prelude="import oar\noar.__version__ = '99.0.0'\n")
    assert built6 and m6 != m5


@pytest.mark.slow
def test_two_processes_loading_at_once_build_once(user, tmp_path):
    """The file lock: both processes get the ops; only one compiles, the other finds its result."""
    cache = str(tmp_path / "cache")
    code = USE.replace("from use_load import ops", "") + textwrap.dedent("""
        from oar.utils.cpp_extension import load
        ops = load(name="raced", sources=["relu_op.cc"], build_directory={cache!r}, verbose=True)
        print("RELU", ops.custom_relu(oar.to_tensor([-3.0, 4.0])).numpy().tolist())
    """).format(cache=cache)
    e = dict(user.venv.env)
    e.update(user.env)
    procs = [subprocess.Popen([user.venv.python, "-c", code], cwd=user.sample, env=e, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for _ in range(2)]
    outs = [p.communicate()[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert all("RELU [0.0, 4.0]" in o for o in outs), outs
    assert sum("building extension 'raced'" in o for o in outs) == 1, outs
    assert sum("extension 'raced' is up to date" in o for o in outs) == 1, outs


def test_compile_error_carries_the_compiler_message(user, tmp_path):
    bad = tmp_path / "broken_op.cc"
    bad.write_text('#include "paddle/extension.h"\nstd::vector<paddle::Tensor> F(const paddle::Tensor& x) {\n'
                   '  return {x.no_such_method()};\n}\n')
    r = user.run(textwrap.dedent("""
        from oar.utils.cpp_extension import load, BuildError
        try:
            load(name="broken", sources=[{bad!r}], build_directory={cache!r})
        except BuildError as e:
            print("TYPE", type(e).__name__, isinstance(e, RuntimeError))
            print("MESSAGE", e)
            print("OUTPUT-IN-MESSAGE", e.output.strip() in str(e))
    """).format(bad=str(bad), cache=str(tmp_path / "cache")))
    out = r.stdout
    assert "TYPE BuildError True" in out
    assert "extension 'broken': compiling {} failed".format(bad) in out
    assert "broken_op.cc:3" in out and "no_such_method" in out and "error" in out
    assert "OUTPUT-IN-MESSAGE True" in out
    assert not os.path.exists(os.path.join(str(tmp_path / "cache"), "broken", "broken.so"))
    # A link error: relu_op.cc told it has a CUDA part (PADDLE_WITH_CUDA) without relu_op.cu is refused
    # at link time, naming the missing function, not when the library is loaded.
    r = user.run(textwrap.dedent("""
        from oar.utils.cpp_extension import load, BuildError
        try:
            load(name="half", sources=["relu_op.cc"], extra_cxx_cflags=["-DPADDLE_WITH_CUDA"],
                 build_directory={cache!r})
        except BuildError as e:
            print("MESSAGE", e)
    """).format(cache=str(tmp_path / "cache")))
    assert "extension 'half': linking failed" in r.stdout, r.stdout
    assert "undefined reference" in r.stdout and "relu_cuda_forward" in r.stdout


def test_cuda_source_without_nvcc_is_a_clear_error(tmp_path, monkeypatch):
    import oar.utils.cpp_extension as ce
    try:
        oar.sysconfig.get_include()
    except FileNotFoundError:
        pytest.skip("this oar has no SDK (not installed from a wheel)")
    cu = tmp_path / "k.cu"
    cu.write_text("__global__ void k() {}\n")
    monkeypatch.setattr(ce, "_find_nvcc", lambda: None)
    with pytest.raises(RuntimeError, match=r"extension 'needs_cuda': k.cu is CUDA source but nvcc was not found"):
        ce.load("needs_cuda", [str(cu)], build_directory=str(tmp_path / "cache"))
    assert ce.CUDA_HOME is None
    with pytest.raises(FileNotFoundError, match="source file .*missing.cc does not exist"):
        ce.load("missing", [str(tmp_path / "missing.cc")], build_directory=str(tmp_path / "cache"))
    with pytest.raises(ValueError, match="extension name must be"):
        ce.load("no-dashes", [str(cu)], build_directory=str(tmp_path / "cache"))


def test_build_directory_environment_variables(tmp_path, monkeypatch):
    from oar.utils.cpp_extension import get_build_directory
    monkeypatch.delenv("OAR_EXTENSION_DIR", raising=False)
    monkeypatch.setenv("PADDLE_EXTENSION_DIR", str(tmp_path / "paddle"))
    assert get_build_directory() == str(tmp_path / "paddle") and os.path.isdir(str(tmp_path / "paddle"))
    monkeypatch.setenv("OAR_EXTENSION_DIR", str(tmp_path / "oar"))
    assert get_build_directory() == str(tmp_path / "oar")
    monkeypatch.delenv("OAR_EXTENSION_DIR")
    monkeypatch.delenv("PADDLE_EXTENSION_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert get_build_directory() == str(tmp_path / "home" / ".cache" / "oar_extensions")


@pytest.mark.slow
def test_cuda_source_is_compiled_with_nvcc(user, tmp_path):
    ce = pytest.importorskip("oar.utils.cpp_extension")
    if ce._find_nvcc() is None:
        pytest.skip("nvcc not found")
    r = user.run(textwrap.dedent("""
        import numpy as np, oar
        from oar.utils.cpp_extension import load
        ops = load(name="relu_cuda", sources=["relu_op.cc", "relu_op.cu"], build_directory={cache!r}, verbose=True)
        print("RELU", ops.custom_relu(oar.to_tensor([-3.0, 4.0])).numpy().tolist())
    """).format(cache=str(tmp_path / "cache")))
    nvcc = [l for l in r.stdout.splitlines() if "nvcc -c" in l and "relu_op.cu" in l]
    assert nvcc and "-DPADDLE_WITH_CUDA" in nvcc[0], r.stdout
    cxx = [l for l in r.stdout.splitlines() if "relu_op.cc -o" in l]
    assert cxx and "-DPADDLE_WITH_CUDA" in cxx[0]
    assert "-lcudart" in r.stdout
    assert "RELU [0.0, 4.0]" in r.stdout  # the CPU path of the same library


# ---- the ops: dygraph, to_static, jit.save / jit.load, predictor, static programs ---------------------------

def test_forward_backward_against_numpy(user, built):
    places = ["cpu"] + (["sim:0"] if user.has_sim else [])
    r = user.run(USE + textwrap.dedent("""
        from use_load import check, relu_reference
        for place in {places!r}:
            check(place)
            # float64, and a result used by further oar ops before backward
            x_np = np.linspace(-2, 2, 12).reshape(3, 4)
            x = oar.to_tensor(x_np, place=place, stop_gradient=False)
            y = ops.custom_relu(x)
            assert y.dtype == oar.float64 and y.shape == [3, 4], (y.dtype, y.shape)
            (y * y).sum().backward()
            np.testing.assert_allclose(x.grad.numpy(), 2 * np.maximum(x_np, 0))
            print("FLOAT64 OK", place)
    """).format(places=places))
    for p in places:
        assert "custom_relu on {}: forward and backward match numpy".format(p) in r.stdout
        assert "FLOAT64 OK " + p in r.stdout


NET = USE + """
class Net(oar.nn.Layer):
    def __init__(self):
        super().__init__()
        self.w = self.create_parameter([8, 3])
        self.b = self.create_parameter([3], is_bias=True)

    def forward(self, x):
        return ops.custom_linear(ops.custom_relu(x), self.w, self.b, 0.5, "relu")

oar.seed(1)
net = Net()
x_np = np.random.default_rng(0).standard_normal((4, 8)).astype("float32")
"""


def test_to_static_jit_save_and_load(user, built, tmp_path):
    path = str(tmp_path / "model" / "net")
    r = user.run(NET + textwrap.dedent("""
        x = oar.to_tensor(x_np)
        eager = net(x)
        eager.sum().backward()
        eager_grad = net.w.grad.numpy().copy()
        net.clear_gradients()
        static_net = oar.jit.to_static(net, input_spec=[oar.static.InputSpec([None, 8], "float32", "x")])
        out = static_net(x)
        np.testing.assert_allclose(out.numpy(), eager.numpy(), rtol=1e-6)
        out.sum().backward()
        np.testing.assert_allclose(net.w.grad.numpy(), eager_grad, rtol=1e-6)
        print("TO_STATIC OK")
        oar.jit.save(static_net, {path!r})
        np.save({path!r} + ".expected.npy", eager.numpy())
    """).format(path=path))
    assert "TO_STATIC OK" in r.stdout
    model = open(path + ".pdmodel", "rb").read()
    # Saved under the custom ops' own types, as Paddle saves custom ops.
    assert b"custom_relu" in model and b"custom_linear" in model
    # A new process: the ops' library is loaded (by load), then the saved program runs.
    r = user.run(USE + textwrap.dedent("""
        loaded = oar.jit.load({path!r})
        x_np = np.random.default_rng(0).standard_normal((4, 8)).astype("float32")
        out = loaded(oar.to_tensor(x_np))
        np.testing.assert_allclose(out.numpy(), np.load({path!r} + ".expected.npy"), rtol=1e-6)
        print("JIT_LOAD OK")
    """).format(path=path))
    assert "JIT_LOAD OK" in r.stdout


def test_predictor_runs_the_saved_custom_ops(user, built, tmp_path):
    path = str(tmp_path / "net")
    user.run(NET + textwrap.dedent("""
        static_net = oar.jit.to_static(net, input_spec=[oar.static.InputSpec([None, 8], "float32", "x")])
        oar.jit.save(static_net, {path!r})
        np.save({path!r} + ".expected.npy", net(oar.to_tensor(x_np)).numpy())
    """).format(path=path))
    lib = os.path.join(user.cache, JIT_NAME, JIT_NAME + ".so")
    # A process that never loads the ops from Python: the predictor finds the library through
    # OAR_CUSTOM_OP_LIBS (the C++ Config::LoadCustomOpLibrary does the same from code).
    r = user.run(textwrap.dedent("""
        import numpy as np, oar.inference as inference
        config = inference.Config({path!r} + ".pdmodel", {path!r} + ".pdiparams")
        predictor = inference.create_predictor(config)
        h = predictor.get_input_handle(predictor.get_input_names()[0])
        x_np = np.random.default_rng(0).standard_normal((4, 8)).astype("float32")
        h.reshape([4, 8])
        h.copy_from_cpu(x_np)
        predictor.run()
        out = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()
        np.testing.assert_allclose(out, np.load({path!r} + ".expected.npy"), rtol=1e-6)
        print("PREDICTOR OK")
    """).format(path=path), env={"OAR_CUSTOM_OP_LIBS": lib})
    assert "PREDICTOR OK" in r.stdout
    # Without the library the predictor names the missing op type.
    r = user.run(textwrap.dedent("""
        import oar.inference as inference
        inference.create_predictor(inference.Config({path!r} + ".pdmodel", {path!r} + ".pdiparams"))
    """).format(path=path), ok=False)
    assert r.returncode != 0 and "custom_relu" in r.stderr, r.stderr
    # ... and Config.load_custom_op_library gives it the library from code.
    r = user.run(textwrap.dedent("""
        import oar.inference as inference
        config = inference.Config({path!r} + ".pdmodel", {path!r} + ".pdiparams")
        config.load_custom_op_library({lib!r})
        assert config.custom_op_libraries() == [{lib!r}]
        inference.create_predictor(config)
        print("CONFIG LIB OK")
    """).format(path=path, lib=lib))
    assert "CONFIG LIB OK" in r.stdout


CPP_PREDICTOR = r"""
#include <oar/inference/predictor.h>
#include <cstdio>
#include <fstream>
#include <vector>
int main(int argc, char** argv) {  // model stem, custom op library, raw float32 input [4, 8]
  std::string stem = argv[1];
  oar_infer::Config config(stem + ".pdmodel", stem + ".pdiparams");
  config.LoadCustomOpLibrary(argv[2]);
  auto predictor = oar_infer::CreatePredictor(config);
  std::vector<float> x(4 * 8);
  std::ifstream(argv[3], std::ios::binary).read(reinterpret_cast<char*>(x.data()), x.size() * sizeof(float));
  auto in = predictor->GetInputHandle(predictor->GetInputNames()[0]);
  in->Reshape({4, 8});
  in->CopyFromCpu(x.data());
  predictor->Run();
  auto out = predictor->GetOutputHandle(predictor->GetOutputNames()[0]);
  std::vector<float> y(4 * 3);
  out->CopyToCpu(y.data());
  for (float v : y) std::printf("%.6g ", v);
  std::printf("\n");
}
"""


@pytest.mark.slow
def test_cpp_predictor_program_loads_the_custom_op_library(user, built, tmp_path):
    """A C++ program against the installed SDK (oar.sysconfig's flags) runs the saved model with
    Config::LoadCustomOpLibrary."""
    path = str(tmp_path / "net")
    r = user.run(NET + textwrap.dedent("""
        static_net = oar.jit.to_static(net, input_spec=[oar.static.InputSpec([None, 8], "float32", "x")])
        oar.jit.save(static_net, {path!r})
        x_np.tofile({path!r} + ".input.bin")
        np.save({path!r} + ".expected.npy", net(oar.to_tensor(x_np)).numpy())
        import oar.sysconfig as s
        print("FLAGS", " ".join(s.get_compile_flags()), "|", " ".join(s.get_link_flags()))
    """).format(path=path))
    flags = re.search(r"FLAGS (.*)", r.stdout).group(1)
    cflags, lflags = [f.split() for f in flags.split("|")]
    (tmp_path / "main.cc").write_text(CPP_PREDICTOR)
    exe = str(tmp_path / "predict")
    subprocess.run(["c++", *cflags, str(tmp_path / "main.cc"), "-o", exe, *lflags], check=True)
    lib = os.path.join(user.cache, JIT_NAME, JIT_NAME + ".so")
    r = subprocess.run([exe, path, lib, path + ".input.bin"], capture_output=True, text=True, env=CLEAN_ENV)
    assert r.returncode == 0, r.stdout + r.stderr
    got = np.array([float(v) for v in r.stdout.split()], dtype="float32").reshape(4, 3)
    np.testing.assert_allclose(got, np.load(path + ".expected.npy"), rtol=1e-5, atol=1e-6)


def test_static_program_with_executor(user, built):
    r = user.run(USE + textwrap.dedent("""
        oar.enable_static()
        main, startup = oar.static.Program(), oar.static.Program()
        with oar.static.program_guard(main, startup):
            x = oar.static.data("x", [None, 4], "float32")
            x.stop_gradient = False
            y = ops.custom_relu(x)
            loss = oar.sum(y * y)
            (dx,) = oar.static.gradients([loss], [x])
        types = [op.type for op in main.global_block().ops]
        print("TYPES", types)
        exe = oar.static.Executor(oar.CPUPlace())
        exe.run(startup)
        x_np = np.linspace(-1, 1, 8).astype("float32").reshape(2, 4)
        y_out, dx_out = exe.run(main, feed={"x": x_np}, fetch_list=[y, dx])
        np.testing.assert_allclose(y_out, np.maximum(x_np, 0))
        np.testing.assert_allclose(dx_out, 2 * np.maximum(x_np, 0))
        print("STATIC OK")
    """))
    assert "STATIC OK" in r.stdout
    assert "'custom_relu'" in r.stdout


# ---- setup.py: the installable package -------------------------------------------------------------------

def _readme_commands():
    """The shell block of samples/custom_op/README.md (the commands a user types), without comments."""
    text = open(os.path.join(SAMPLE, "README.md")).read()
    block = re.search(r"```sh\n(.*?)```", text, re.S).group(1)
    cmds = [l.split("  #")[0].strip() for l in block.splitlines()]
    return [c for c in cmds if c and not c.startswith("#")]


def test_readme_python_example(user, built):
    """The Python block of samples/custom_op/README.md, as written, in the sample's folder."""
    text = open(os.path.join(SAMPLE, "README.md")).read()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    r = user.run(code + "print('SHAPES', y.shape, z.shape, x.grad.shape)\n")
    assert "SHAPES [4, 8] [4, 3] [4, 8]" in r.stdout


IMPORT_SETUP_OPS = """
import numpy as np, oar, custom_setup_ops
print("FILE", custom_setup_ops.__file__)
print("OPS", sorted(custom_setup_ops.__all__))
print("RELU", custom_setup_ops.custom_relu(oar.to_tensor([-1.0, 2.0])).numpy().tolist())
x = oar.to_tensor(np.ones((2, 3), "float32"), stop_gradient=False)
w = oar.to_tensor(np.ones((3, 2), "float32"))
out = custom_setup_ops.custom_linear(x, w, oar.to_tensor(np.array([1.0, -10.0], "float32")), 2.0, "relu")
out.sum().backward()
print("LINEAR", out.numpy().tolist(), x.grad.numpy().tolist())
"""


def _check_setup_ops(out):
    assert "OPS ['custom_linear', 'custom_relu']" in out
    assert "RELU [0.0, 2.0]" in out
    assert "LINEAR [[7.0, 0.0], [7.0, 0.0]] [[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]]" in out


@pytest.mark.slow
@pytest.mark.slow
def test_docs_building_and_loading_examples_run_literally(user, built, tmp_path):
    """docs/custom_op.md "## Building and loading": its `load` example (x, w, b given) in the sample folder
    is the sample's own build (a cache hit), and its setup.py + shell commands build and install the
    package in a copy of the sample."""
    text = open(os.path.join(ROOT, "docs", "custom_op.md")).read()
    section = text[text.index("## Building and loading"):text.index("## The C++ predictor")]
    blocks = re.findall(r"```(python|sh)\n(.*?)```", section, re.S)
    load_example, setup_py, setup_sh = blocks[0][1], blocks[1][1], blocks[2][1]
    assert blocks[1][1].startswith("# setup.py") and blocks[2][0] == "sh"
    r = user.run("import numpy as np, oar\n"
                 "x = oar.to_tensor(np.array([[-1.0, 2.0]], 'float32'))\n"
                 "w = oar.to_tensor(np.ones((2, 1), 'float32'))\n"
                 "b = oar.to_tensor(np.zeros((1,), 'float32'))\n" + load_example +
                 "print('Y', y.numpy().tolist(), 'Z', z.numpy().tolist())\n")
    assert "extension 'custom_jit_ops' is up to date" in r.stdout  # the same build as use_load.py's
    assert "Y [[0.0, 2.0]] Z [[0.5]]" in r.stdout  # relu(0.5 * (-1 + 2) + 0)
    sample = _copy_sample(tmp_path / "custom_op")
    with open(os.path.join(sample, "setup.py"), "w") as f:
        f.write(setup_py)
    for cmd in setup_sh.splitlines():
        cmd = cmd.split("  #")[0].strip()
        if cmd:
            out = user.shell(cmd, cwd=sample).stdout
    assert "Tensor" in out and "[0., 2.]" in out, out


@pytest.mark.slow
def test_readme_commands_build_and_install_the_sample(user, tmp_path):
    """samples/custom_op/README.md followed literally in a fresh copy of the sample: its shell block runs in
    the environment (`python` is the environment's), then the installed package is imported from elsewhere."""
    sample = _copy_sample(tmp_path / "custom_op")
    cmds = _readme_commands()
    assert any("setup.py install" in c for c in cmds) and any("use_load.py" in c for c in cmds), cmds
    t = time.time()
    for cmd in cmds:
        if cmd.startswith("cd "):
            continue  # the copy of the sample is the current folder
        user.shell(cmd, cwd=sample, env={"OAR_EXTENSION_DIR": str(tmp_path / "cache")})
    TIMES["README commands (load + setup.py install)"] = time.time() - t
    r = user.run(IMPORT_SETUP_OPS, cwd="/")
    assert "FILE " + user.venv.path in r.stdout
    _check_setup_ops(r.stdout)


@pytest.mark.slow
def test_pip_install_of_the_sample(user, tmp_path, tmp_path_factory):
    """`pip install --no-build-isolation .` in a copy of the sample, in its own environment (setuptools
    needs the `wheel` package for it before setuptools 70.1)."""
    probe = user.run("import setuptools, importlib.util as u\n"
                     "print('BDIST_WHEEL', bool(u.find_spec('wheel')) or "
                     "tuple(int(p) for p in setuptools.__version__.split('.')[:2]) >= (70, 1))")
    if "BDIST_WHEEL True" not in probe.stdout:
        pytest.skip("setuptools cannot build wheels here: install the `wheel` package")
    sample = _copy_sample(tmp_path / "custom_op")
    venv = Venv(tmp_path / "venv")
    venv.pip_install(core_wheel(tmp_path_factory))
    r = subprocess.run([venv.python, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", "."],
                       cwd=sample, env=dict(venv.env, OAR_SAMPLE_CUDA="0"), capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    r = venv.run(IMPORT_SETUP_OPS, env=dict(user.env))
    assert r.returncode == 0, r.stderr
    assert "FILE " + venv.path in r.stdout
    _check_setup_ops(r.stdout)


def test_relu_sample_compiles_unchanged_with_paddle_headers():
    """The claim of samples/custom_op/relu_op.cc: the same file is a PaddlePaddle custom op source. Checked
    against the headers of the installed paddlepaddle wheel (OAR_PADDLE_PATH, as the round-trip tests)."""
    need_tools("c++")
    paddle_path = os.environ.get("OAR_PADDLE_PATH", "")
    inc = os.path.join(paddle_path, "paddle", "include")
    if not paddle_path or not os.path.isfile(os.path.join(inc, "paddle", "extension.h")):
        pytest.skip("OAR_PADDLE_PATH does not hold a paddlepaddle wheel with its headers")
    import sysconfig
    r = subprocess.run(["c++", "-std=c++17", "-fsyntax-only", "-I" + inc, "-I" + os.path.join(inc, "third_party"),
                        "-I" + sysconfig.get_paths()["include"], os.path.join(SAMPLE, "relu_op.cc")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.slow
def test_setup_builds_the_cuda_part_with_nvcc(user, tmp_path):
    """setup.py with nvcc present: CUDAExtension compiles relu_op.cu with nvcc and links cudart."""
    ce = pytest.importorskip("oar.utils.cpp_extension")
    if ce._find_nvcc() is None:
        pytest.skip("nvcc not found")
    sample = _copy_sample(tmp_path / "custom_op")
    r = user.shell("python setup.py build", cwd=sample, env={"OAR_SAMPLE_CUDA": "1"})
    assert re.search(r"nvcc -c \S*relu_op\.cu", r.stdout + r.stderr), r.stdout + r.stderr
    libs = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(sample, "build")) for f in fs
            if f == "libcustom_setup_ops.so"]
    assert len(libs) == 1, libs
    if shutil.which("readelf"):
        dyn = subprocess.run(["readelf", "-d", libs[0]], capture_output=True, text=True).stdout
        assert "libcudart" in dyn and "liboar_core" not in dyn
    r = user.run(textwrap.dedent("""
        import oar
        from oar.utils.cpp_extension import load_op_library
        ops = load_op_library({lib!r})
        print("RELU", ops.custom_relu(oar.to_tensor([-3.0, 4.0])).numpy().tolist())
    """).format(lib=libs[0]))
    assert "RELU [0.0, 4.0]" in r.stdout


@pytest.mark.slow
def test_paddle_style_setup_arguments(user, tmp_path):
    """What Paddle projects pass to setup: a list of extensions, extra_compile_args as {"cxx": [...]},
    define_macros, cmdclass={"build_ext": BuildExtension.with_options(...)}."""
    sample = _copy_sample(tmp_path / "custom_op")
    with open(os.path.join(sample, "setup.py"), "w") as f:
        f.write(textwrap.dedent("""
            from oar.utils.cpp_extension import BuildExtension, CppExtension, setup
            setup(name="paddle_style_ops",
                  ext_modules=[CppExtension(sources=["relu_op.cc"], extra_compile_args={"cxx": ["-DFROM_CXX_ARGS"]},
                                            define_macros=[("FROM_MACROS", "1")])],
                  cmdclass={"build_ext": BuildExtension.with_options(no_python_abi_suffix=True)})
        """))
    r = user.shell("python setup.py build", cwd=sample)
    out = r.stdout + r.stderr
    cmd = [l for l in out.splitlines() if "relu_op.cc -o" in l]
    assert cmd and "-DFROM_CXX_ARGS" in cmd[0] and "-DFROM_MACROS=1" in cmd[0], out
    libs = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(sample, "build")) for f in fs
            if f == "libpaddle_style_ops.so"]
    assert len(libs) == 1, libs
    r = user.run("import oar\nfrom oar.utils.cpp_extension import load_op_library\n"
                 "print('RELU', load_op_library({!r}).custom_relu(oar.to_tensor([-3.0, 4.0])).numpy().tolist())"
                 .format(libs[0]))
    assert "RELU [0.0, 4.0]" in r.stdout
