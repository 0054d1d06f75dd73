#!/usr/bin/env bash
# Builds the oar-cuda wheel (plugins/cuda/pyproject.toml, docs/packaging.md) into ${OAR_DIST_DIR:-dist} and
# checks it: sm_80/86/89/90 machine code plus compute_90 PTX (OAR_CUDA_ARCHS overrides, in
# CMAKE_CUDA_ARCHITECTURES syntax), the two exported entry points only, no liboar_core, the CUDA runtime
# linked statically.
#
# Needs, in the Python that runs it (OAR_PYTHON, default python3): oar installed (pip install .) and
# scikit-build-core; and the CUDA 13 toolkit with cuDNN 9 and NCCL 2 (headers and libraries) for the build.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${OAR_PYTHON:-python3}
ARCHS=${OAR_CUDA_ARCHS:-"80-real;86-real;89-real;90"}
DIST=${OAR_DIST_DIR:-dist}
export PATH="$PATH:/usr/local/cuda/bin"

"$PY" -c "import oar.sysconfig as s; s.get_cmake_dir()" ||
  { echo "build_cuda_wheel: install oar in $PY first (pip install .)" >&2; exit 1; }
mkdir -p "$DIST"
rm -f "$DIST"/oar_cuda-*.whl
# A persistent build folder makes a rebuild incremental; ccache (if installed) serves nvcc too.
CMAKE_BUILD_PARALLEL_LEVEL=${OAR_JOBS:-$(nproc)} "$PY" -m pip wheel --no-build-isolation --no-deps -w "$DIST" \
  plugins/cuda -C cmake.define.OAR_CUDA_ARCHS="$ARCHS" -C "build-dir=build/cuda-wheel/{wheel_tag}"

WHEEL=$(ls "$DIST"/oar_cuda-*.whl)
REPORT=$(bash scripts/check_plugin_wheel.sh "$WHEEL" cuda "$PY")
echo "$REPORT"
case "$REPORT" in
  *libcudart*) echo "build_cuda_wheel: the CUDA runtime is not static" >&2; exit 1 ;;
esac
SO_DIR=$(mktemp -d)
trap 'rm -rf "$SO_DIR"' EXIT
"$PY" -m zipfile -e "$WHEEL" "$SO_DIR"
SO="$SO_DIR/oar_cuda/liboar_plugin_cuda.so"
if ! command -v cuobjdump >/dev/null; then
  echo "cubins:   (cuobjdump not found: not listed)"
else
  echo "cubins:   $(cuobjdump --list-elf "$SO" | grep -o 'sm_[0-9]*[a-z]*' | sort -u | tr '\n' ' ')"
  echo "ptx:      $(cuobjdump --list-ptx "$SO" | grep -o 'sm_[0-9]*[a-z]*' | sort -u | tr '\n' ' ')"
fi
