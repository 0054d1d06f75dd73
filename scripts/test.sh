#!/usr/bin/env bash
# The whole test suite: builds, runs every C++ test through CTest, then installs the Python package
# (pip install ., non-editable) and runs the Python tests against the installed package.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
bash scripts/build.sh
(cd "${OAR_BUILD_DIR:-build}" && ctest --output-on-failure -j "${OAR_TEST_JOBS:-2}")
# The model-file parsers under libFuzzer for a short while (clang build in build-fuzz; skipped without clang).
FUZZ_SECONDS=${FUZZ_SECONDS:-20} bash scripts/fuzz.sh

PY=${PYTHON:-python3}
# scikit-build-core keeps its build in build/python/<wheel tag> (pyproject.toml), so a reinstall is
# incremental. It would pick Python's recorded compilers (gcc/g++); using CMake's usual cc/c++, as the
# build above did, lets ccache reuse that build's objects for the core and the plugins.
# Build dependencies (scikit-build-core, pybind11) come from scripts/install_deps.sh.
CC=${CC:-cc} CXX=${CXX:-c++} PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 \
  "$PY" -m pip install -q --no-build-isolation .
# The PaddlePaddle round-trip tests run Paddle (in subprocesses) from the folder scripts/install_deps.sh
# installs the wheel into; without it they are skipped with the reason.
PADDLE_DIR=${OAR_PADDLE_PATH:-$HOME/.cache/oar/paddle_pkgs}
if [ -d "$PADDLE_DIR/paddle" ]; then export OAR_PADDLE_PATH="$PADDLE_DIR"; fi
# From outside the source tree, so `import oar` is the installed package, not python/oar.
cd /tmp
"$PY" -m pytest -q -p no:cacheprovider "$ROOT/tests/python"
