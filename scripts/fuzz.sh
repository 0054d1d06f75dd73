#!/usr/bin/env bash
# Builds the libFuzzer targets for the model-file parsers with clang and runs each briefly.
#   FUZZ_SECONDS (default 20): run time per target. OAR_FUZZ_BUILD_DIR (default build-fuzz).
# Seeds: the PaddlePaddle-made files in tests/fixtures/paddle. A crash leaves crash-* in the corpus dir
# and fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
if ! command -v clang++ >/dev/null; then
  echo "fuzz: clang++ not installed; skipped"
  exit 0
fi
if [ ! -f "$(clang++ -print-file-name=libclang_rt.fuzzer-x86_64.a)" ]; then
  echo "fuzz: clang's libFuzzer runtime (libclang-rt-dev) not installed; skipped"
  exit 0
fi
BUILD=${OAR_FUZZ_BUILD_DIR:-build-fuzz}
SECONDS_PER=${FUZZ_SECONDS:-20}
CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DOAR_BUILD_TESTS=ON \
  -DOAR_BUILD_BENCHMARKS=OFF -DOAR_BUILD_SAMPLES=OFF -DOAR_BUILD_PYTHON=OFF -DOAR_BUILD_FUZZERS=ON >/dev/null
cmake --build "$BUILD" -j "${OAR_JOBS:-$(nproc)}" --target fuzz_program fuzz_params

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/program" "$WORK/params"
for m in "$ROOT"/tests/fixtures/paddle/*/; do
  n=$(basename "$m")
  cp "$m/model.pdmodel" "$WORK/program/$n"
  # fuzz_params: the first byte picks the reader (0 stream, 1 combined params of a fixed program, 2 info).
  if [ -f "$m/model.pdiparams" ]; then { printf '\x00'; cat "$m/model.pdiparams"; } >"$WORK/params/$n.stream"; fi
  if [ -f "$m/model.pdiparams.info" ]; then { printf '\x02'; cat "$m/model.pdiparams.info"; } >"$WORK/params/$n.info"; fi
done
cd "$WORK"
for t in program params; do
  echo "fuzz: $t for ${SECONDS_PER}s"
  "$ROOT/$BUILD/bin/fuzz_$t" -max_total_time="$SECONDS_PER" -max_len=65536 -rss_limit_mb=2048 \
    -print_final_stats=1 "$WORK/$t" 2>&1 | tail -n 12
done
