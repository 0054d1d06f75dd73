#!/usr/bin/env bash
# Packs what scripts/gpu_check.sh needs on a lent GPU machine and cannot build or find there into ONE
# archive, .gpu/bundle.tar.xz (ignored by git; the device tool carries it with carry: [".gpu"]):
#   lib/liboar_core.so.0          the core (built here; its Debian dependencies are not installed there)
#   plugins/liboar_plugin_*.so    cpu, sim and, when nvcc was found, cuda (never rocm)
#   deps/                         every non-system shared library those need (oneDNN, protobuf, glog, ...),
#                                 under its soname; gpu_check.sh uses only those the machine lacks
#   bin/                          oar-doctor, the C++ tests that take a place (gtest is linked statically) and
#                                 oar_bench_lowp (oneDNN bf16 called directly, for bench_amp_ops.py on that CPU)
#   include/, src/                the headers and python/src that compile oar._C there, for ITS Python
#                                 (the extension depends on the Python version; everything above does not)
#   MANIFEST                      commit, date, compiler, and a hash of the C++ sources the binaries came from
# The CUDA libraries (cudart is static in the plugin; cuBLAS, cuDNN, NCCL) are NOT packed: the GPU machine
# has them (its CUDA toolkit and the nvidia-* wheels next to PyTorch).
#
#   bash scripts/gpu_bundle.sh            # builds if needed (scripts/build.sh), then packs
#   OAR_BUILD_DIR=build-x bash scripts/gpu_bundle.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${OAR_BUILD_DIR:-build}
OUTDIR=.gpu
ARCHIVE=$OUTDIR/bundle.tar.xz

# ---- build ----------------------------------------------------------------------------------------------
if [ ! -f "$BUILD/build.ninja" ]; then
  OAR_BUILD_DIR=$BUILD bash scripts/build.sh
fi
# Only what goes into the bundle (a configured tree may be behind the sources).
targets=(oar_core oar_plugin_cpu oar_plugin_sim oar-doctor test_ops test_inplace)
have_target() { cmake --build "$BUILD" --target help 2>/dev/null | grep -q "^$1:"; }
for t in oar_plugin_cuda test_cuda_plugin oar_bench_lowp; do
  if have_target "$t"; then targets+=("$t"); fi
done
cmake --build "$BUILD" -j "${OAR_JOBS:-$(nproc)}" --target "${targets[@]}"

# ---- stage ----------------------------------------------------------------------------------------------
STAGE=$(mktemp -d /tmp/oar_gpu_bundle.XXXXXX)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE"/{lib,plugins,deps,bin,include,src}

cp -L "$BUILD/lib/liboar_core.so.0" "$STAGE/lib/"
# The rocm plugin stays here: the lent machines are NVIDIA's, and it would bring HIP's libraries along.
for p in "$BUILD"/lib/oar/plugins/liboar_plugin_*.so; do
  [ "$(basename "$p")" = liboar_plugin_rocm.so ] || cp "$p" "$STAGE/plugins/"
done
for b in oar-doctor test_ops test_inplace test_cuda_plugin oar_bench_lowp; do
  if [ -x "$BUILD/bin/$b" ]; then cp "$BUILD/bin/$b" "$STAGE/bin/"; fi
done
for d in sdk/include framework/include device_api/include; do cp -r "$d/." "$STAGE/include/"; done
cp python/src/*.cc python/src/*.h python/src/extension.map "$STAGE/src/"

# Shared libraries the machine there may lack: everything ldd resolves, less the C and C++ runtimes
# (the machine's are newer than ours and must be used) and the CUDA / NVIDIA libraries (theirs match their
# driver). gpu_check.sh further skips any whose soname the machine already has.
is_system_lib() {
  case "$1" in
    linux-vdso.so.* | ld-linux*.so.* | libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | \
      libstdc++.so.* | libgcc_s.so.* | libutil.so.* | libresolv.so.*) return 0 ;;
    libcuda.so.* | libcudart.so.* | libcublas*.so.* | libcudnn*.so.* | libnccl.so.* | libnv*.so.* | \
      libcupti.so.* | libcufft*.so.* | libcurand.so.* | libcusparse*.so.* | libcusolver*.so.*) return 0 ;;
    liboar_core.so.*) return 0 ;;  # packed above
  esac
  return 1
}
missing=()
for f in "$STAGE"/lib/*.so.* "$STAGE"/plugins/*.so "$STAGE"/bin/*; do
  # ldd lines: "soname => /path (addr)", "soname => not found", or "/path (addr)".
  while read -r soname arrow path _; do
    [ "$arrow" = "=>" ] || continue
    is_system_lib "$soname" && continue
    if [ "$path" = "not" ]; then missing+=("$soname (needed by $(basename "$f"))"); continue; fi
    [ -e "$STAGE/deps/$soname" ] || cp -L "$path" "$STAGE/deps/$soname"
  done < <(LD_LIBRARY_PATH="$STAGE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd "$f")
done
# CUDA libraries missing HERE are expected (no driver); anything else missing is a broken build.
if [ ${#missing[@]} -gt 0 ]; then
  printf 'gpu_bundle: unresolved libraries: %s\n' "${missing[@]}" >&2
  exit 1
fi

# What the binaries were built from, so gpu_check.sh can warn when the tree it runs in has moved on.
src_hash() { (cd "$1" && find sdk/include framework/include device_api/include python/src -type f \
  \( -name '*.h' -o -name '*.cc' \) -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16); }
{
  echo "commit $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- 2>/dev/null || echo ' (with local changes)')"
  echo "made $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "compiler $(c++ --version | head -1)"
  echo "src_hash $(src_hash "$ROOT")"
  echo "plugins $(cd "$STAGE/plugins" && echo *)"
  echo "deps $(cd "$STAGE/deps" && echo *)"
} >"$STAGE/MANIFEST"

mkdir -p "$OUTDIR"
# Deterministic member order and metadata; xz with all cores (-T0) at -6 (-9 gains little on .so files).
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime='2000-01-01' -C "$STAGE" -cf - . |
  xz -T0 -6 >"$ARCHIVE.tmp"
mv "$ARCHIVE.tmp" "$ARCHIVE"
cat "$STAGE/MANIFEST"
size=$(stat -c %s "$ARCHIVE")
echo "gpu_bundle: $ARCHIVE $((size / 1024 / 1024)) MiB ($size bytes; unpacked $(du -sm "$STAGE" | cut -f1) MiB)"
if [ "$size" -gt $((40 * 1024 * 1024)) ]; then
  echo "gpu_bundle: warning: over 40 MiB; the device tool carries at most 64 MiB with the tree" >&2
fi
