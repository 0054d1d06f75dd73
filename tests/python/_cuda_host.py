"""Building the gpu plugin's host harnesses (tests/cuda_host/*.cc: the plugin's kernels under the block
emulator, compiled by a plain C++ compiler against the CUDA headers), shared by test_cuda_own_kernels_host.py
and test_cuda_batch_norm_host.py."""
import os
import shutil
import subprocess

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _cuda_include():
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    inc = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))), "include")
    return inc if os.path.exists(os.path.join(inc, "cuda_fp16.h")) else None


CUDA_INC = _cuda_include()
CXX = shutil.which("g++") or shutil.which("c++")
MISSING = "no CUDA headers or C++ compiler: the gpu plugin's kernels are not built here"
AVAILABLE = CUDA_INC is not None and CXX is not None

# AddressSanitizer (and UBSan): a read or write outside a tensor is an error even where it would land in
# other host memory (about 4x slower, so tests run few cases with it).
SANITIZE = ["-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"]

# The harness's dtype codes (OarDType).
DT = dict(float16=6, bfloat16=7, float32=8, float64=9)


def build(out_dir, name, source, flags):
    """Compiles tests/cuda_host/<source> into out_dir/name; returns (path, CompletedProcess)."""
    exe = os.path.join(str(out_dir), name)
    inc = ["sdk/include", "device_api/include", "plugins/cuda", "tests/cuda_host"]
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    cmd = [CXX, "-std=c++17", "-O1"] + flags + [
        "-x", "c++", os.path.join(ROOT, "tests", "cuda_host", source), "-o", exe, "-I" + CUDA_INC]
    r = subprocess.run(cmd + ["-I" + os.path.join(ROOT, i) for i in inc], capture_output=True, text=True,
                       timeout=600, env=env)
    return exe, r


def run(exe, text, timeout=120):
    """Runs a harness with `text` on stdin: (returncode, stdout, stderr)."""
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
    env.pop("LD_PRELOAD", None)
    r = subprocess.run([exe], input=text, capture_output=True, text=True, timeout=timeout, env=env)
    return r.returncode, r.stdout, r.stderr
