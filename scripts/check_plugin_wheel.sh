#!/usr/bin/env bash
# Checks a built plugin wheel (scripts/build_cuda_wheel.sh, scripts/build_gpu_wheels.sh): it holds
# oar_NAME/liboar_plugin_NAME.so, declares the oar.plugins entry point, and the plugin exports only its two
# entry points and does not link liboar_core. Prints the wheel, its size and the plugin's NEEDED libraries;
# exits non-zero naming the first rule broken.
#   bash scripts/check_plugin_wheel.sh WHEEL NAME [PYTHON]
set -euo pipefail
WHEEL=$1 NAME=$2 PY=${3:-python3}
fail() { echo "check_plugin_wheel: $WHEEL: $*" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$PY" -m zipfile -e "$WHEEL" "$TMP"
SO="$TMP/oar_$NAME/liboar_plugin_$NAME.so"
[ -f "$SO" ] || fail "lacks oar_$NAME/liboar_plugin_$NAME.so"
grep -q "^$NAME = oar_$NAME:plugin_dir" "$TMP"/oar_"$NAME"-*.dist-info/entry_points.txt ||
  fail "no oar.plugins entry point"
EXPORTS=$(nm -D --defined-only "$SO" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sort | tr '\n' ' ')
[ "$EXPORTS" = "oar_plugin_init oar_plugin_query " ] || fail "the plugin exports more than its two entry points: $EXPORTS"
NEEDED=$(readelf -d "$SO" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
case "$NEEDED" in *liboar_core*) fail "the plugin links liboar_core: $NEEDED" ;; esac
echo "wheel:    $WHEEL ($(du -h "$WHEEL" | cut -f1))"
echo "needs:    $NEEDED"
