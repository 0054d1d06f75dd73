#!/usr/bin/env bash
# The C++ tests and the Python suite under AddressSanitizer + UndefinedBehaviorSanitizer (GCC or Clang).
# Slow (a separate instrumented build, tests 2-5x slower), so it is not part of scripts/test.sh.
#
#   scripts/sanitize.sh                        build, run ctest, then the whole Python suite
#   scripts/sanitize.sh cpp [ctest args]       the C++ tests only, e.g. `cpp -R test_autograd`
#   scripts/sanitize.sh python [pytest args]   the Python suite only; arguments select a subset, e.g.
#       scripts/sanitize.sh python tests/python/test_tensor.py tests/python/test_autograd.py -k grad
#
# One build folder, ${OAR_ASAN_BUILD_DIR:-build-asan}, serves both parts: the C++ build and the Python
# extension (pip install with scikit-build-core's build-dir pointed at it, the same CMake options), so the
# core and the plugins are compiled once. The package is installed into a venv of its own
# (build-asan/venv, made from $PYTHON with the system site-packages), never into your environment.
#   OAR_JOBS: build parallelism (default nproc).
# Any sanitizer report ends the process that made it (halt_on_error) and so fails that test.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
WHAT=${1:-all}
[ $# -gt 0 ] && shift
BUILD=${OAR_ASAN_BUILD_DIR:-build-asan}
JOBS=${OAR_JOBS:-$(nproc)}
VENV="$ROOT/$BUILD/venv"
CC=${CC:-cc}
CXX=${CXX:-c++}
export CC CXX

# -fno-sanitize-recover: undefined behaviour aborts instead of printing and going on. -O1 -g1 keeps the
# build and the tests fast enough with line numbers in every report.
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
OPT="-O1 -g1 -DNDEBUG"
LINK="-fsanitize=address,undefined"
# The CMake options of both parts: they must agree, or each part would reconfigure and rebuild the other's.
CMAKE_DEFS=(
  -DCMAKE_BUILD_TYPE=RelWithDebInfo
  "-DCMAKE_C_FLAGS=$SAN" "-DCMAKE_CXX_FLAGS=$SAN"
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$OPT" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$OPT"
  "-DCMAKE_EXE_LINKER_FLAGS=$LINK" "-DCMAKE_SHARED_LINKER_FLAGS=$LINK" "-DCMAKE_MODULE_LINKER_FLAGS=$LINK"
  -DOAR_BUILD_TESTS=ON -DOAR_BUILD_BENCHMARKS=OFF -DOAR_BUILD_SAMPLES=ON -DOAR_BUILD_PYTHON=ON
  -DOAR_WHEEL_SIM=ON "-DPython_EXECUTABLE=$VENV/bin/python"
)

# allocator_may_return_null: an impossible allocation returns null, as malloc does (the core then raises
# MemoryError, which tests check), instead of ASan aborting with allocation-size-too-big.
ASAN_COMMON="halt_on_error=1:print_stacktrace=1:allocator_may_return_null=1"
ASAN_COMMON+=":check_initialization_order=1:detect_stack_use_after_return=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"

make_venv() {
  [ -x "$VENV/bin/python" ] || "${PYTHON:-python3}" -m venv --system-site-packages "$VENV"
  # The pybind11 of that Python, as scikit-build-core would find it (a distribution's older pybind11
  # in /usr/lib/cmake misreads numpy 2's dtypes).
  local dir
  dir=$("$VENV/bin/python" -m pybind11 --cmakedir 2>/dev/null) && CMAKE_DEFS+=("-Dpybind11_DIR=$dir")
}

run_cpp() {
  make_venv
  cmake -S . -B "$BUILD" -G Ninja "${CMAKE_DEFS[@]}" >/dev/null
  cmake --build "$BUILD" -j "$JOBS"
  # Leaks are checked here: each test binary is ours from main() to exit. OAR_ASAN_LEAKS=0 turns that
  # off where LeakSanitizer's exit-time tracer cannot run (it crashed with "Tracer caught signal 11" on
  # 5 binaries with device worker threads in a ptrace-restricted container, after all their cases passed).
  (cd "$BUILD" && ASAN_OPTIONS="$ASAN_COMMON:detect_leaks=${OAR_ASAN_LEAKS:-1}" \
    ctest --output-on-failure -j "${OAR_TEST_JOBS:-2}" "$@")
}

run_python() {
  make_venv
  # What the Python suite needs first (the extension, the bundled plugins, the test custom-op libraries),
  # so a subset can run before the rest of the build; pip then only installs.
  cmake -S . -B "$BUILD" -G Ninja "${CMAKE_DEFS[@]}" >/dev/null
  cmake --build "$BUILD" -j "$JOBS" --target oar_python_ext oar_plugin_cpu oar_plugin_sim oar_test_custom_ops
  local cfg=(-C "build-dir=$BUILD" -C cmake.build-type=RelWithDebInfo -C build.targets=oar_python_ext)
  for d in "${CMAKE_DEFS[@]}"; do
    [ "$d" = -DCMAKE_BUILD_TYPE=RelWithDebInfo ] || cfg+=(-C "cmake.define.${d#-D}")
  done
  CMAKE_GENERATOR=Ninja CMAKE_BUILD_PARALLEL_LEVEL="$JOBS" PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore "$VENV/bin/python" -m pip install -q --no-build-isolation "${cfg[@]}" .
  # Python itself is not instrumented, so the sanitizer runtimes must be loaded before anything else.
  local preload
  preload="$("$CC" -print-file-name=libasan.so):$("$CC" -print-file-name=libubsan.so)"
  # Paths are taken from the repository root (pytest runs from /tmp, so `import oar` is the install).
  local args=() a
  for a in "$@"; do
    if [ -e "$ROOT/$a" ]; then args+=("$ROOT/$a"); else args+=("$a"); fi
  done
  [ ${#args[@]} -gt 0 ] || args=("$ROOT/tests/python")
  # --capture=sys: pytest leaves file descriptor 2 alone, so a sanitizer report (written there just
  # before the process ends) is not lost in pytest's capture file.
  # detect_leaks=0: CPython never frees its interned objects, arenas and extension modules at exit, so
  # LeakSanitizer would list thousands of allocations that are not oar's (the C++ tests above do check
  # the core and the plugins for leaks).
  cd /tmp
  LD_PRELOAD="$preload" ASAN_OPTIONS="$ASAN_COMMON:detect_leaks=0" OAR_BUILD_DIR="$BUILD" \
    "$VENV/bin/python" -m pytest -q -p no:cacheprovider --capture=sys "${args[@]}"
}

case "$WHAT" in
  cpp) run_cpp "$@" ;;
  python) run_python "$@" ;;
  all) run_cpp && run_python ;;
  *)
    echo "usage: scripts/sanitize.sh [cpp [ctest args] | python [pytest args] | all]" >&2
    exit 2
    ;;
esac
