#!/usr/bin/env bash
# Configures and builds oar (Release, Ninja, ccache) into ${OAR_BUILD_DIR:-build}.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${OAR_BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=${OAR_BUILD_TYPE:-Release} >/dev/null
cmake --build "$BUILD_DIR" -j "${OAR_JOBS:-$(nproc)}"
