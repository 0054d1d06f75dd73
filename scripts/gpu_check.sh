#!/usr/bin/env bash
# Proves oar on a lent GPU machine in one call (docs/cuda.md, "Checking on a lent GPU"):
#
#   bash scripts/gpu_check.sh .gpu/bundle.tar.xz        # the bundle from scripts/gpu_bundle.sh
#
# That machine has Python 3.12 with PyTorch, numpy, pytest and pybind11, a C++ compiler and the CUDA
# libraries, but not our Debian libraries, and nothing can be fetched there. So this script unpacks the
# bundle to /tmp, compiles oar._C there for ITS python3, assembles an importable `oar` package (the wheel's
# layout: oar/_C*.so, oar/lib/liboar_core.so.0, oar/plugins/), and then runs, each step under `timeout`,
# going on after a failure, the cheapest and most important first:
#   env        nvidia-smi, versions, python -m oar.utils.doctor (the device's plugin must be loaded)
#   ops        the op suite (python -m oar.testing.ops) on the device, the CPU as the oracle; then
#              matmul and conv again on the plugin's own kernels (OAR_GPU_OWN_KERNELS=1)
#   train      LeNet, ResNet-18, a Transformer encoder for a few steps: loss, ms/step, CPU fallbacks
#   bench      tests/benchmarks/bench_gpu.py: matmul, conv, ResNet-50, eager overhead, beside PyTorch
#   conform    the plugin conformance suite (its kernels.* are the op suite: not repeated), the C++
#              conformance tests on the device, the CUDA plugin's own C++ test
#   pytest     the Python suites that take a device, on the device only
#   extra      with OAR_GPU_CHECK_EXTRA=script.sh: the caller's script, last (benchmarks, diagnostics)
# Results go to $OUT (at most 8 files, what the device tool brings back): summary.md, env.txt (the build's log
# first), ops.txt, train.txt, conformance.txt, pytest.txt, bench.json, and extra.txt with OAR_GPU_CHECK_EXTRA. The whole run keeps within OAR_GPU_CHECK_BUDGET seconds (default 450); a step
# gets what is left when its own limit would overrun it. Exit status: 0 when every step passed.
#
# A dry run here, without a GPU (the GPU-only parts skip or report what is missing):
#   OAR_GPU_CHECK_DEVICE=sim:0 OUT=/tmp/gpu_out bash scripts/gpu_check.sh .gpu/bundle.tar.xz
# Knobs: OAR_GPU_CHECK_DEVICE (gpu:0), OAR_GPU_CHECK_PYTHON (python3), OAR_GPU_CHECK_BUDGET (450),
#        OAR_GPU_CHECK_QUICK=1 (small sizes in train/bench, for CPU dry runs), CXX (c++),
#        OAR_GPU_CHECK_STEPS=env,ops,... (only those steps; the build always runs),
#        OAR_GPU_CHECK_EXTRA=script.sh (run last with OAR_ROOT, OAR_DEVICE and OAR_GPU_CHECK_DIR set; extra.txt),
#        OAR_GPU_CHECK_BUNDLED_LIBS=1 (use every bundled library, even where the machine has its own).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUNDLE=${1:-.gpu/bundle.tar.xz}
DEV=${OAR_GPU_CHECK_DEVICE:-gpu:0}
DEVTYPE=${DEV%%:*}
PY=${OAR_GPU_CHECK_PYTHON:-python3}
CXX=${CXX:-c++}
BUDGET=${OAR_GPU_CHECK_BUDGET:-450}
QUICK=${OAR_GPU_CHECK_QUICK:-0}
EXTRA=${OAR_GPU_CHECK_EXTRA:+$(realpath "$OAR_GPU_CHECK_EXTRA")}
ONLY=${OAR_GPU_CHECK_STEPS:-}  # e.g. "env,ops": only these steps (cxx_* belong to conformance)
OUT=${OUT:-/tmp/oar_gpu_check_out}
W=/tmp/oar_gpu_check
T0=$(date +%s)
DEADLINE=$((T0 + BUDGET))
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PYTHONFAULTHANDLER=1  # a crash prints the Python frames
mkdir -p "$OUT"

# ---- step bookkeeping -------------------------------------------------------------------------------------
STEPS=()     # "name|status|seconds|note" per step, for summary.md
FAILED=0
record() {  # name status seconds note
  STEPS+=("$1|$2|$3|$4")
  [ "$2" = PASS ] || FAILED=1
  echo "gpu_check: $1: $2 (${3}s) $4"
}
# run_step NAME LIMIT LOG CMD...: CMD under timeout (SIGINT first, so pytest and Python print what they
# have), its output appended to LOG; the status is PASS, FAIL (rc N), TIMEOUT or SKIPPED (out of time).
LAST_RC=0
run_step() {
  local name=$1 limit=$2 log=$3
  shift 3
  local group=$name
  case $name in cxx_*) group=conformance ;; exceptions_*) group=exceptions ;; ops_*) group=ops ;; esac
  if [ -n "$ONLY" ] && [[ ",$ONLY," != *",$group,"* ]]; then
    LAST_RC=125
    return
  fi
  local left=$((DEADLINE - $(date +%s) - 15))
  if [ "$left" -lt 10 ]; then
    record "$name" SKIPPED 0 "out of time (budget ${BUDGET}s)"
    LAST_RC=125
    return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  local t=$(date +%s)
  echo "### $name: $* (limit ${limit}s)" >>"$log"
  timeout -s INT -k 15 "$limit" "$@" >>"$log" 2>&1
  LAST_RC=$?
  local dt=$(($(date +%s) - t)) st=PASS note=""
  case $LAST_RC in
    0) ;;
    124 | 130 | 137) st=TIMEOUT note="killed after ${limit}s" ;;
    *) st=FAIL note="exit status $LAST_RC" ;;
  esac
  echo "### $name: $st ${dt}s $note" >>"$log"
  STEP_NOTE=$note STEP_STATUS=$st STEP_SECONDS=$dt
}
finish_step() {  # name [extra note]: records the last run_step's result
  [ "$LAST_RC" = 125 ] && return
  record "$1" "$STEP_STATUS" "$STEP_SECONDS" "${STEP_NOTE}${2:+ $2}"
}

# ---- unpack, choose libraries, compile oar._C --------------------------------------------------------------
# The build's log opens env.txt (the device tool brings back at most 8 files).
BUILDLOG=$OUT/env.txt
: >"$BUILDLOG"
build() {
  set -e
  rm -rf "$W"
  mkdir -p "$W/b" "$W/pkg" "$W/obj" "$W/deps"
  local t=$(date +%s)
  tar -xJf "$BUNDLE" -C "$W/b"
  echo "unpacked $BUNDLE in $(($(date +%s) - t))s"
  cat "$W/b/MANIFEST"
  local tree_hash
  tree_hash=$(cd "$ROOT" && find sdk/include framework/include device_api/include python/src -type f \
    \( -name '*.h' -o -name '*.cc' \) -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
  if ! grep -q "^src_hash $tree_hash\$" "$W/b/MANIFEST"; then
    echo "WARNING: the C++ sources of this tree ($tree_hash) differ from the bundle's: rerun scripts/gpu_bundle.sh"
  fi

  # The package, in the wheel's layout (python/CMakeLists.txt): Python sources from this tree.
  cp -r "$ROOT/python/oar" "$W/pkg/oar"
  rm -rf "$W/pkg/oar/lib" "$W/pkg/oar/plugins" "$W/pkg/oar"/_C*.so
  mkdir -p "$W/pkg/oar/lib" "$W/pkg/oar/plugins"
  cp "$W/b/lib/liboar_core.so.0" "$W/pkg/oar/lib/"
  cp "$W/b/plugins/"*.so "$W/pkg/oar/plugins/"

  # Bundled libraries: the machine's own copy of a soname wins (it is newer); ours fill the gaps. If the
  # result leaves anything unresolved (an older or odd system copy), use every bundled one instead.
  local f so
  for f in "$W/b/deps/"*; do
    so=$(basename "$f")
    if [ "${OAR_GPU_CHECK_BUNDLED_LIBS:-0}" != 1 ] && ldconfig -p 2>/dev/null | grep -q "^[[:space:]]*$so (.*x86-64"; then
      echo "library $so: the system's"
    else
      echo "library $so: bundled"
      ln -s "$f" "$W/deps/$so"
    fi
  done
  local check="ldd $W/pkg/oar/lib/liboar_core.so.0 $W/pkg/oar/plugins/*.so"
  if LD_LIBRARY_PATH="$W/deps:${LD_LIBRARY_PATH:-}" $check 2>&1 | grep -v 'libcu\|libnccl\|libnv' | grep -q "not found"; then
    echo "system libraries leave something unresolved; using every bundled one"
    rm -f "$W/deps/"*
    ln -s "$W/b/deps/"* "$W/deps/"
  fi
  LD_LIBRARY_PATH="$W/deps:${LD_LIBRARY_PATH:-}" $check || true

  # oar._C for this Python: the flags of python/CMakeLists.txt (Release, pybind11 NO_EXTRAS), in parallel.
  local inc ext jobs
  inc="-I$W/b/include $("$PY" -m pybind11 --includes)"
  ext=$("$PY" -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
  jobs=$(nproc)
  echo "compiling oar._C for $("$PY" --version 2>&1) with $($CXX --version | head -1), -j$jobs"
  t=$(date +%s)
  # shellcheck disable=SC2086
  ls "$W/b/src/"*.cc | xargs -P "$jobs" -I{} sh -c \
    "$CXX -O3 -DNDEBUG -fPIC -fvisibility=hidden -std=c++17 -Wall -Wextra $inc -c {} -o $W/obj/\$(basename {} .cc).o"
  # --no-as-needed: libgcc_s stays a direct dependency of _C, as in our CMake build, so its unwinder is
  # found before libunwind.so.8 (glog's dependency, which also defines _Unwind_*).
  # The version script exports PyInit__C only (python/src/extension.map says why).
  $CXX -shared -Wl,--no-as-needed -Wl,--version-script="$W/b/src/extension.map" -o "$W/pkg/oar/_C$ext" \
    "$W/obj/"*.o "$W/pkg/oar/lib/liboar_core.so.0" -lgcc_s \
    -Wl,-rpath,'$ORIGIN/lib' -Wl,-rpath-link,"$W/deps"
  BUILD_SECONDS=$(($(date +%s) - t))
  echo "oar._C compiled and linked in ${BUILD_SECONDS}s"
}
t=$(date +%s)
(build) >>"$BUILDLOG" 2>&1
rc=$?
BUILD_SECONDS=$(sed -n 's/^oar._C compiled and linked in \([0-9]*\)s$/\1/p' "$BUILDLOG")
if [ $rc -ne 0 ]; then
  record build FAIL $(($(date +%s) - t)) "unpack or compile failed (env.txt)"
else
  record build PASS $(($(date +%s) - t)) "oar._C compiled in ${BUILD_SECONDS}s on $(nproc) cores"
fi

# ---- the environment every step runs in --------------------------------------------------------------------
SITE=$("$PY" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" 2>/dev/null || true)
NVLIBS=""
if [ -n "$SITE" ] && [ -d "$SITE/nvidia" ]; then
  # The nvidia-* wheels PyTorch loads (nvidia/<name>/lib, or nvidia/cu13/lib): first, so oar and torch
  # share one copy of each library in the process.
  NVLIBS=$(find "$SITE/nvidia" -maxdepth 3 -type d -name lib | sort | tr '\n' ':')
fi
ORIG_LD=${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH="$W/pkg/oar/lib:$W/deps:${NVLIBS}/usr/local/cuda/lib64$ORIG_LD"
export PYTHONPATH="$W/pkg${PYTHONPATH:+:$PYTHONPATH}"
cd /tmp  # never import the tree's python/oar by accident

# ---- env: the machine, versions, the doctor ----------------------------------------------------------------
ENVLOG=$OUT/env.txt
{
  echo "### environment"
  echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "device under test: $DEV"
  uname -a
  nproc
  timeout 20 nvidia-smi 2>&1 || echo "(no nvidia-smi)"
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  # Where every library of the package resolves with that path (the CUDA ones included).
  ldd "$W/pkg/oar/"_C*.so "$W/pkg/oar/lib/liboar_core.so.0" "$W/pkg/oar/plugins/"*.so
} >>"$ENVLOG" 2>&1
run_step env 60 "$ENVLOG" "$PY" -c "
import sys, numpy
print('python', sys.version.split()[0], 'numpy', numpy.__version__)
try:
    import torch
    print('torch', torch.__version__, 'cuda', torch.version.cuda, 'available', torch.cuda.is_available(),
          torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')
except Exception as e:
    print('torch: not usable:', e)
import oar
print('oar', oar.__file__)
"
timeout 60 "$PY" -m oar.utils.doctor -v >>"$ENVLOG" 2>&1
# A plugin the dynamic loader refused (a library or symbol missing from the wheels' copies): once more
# with the toolkit's libraries first; if that loads it, every later step uses that order.
if ! grep -q "(device type '$DEVTYPE'" "$ENVLOG" && grep -q "skipped: cannot be loaded" "$ENVLOG" &&
  [ -n "$NVLIBS" ]; then
  export LD_LIBRARY_PATH="$W/pkg/oar/lib:$W/deps:/usr/local/cuda/lib64:${NVLIBS%:}$ORIG_LD"
  echo "### the loader refused a plugin: the doctor again with LD_LIBRARY_PATH=$LD_LIBRARY_PATH" >>"$ENVLOG"
  timeout 60 "$PY" -m oar.utils.doctor >>"$ENVLOG" 2>&1
fi
if grep -q "(device type '$DEVTYPE'" "$ENVLOG"; then
  finish_step env "doctor: the $DEVTYPE plugin is loaded"
else
  STEP_STATUS=FAIL
  finish_step env "doctor: no loaded plugin of device type '$DEVTYPE'; $(grep 'skipped:' "$ENVLOG" | grep -v shadowed | sed 's/^ *//' | paste -sd ';')"
fi

# ---- exceptions: C++ errors raised inside the Python process ----------------------------------------------
# The first H200 run (2026-11-27) segfaulted wherever an error was raised in Python (bool() of a 2-element
# tensor, an in-place dtype error, CPU fallbacks), while the C++ test binaries raised and caught the same
# errors. This probe says whether that still happens and, if so, which library setup avoids it.
EXC_PROBE='import sys, faulthandler, oar
faulthandler.enable()
def step(what, fn, exc):
    print("...", what, flush=True)
    try:
        fn()
    except exc:
        print("caught:", what, flush=True)
        return
    print("NOT RAISED:", what, flush=True)
dev = sys.argv[1] if len(sys.argv) > 1 else "cpu"
step("bool() of 2 elements on cpu (raised by _C)", lambda: bool(oar.to_tensor([1.0, 2.0])), ValueError)
x = oar.to_tensor([1, 2, 3])
def inplace(): x.__iadd__(1.5)
step("int += float on cpu (raised by the core)", inplace, TypeError)
t = oar.to_tensor([[True, False]], place=dev)
print("... a tensor on", t.place, flush=True)
step("all(axis=3) on " + dev + " (raised by the core infer)", lambda: oar.all(t, 3), IndexError)
m = oar.to_tensor([[1, 2], [3, 4]], dtype="int64", place=dev)
print("... int64 matmul on", dev, "(CPU fallback):", oar.matmul(m, m).numpy().tolist(), flush=True)
step("bool() of 2 elements on " + dev, lambda: bool(oar.to_tensor([1.0, 2.0], place=dev)), ValueError)
print("all probes done", flush=True)'
run_step exceptions 30 "$ENVLOG" "$PY" -c "$EXC_PROBE" "$DEV"
finish_step exceptions "C++ errors raised and caught in Python (env.txt)"
if [ "$LAST_RC" != 0 ] && [ "$LAST_RC" != 125 ]; then
  # Which library each _Unwind_* reference bound to (libgcc_s, or glog's libunwind.so.8, which also defines
  # them): the dynamic linker's own record settles the cause.
  LD_DEBUG=bindings LD_DEBUG_OUTPUT="$W/ldbind" timeout 30 "$PY" -c "$EXC_PROBE" "$DEV" >/dev/null 2>&1
  { echo "### _Unwind_* bindings in the failing probe (LD_DEBUG=bindings)"
    cat "$W"/ldbind.* 2>/dev/null | grep "_Unwind_" | grep -E 'libstdc\+\+|/_C\.|to [^ ]*libunwind' |
      sed 's/^ *[0-9]*: *//' | sort -u | head -60; } >>"$ENVLOG"
  # And the native frames of the crash: cuda-gdb (the image has no gdb) debugs host-only programs too.
  CUDA_GDB=$(command -v cuda-gdb || ls /usr/local/cuda/bin/cuda-gdb 2>/dev/null || true)
  if [ -n "$CUDA_GDB" ] && [ $((DEADLINE - $(date +%s))) -gt 120 ]; then
    { echo "### native backtrace of the failing probe ($CUDA_GDB)"
      timeout -k 5 60 "$CUDA_GDB" -q -batch -ex run -ex "info sharedlibrary" -ex bt \
        --args "$("$PY" -c "import sys; print(sys.executable)")" -c "$EXC_PROBE" "$DEV" 2>&1 |
        grep -v "^\[New Thread\|^\[Thread .* exited\]" | tail -150; } >>"$ENVLOG"
  fi
  # The same probe on the simulated device: a crash on both is the process setup, on the GPU only the plugin.
  run_step exceptions_on_sim 30 "$ENVLOG" "$PY" -c "$EXC_PROBE" sim:0
  finish_step exceptions_on_sim "the probe with sim:0 in place of $DEV"
  GCC_S=$(ldconfig -p 2>/dev/null | awk '/libgcc_s.so.1 .*x86-64/ {print $NF; exit}')
  run_step exceptions_preload_libgcc_s 30 "$ENVLOG" env LD_PRELOAD="$GCC_S" "$PY" -c "$EXC_PROBE" "$DEV"
  finish_step exceptions_preload_libgcc_s "the same with LD_PRELOAD=$GCC_S; _Unwind_* bindings in env.txt"
  if [ "$LAST_RC" = 0 ]; then
    export LD_PRELOAD="$GCC_S"  # every later step runs the way that worked
    echo "### the later steps run with LD_PRELOAD=$GCC_S" >>"$ENVLOG"
  fi
fi

# ---- ops: the op suite on the device ------------------------------------------------------------------------
OPSLOG=$OUT/ops.txt
: >"$OPSLOG"
run_step ops 150 "$OPSLOG" "$PY" -m oar.testing.ops --device "$DEV" -v
finish_step ops "$(grep -E ' ops passed, ' "$OPSLOG" | tail -1)"
# The plugin's own matmul/conv kernels (own_blas.cu: what the ROCm build runs without rocBLAS/MIOpen),
# chosen with OAR_GPU_OWN_KERNELS=1 (decision 61); the summary appends to ops.txt.
run_step ops_own 60 "$OPSLOG" env OAR_GPU_OWN_KERNELS=1 "$PY" -m oar.testing.ops --device "$DEV" \
  --op matmul --op 'conv*' -v
finish_step ops_own "$(grep -E ' ops passed, ' "$OPSLOG" | tail -1)"

# ---- train: a few steps of three models -------------------------------------------------------------------
TRAINLOG=$OUT/train.txt
: >"$TRAINLOG"
QARG=()
[ "$QUICK" = 1 ] && QARG=(--quick)
run_step train 90 "$TRAINLOG" "$PY" "$ROOT/tests/benchmarks/train_steps.py" --device "$DEV" "${QARG[@]}" \
  --json "$W/train.json"
finish_step train "$(grep '^RESULT' "$TRAINLOG" | sed 's/^RESULT //' | paste -sd ';' | sed 's/;/; /g')"
[ -f "$W/train.json" ] && { echo "### train.json"; cat "$W/train.json"; } >>"$TRAINLOG"

# ---- bench: beside PyTorch ---------------------------------------------------------------------------------
BENCHLOG=$W/bench.log
: >"$BENCHLOG"
run_step bench 120 "$BENCHLOG" "$PY" "$ROOT/tests/benchmarks/bench_gpu.py" --device "$DEV" "${QARG[@]}" \
  --json "$OUT/bench.json"
finish_step bench "the table is below"

# ---- conformance: the plugin conformance suite, the C++ tests ------------------------------------------------
CONFLOG=$OUT/conformance.txt
: >"$CONFLOG"
# kernels.* is the op suite again (step ops): every other group.
PCARGS=()
for g in abi. device. memory. streams. errors. collectives. profiler. lifecycle.; do PCARGS+=(-k "$g"); done
run_step conformance 75 "$CONFLOG" "$PY" -m oar.testing.plugin_conformance --device "$DEVTYPE" "${PCARGS[@]}" -v
finish_step conformance "$(grep -E 'passed|failed' "$CONFLOG" | tail -1)"

# The C++ tests that run on every place, filtered to the device's instances; the CUDA plugin's own test.
FILTER="*${DEV/:/_}*"
for b in test_ops test_inplace; do
  if [ -x "$W/b/bin/$b" ]; then
    run_step "cxx_$b" 60 "$CONFLOG" "$W/b/bin/$b" --gtest_brief=1 "--gtest_filter=$FILTER"
    note=$(grep -E '^\[  PASSED  \]|^\[  FAILED  \]|tests? ran' "$CONFLOG" | tail -1)
    # A filter that matched nothing proves nothing: the device's instances were never created.
    [ "$LAST_RC" = 0 ] && grep -q "0 tests from 0 test suites ran" <<<"$(tail -5 "$CONFLOG")" &&
      STEP_STATUS=FAIL note="no test instance for $DEV (is the plugin loaded?)"
    finish_step "cxx_$b" "$note"
  fi
done
if [ -x "$W/b/bin/test_cuda_plugin" ]; then
  run_step cxx_test_cuda_plugin 30 "$CONFLOG" "$W/b/bin/test_cuda_plugin"
  finish_step cxx_test_cuda_plugin
fi

# ---- pytest: the suites that take a device, on the device only ---------------------------------------------
PYTESTLOG=$OUT/pytest.txt
: >"$PYTESTLOG"
# Files with the `device` fixture (tests/python/conftest.py), the op suite's own file left out (step ops),
# and the CUDA plugin's own checks.
mapfile -t PYFILES < <(grep -l "def test_[a-z0-9_]*(.*\bdevice\b" "$ROOT"/tests/python/test_*.py | grep -v test_op_suite.py)
PYFILES+=("$ROOT/tests/python/test_cuda_plugin.py" "$ROOT/tests/python/test_cuda_batch_norm.py"
         "$ROOT/tests/python/test_cuda_graph.py")
XDIST=()
if "$PY" -c "import xdist" 2>/dev/null && [ "$(nproc)" -ge 8 ]; then XDIST=(-n 8); fi
TOUT=()
if "$PY" -c "import pytest_timeout" 2>/dev/null; then TOUT=(--timeout 60); fi
run_step pytest 150 "$PYTESTLOG" "$PY" -m pytest -p no:cacheprovider -rfE --tb=short -q "${XDIST[@]}" "${TOUT[@]}" \
  -k "$DEVTYPE or test_cuda_plugin or test_cuda_batch_norm or test_cuda_graph" "${PYFILES[@]}"
[ "$LAST_RC" = 5 ] && STEP_STATUS=FAIL STEP_NOTE="no test selected for $DEVTYPE"
finish_step pytest "$(grep -E '(passed|failed|error|skipped)' "$PYTESTLOG" | tail -1)"

# ---- extra: a diagnostic script of the caller's, in the same environment (OAR_GPU_CHECK_EXTRA),
# last, so it takes what the budget has left and cannot disturb the checks --------------
if [ -n "$EXTRA" ]; then
  run_step extra 400 "$OUT/extra.txt" env OAR_ROOT="$ROOT" OAR_DEVICE="$DEV" OAR_GPU_CHECK_DIR="$W" bash "$EXTRA"
  finish_step extra "$EXTRA: output in extra.txt"
fi

# ---- summary.md ---------------------------------------------------------------------------------------------
SUM=$OUT/summary.md
{
  echo "# oar gpu_check on $DEV, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo
  echo "$(timeout 10 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo 'no GPU visible'); $(nproc) cores; total $(($(date +%s) - T0))s of a ${BUDGET}s budget"
  echo
  grep -E '^(commit|made|plugins|WARNING)' "$BUILDLOG" | sed 's/^/    /'
  echo
  echo "| step | status | s | note |"
  echo "| --- | --- | --- | --- |"
  for s in "${STEPS[@]}"; do
    IFS='|' read -r n st sec note <<<"$s"
    echo "| $n | $st | $sec | ${note//|//} |"
  done
  echo
  echo "## doctor"
  echo '```'
  sed -n '/^oar device ABI/,$p' "$ENVLOG" | grep -v '^      ' | head -40
  echo '```'
  echo "## ops (failures)"
  echo '```'
  grep -E '^(FAIL|ERROR|META)' "$OPSLOG" | head -60
  tail -2 "$OPSLOG"
  echo '```'
  echo "## train"
  echo '```'
  grep -E '^(RESULT|FALLBACK)' "$TRAINLOG"
  echo '```'
  echo "## bench (output of tests/benchmarks/bench_gpu.py; numbers also in bench.json)"
  echo '```'
  cat "$BENCHLOG"
  echo '```'
} >"$SUM" 2>&1
echo "gpu_check: summary in $SUM; $(ls "$OUT" | wc -l) files in $OUT"
cat "$SUM"
exit $FAILED
