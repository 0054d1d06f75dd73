#!/usr/bin/env bash
# Builds the GPU plugin wheels into ${OAR_DIST_DIR:-dist}, each where its compiler is found: oar-cuda
# (scripts/build_cuda_wheel.sh: nvcc) and oar-rocm (plugins/rocm/pyproject.toml: hipcc; OAR_ROCM_ARCHS
# overrides the offload targets; default: those of gfx90a, gfx942, gfx1100 that hipcc supports). Both come from the same sources (plugins/cuda), and each
# is checked: the two exported entry points only, no liboar_core. docs/packaging.md.
#
# Needs oar installed in the Python that runs it (OAR_PYTHON, default python3) and scikit-build-core.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${OAR_PYTHON:-python3}
DIST=${OAR_DIST_DIR:-dist}
built=0

if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
  bash scripts/build_cuda_wheel.sh
  built=$((built + 1))
else
  echo "build_gpu_wheels: no nvcc: oar-cuda not built"
fi

if command -v hipcc >/dev/null; then
  "$PY" -c "import oar.sysconfig as s; s.get_cmake_dir()" ||
    { echo "build_gpu_wheels: install oar in $PY first (pip install .)" >&2; exit 1; }
  mkdir -p "$DIST"
  rm -f "$DIST"/oar_rocm-*.whl
  ARGS=(-C "build-dir=build/rocm-wheel/{wheel_tag}")
  [ -n "${OAR_ROCM_ARCHS:-}" ] && ARGS+=(-C "cmake.define.OAR_ROCM_ARCHS=$OAR_ROCM_ARCHS")
  CMAKE_BUILD_PARALLEL_LEVEL=${OAR_JOBS:-$(nproc)} "$PY" -m pip wheel --no-build-isolation --no-deps -w "$DIST" \
    plugins/rocm "${ARGS[@]}"
  bash scripts/check_plugin_wheel.sh "$(ls "$DIST"/oar_rocm-*.whl)" rocm "$PY"
  built=$((built + 1))
else
  echo "build_gpu_wheels: no hipcc: oar-rocm not built"
fi
[ "$built" -gt 0 ] || { echo "build_gpu_wheels: neither nvcc nor hipcc found" >&2; exit 1; }
