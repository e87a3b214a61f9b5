#!/usr/bin/env bash
# ASan + UBSan build of the test suite in build-asan/ (or $BUILD_DIR), then ctest there.
#   scripts/sanitize.sh                        every target, every test
#   SANITIZE_SUBSET=hostile scripts/sanitize.sh   the tests labelled `hostile` (those whose crafted,
#       corrupted, truncated or fuzzer-found bytes steer a reader; tests/CMakeLists.txt, HOSTILE)
#       and only the targets they need (gptoss_hostile_tests), plus the fuzz targets for
#       scripts/fuzz.sh: a few minutes, for a change to a reader (docs/robustness.md).
# The build uses clang with libFuzzer's coverage instrumentation as well, so the same folder also
# builds the fuzz targets (scripts/fuzz.sh with GPTOSS_FUZZ_BUILD set to it). JOBS (default
# nproc) sets build and test parallelism; JUNIT=FILE.xml has ctest write its results there (and
# those of a full run's Vulkan tests to FILE.vulkan.xml). Any sanitizer report fails its test
# (halt_on_error; UBSan is built with -fno-sanitize-recover). See docs/robustness.md.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-asan}
JOBS=${JOBS:-$(nproc)}
SUBSET=${SANITIZE_SUBSET:-all}

# The Mesa/llvmpipe Vulkan driver leaks a few bytes from a module it unloads (an unknown frame,
# so no suppression can name it): its tests run with leak detection off.
VULKAN_TESTS='^(Vulkan|GptossRunVulkan|Parity\.|VulkanEngine|EveryEngine/EngineInterface\..*/vulkan)'

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# Warnings are errors in the normal (gcc) build under CI; clang's own warnings in test code do
# not stop this one.
werror=OFF
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  # -O1 and line tables only: what ASan recommends, and the cheapest build that still gives
  # stack traces with file:line.
  CC=clang CXX=clang++ cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DGPTOSS_SANITIZE=ON -DGPTOSS_FUZZ=ON -DGPTOSS_WERROR=$werror "${launcher[@]}" \
    "-DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link" "-DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link" \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" \
    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" >/dev/null
fi
if [ "$SUBSET" = "hostile" ]; then
  cmake --build "$BUILD_DIR" -j "$JOBS" --target gptoss_hostile_tests gptoss_fuzzers
else
  cmake --build "$BUILD_DIR" -j "$JOBS"
fi

asan='halt_on_error=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1'
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
scripts/seed_ctest_costs.sh "$BUILD_DIR"
cd "$BUILD_DIR"
status=0
nosync=()  # fsync as a no-op in the tests (scripts/test.sh says why)
command -v eatmydata >/dev/null && nosync=(eatmydata)
select=() junit=() junit_vulkan=()
[ "$SUBSET" = "hostile" ] && select=(-L '^hostile$')
[ -n "${JUNIT:-}" ] && junit=(--output-junit "$JUNIT") junit_vulkan=(--output-junit "${JUNIT%.xml}.vulkan.xml")
ASAN_OPTIONS=${ASAN_OPTIONS:-$asan:detect_leaks=1} \
  "${nosync[@]}" ctest --output-on-failure -j "$JOBS" --timeout 1800 "${select[@]}" -E "$VULKAN_TESTS" "${junit[@]}" || status=$?
if [ "$SUBSET" != "hostile" ]; then
  ASAN_OPTIONS=${ASAN_OPTIONS:-$asan:detect_leaks=0} \
    "${nosync[@]}" ctest --output-on-failure -j "$JOBS" --timeout 1800 -R "$VULKAN_TESTS" "${junit_vulkan[@]}" || status=$?
fi
exit $status
