#!/usr/bin/env bash
# Sets everything up on a fresh machine and runs the main job: installs dependencies, builds, installs
# the Python package (pip install ., non-editable), then trains LeNet on Fashion-MNIST with oar.Model
# (samples/train_lenet.py), showing a live progress bar, and prints the final test accuracy.
# Extra arguments go to the trainer (e.g. --epochs 1 --device sim:0).
# `bash scripts/run_main.sh mlp [args]` runs the C++ sample instead (a 784-128-10 MLP, oar_train_mlp).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
bash scripts/install_deps.sh
bash scripts/build.sh
"${OAR_BUILD_DIR:-build}"/bin/oar-doctor

if [ "${1:-}" = "mlp" ]; then
  shift
  exec "${OAR_BUILD_DIR:-build}"/bin/oar_train_mlp "$@"
fi

PY=${PYTHON:-python3}
# The same install as scripts/test.sh (incremental: scikit-build-core keeps its build in build/python).
CC=${CC:-cc} CXX=${CXX:-c++} PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 \
  "$PY" -m pip install -q --no-build-isolation .
# From outside the source tree, so `import oar` is the installed package; outputs go to ./output.
mkdir -p "$ROOT/output"
cd /tmp
exec "$PY" "$ROOT/samples/train_lenet.py" --save-dir "$ROOT/output/lenet" "$@"
