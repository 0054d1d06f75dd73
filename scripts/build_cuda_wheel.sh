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
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$PY" -m zipfile -e "$WHEEL" "$TMP"
SO="$TMP/oar_cuda/liboar_plugin_cuda.so"
[ -f "$SO" ] || { echo "build_cuda_wheel: $WHEEL lacks oar_cuda/liboar_plugin_cuda.so" >&2; exit 1; }
grep -q '^cuda = oar_cuda:plugin_dir' "$TMP"/oar_cuda-*.dist-info/entry_points.txt ||
  { echo "build_cuda_wheel: no oar.plugins entry point" >&2; exit 1; }
EXPORTS=$(nm -D --defined-only "$SO" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sort | tr '\n' ' ')
[ "$EXPORTS" = "oar_plugin_init oar_plugin_query " ] ||
  { echo "build_cuda_wheel: the plugin exports more than its two entry points: $EXPORTS" >&2; exit 1; }
NEEDED=$(readelf -d "$SO" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
case "$NEEDED" in
  *liboar_core*) echo "build_cuda_wheel: the plugin links liboar_core: $NEEDED" >&2; exit 1 ;;
  *libcudart*) echo "build_cuda_wheel: the CUDA runtime is not static: $NEEDED" >&2; exit 1 ;;
esac
echo "wheel:    $WHEEL ($(du -h "$WHEEL" | cut -f1))"
echo "needs:    $NEEDED"
if ! command -v cuobjdump >/dev/null; then
  echo "cubins:   (cuobjdump not found: not listed)"
else
  echo "cubins:   $(cuobjdump --list-elf "$SO" | grep -o 'sm_[0-9]*[a-z]*' | sort -u | tr '\n' ' ')"
  echo "ptx:      $(cuobjdump --list-ptx "$SO" | grep -o 'sm_[0-9]*[a-z]*' | sort -u | tr '\n' ' ')"
fi
