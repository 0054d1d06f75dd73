#!/usr/bin/env bash
# Configures and builds oar (Release, Ninja, ccache) into ${OAR_BUILD_DIR:-build}.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${OAR_BUILD_DIR:-build}
# Options are set explicitly so a build folder configured differently before still builds everything.
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=${OAR_BUILD_TYPE:-Release} \
  -DOAR_BUILD_TESTS=ON -DOAR_BUILD_BENCHMARKS=ON -DOAR_BUILD_SAMPLES=ON -DOAR_BUILD_PYTHON=OFF >/dev/null
cmake --build "$BUILD_DIR" -j "${OAR_JOBS:-$(nproc)}"
