#!/usr/bin/env bash
# Configures and builds into build/ (or $BUILD_DIR). Warnings are errors under CI.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
WERROR=OFF
[ "${CI:-}" = "true" ] && WERROR=ON
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DGPTOSS_WERROR=$WERROR "${launcher[@]}" "$@" >/dev/null
fi
cmake --build "$BUILD_DIR" -j "$(nproc)"
