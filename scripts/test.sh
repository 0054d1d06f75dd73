#!/usr/bin/env bash
# The whole test suite: builds, then runs every C++ test through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
cd "${OAR_BUILD_DIR:-build}"
ctest --output-on-failure -j "${OAR_TEST_JOBS:-2}"
