#!/usr/bin/env bash
# ASan + UBSan build of the test suite in build-asan/ (or $BUILD_DIR), then ctest there.
#   scripts/sanitize.sh          every test
#   SANITIZE_SUBSET=ci scripts/sanitize.sh
#                                every test except the slow CPU-engine golden/parity tests, which
#                                run the same container readers as the rest but spend minutes in
#                                instrumented matrix code (what CI runs; see docs/robustness.md)
# Any sanitizer report fails the test that produced it (halt_on_error, no recovery for UBSan).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-asan}
JOBS=${JOBS:-$(nproc)}
SUBSET=${SANITIZE_SUBSET:-all}
# Tests left out of the CI subset (ctest -E regex on GoogleTest suite names).
CI_EXCLUDE='^(CpuGoldenParity|CpuGreedy|CpuMappingSensitivity|CpuKvCache|TokenizerSpeed)\.'

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
werror=OFF
[ "${CI:-}" = "true" ] && werror=ON
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DGPTOSS_SANITIZE=ON -DGPTOSS_WERROR=$werror "${launcher[@]}" >/dev/null
fi
cmake --build "$BUILD_DIR" -j "$JOBS"

export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/scripts/lsan.supp:print_suppressions=0}
exclude=()
[ "$SUBSET" = "ci" ] && exclude=(-E "$CI_EXCLUDE")
cd "$BUILD_DIR"
ctest --output-on-failure -j "$JOBS" --timeout 1800 "${exclude[@]}"
