#!/usr/bin/env bash
# Installs every dependency oar needs to build and test, from Debian's packages and PyPI.
# Idempotent: packages already present are not reinstalled, and it stays quiet when nothing changes.
set -euo pipefail

APT_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  libboost-dev libboost-filesystem-dev        # Boost.DLL (header-only) + filesystem
  libprotobuf-dev protobuf-compiler           # program IR serialization
  libgoogle-glog-dev                          # logging in the core
  libgtest-dev libgmock-dev                   # C++ tests
  libbenchmark-dev                            # C++ benchmarks
  libdnnl-dev                                 # oneDNN kernels in the CPU plugin
  liblapack-dev                               # reference LAPACK: the CPU plugin's fallback when OpenBLAS is missing
  libopenblas0-openmp                         # OpenBLAS on OpenMP: float64/complex matmul and LAPACK in the CPU
                                              # plugin (dlopened by path, see plugins/cpu/blas.cc); it also
                                              # becomes the system's liblapack.so.3/libblas.so.3 alternative
  libfftw3-double3 libfftw3-single3           # FFTW 3 for oar.fft in the CPU plugin (dlopened, see plugins/cpu/fft.cc)
  ocl-icd-opencl-dev opencl-c-headers         # Debian's oneDNN CMake config requires OpenCL
  libgloo-dev                                 # CPU collectives
  pybind11-dev                                # Python extension
  dataset-fashion-mnist zlib1g-dev            # the real data set for the main job, and gzip to read it
  clang-format
  clang libclang-rt-dev                       # libFuzzer targets for the model-file parsers (scripts/fuzz.sh)
  hipcc libamdhip64-dev librocprim-dev        # the rocm plugin (plugins/rocm): HIP compiler, runtime, rocPRIM
  libomp-dev                                  # OpenMP for clang 14 (scripts/fuzz.sh); not libomp-15-dev, which
                                              # would remove it (the rocm plugin is built without OpenMP)
)
PIP_PACKAGES=(numpy pytest scikit-build-core pybind11 pillow wheel hypothesis)  # pillow: images in oar.vision; wheel: pip builds of setuptools projects (samples/custom_op); hypothesis: tests/python/test_fuzz_api.py

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install_deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
pip_missing=()
for p in "${PIP_PACKAGES[@]}"; do
  mod=${p//-/_}
  [ "$p" = pillow ] && mod=PIL  # the one package whose module name differs
  "$PY" -c "import ${mod}" 2>/dev/null || pip_missing+=("$p")
done
if [ ${#pip_missing[@]} -gt 0 ]; then
  echo "install_deps: pip installing ${pip_missing[*]}"
  "$PY" -m pip install -q "${pip_missing[@]}"
fi

# Optional: the real paddlepaddle wheel for the PaddlePaddle round-trip tests
# (tests/python/test_paddle_roundtrip.py), in a folder of its own so its pinned numpy/protobuf never
# replace the ones oar builds and tests with; Paddle only runs in subprocesses with PYTHONPATH set to
# that folder. Skipped when Paddle already imports from there (the folder is the cache); a failed
# install never fails this script: the round-trip tests are then skipped with the reason.
PADDLE_DIR=${OAR_PADDLE_PATH:-$HOME/.cache/oar/paddle_pkgs}
if ! PYTHONPATH="$PADDLE_DIR" FLAGS_enable_pir_api=0 timeout 300 "$PY" -c "import paddle" >/dev/null 2>&1; then
  echo "install_deps: pip installing paddlepaddle into $PADDLE_DIR (optional, for the round-trip tests)"
  mkdir -p "$(dirname "$PADDLE_DIR")"
  PADDLE_LOG=$(mktemp)
  if "$PY" -m pip install -q --disable-pip-version-check --upgrade --target "$PADDLE_DIR" paddlepaddle \
    >"$PADDLE_LOG" 2>&1 && PYTHONPATH="$PADDLE_DIR" "$PY" -c "import paddle" >/dev/null 2>&1; then
    echo "install_deps: paddlepaddle installed into $PADDLE_DIR"
  else
    echo "install_deps: could not install paddlepaddle (the PaddlePaddle round-trip tests will be skipped):"
    tail -3 "$PADDLE_LOG" | sed 's/^/  /'
  fi
  rm -f "$PADDLE_LOG"
fi
