#!/usr/bin/env bash
# Sets everything up on a fresh machine and runs the main job: installs dependencies, builds, then
# trains an MLP on Fashion-MNIST on the CPU plugin, showing progress. Extra arguments go to the
# trainer (e.g. --device sim:0 --epochs 1).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh
"${OAR_BUILD_DIR:-build}"/bin/oar-doctor
"${OAR_BUILD_DIR:-build}"/bin/oar_train_mlp "$@"
