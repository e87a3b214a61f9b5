#!/usr/bin/env bash
# ASan + UBSan build of the test suite in build-asan/ (or $BUILD_DIR), then ctest there.
#   scripts/sanitize.sh                        every target, every test
#   SANITIZE_SUBSET=ci scripts/sanitize.sh     what CI (scripts/test.sh) runs: every test except
#       the CPU/Vulkan engine, gptoss-run, gptoss-eval end-to-end, synthesized-model statistics
#       and tokenizer runtime tests, which read no file bytes
#       that the tested readers have not already checked and cost most of the instrumented time
#       (docs/robustness.md lists them and the reasons).
# The build uses clang with libFuzzer's coverage instrumentation as well, so the same folder also
# builds the fuzz targets (scripts/fuzz.sh with GPTOSS_FUZZ_BUILD set to it). JOBS (default
# nproc) sets build and test parallelism. Any sanitizer report fails its test (halt_on_error;
# UBSan is built with -fno-sanitize-recover). See docs/robustness.md.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-asan}
JOBS=${JOBS:-$(nproc)}
SUBSET=${SANITIZE_SUBSET:-all}

# Test binaries left out of the CI subset (ctest lists their tests as *_NOT_BUILT) and the
# CLIs only they run.
CI_SKIPPED_TARGETS='^(cpu_tests|vulkan_tests|parity_tests|tokenizer_tests|eval_tests|synth_statistics_tests|gptoss-run)$'
CI_EXCLUDE='_NOT_BUILT$'
# The Mesa/llvmpipe Vulkan driver leaks a few bytes from a module it unloads (an unknown frame,
# so no suppression can name it): its tests run with leak detection off.
VULKAN_TESTS='^(Vulkan|GptossRunVulkan|Parity\.|VulkanEngine)'

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
if [ "$SUBSET" = "ci" ]; then
  mapfile -t targets < <(ninja -C "$BUILD_DIR" -t targets all | sed -n 's/^\([A-Za-z0-9_.-]*\): phony$/\1/p' |
    grep -Ev "$CI_SKIPPED_TARGETS" | grep -E '(_tests|^gptoss-[a-z]+|^gptoss_fuzzers)$')
  cmake --build "$BUILD_DIR" -j "$JOBS" --target "${targets[@]}"
else
  cmake --build "$BUILD_DIR" -j "$JOBS"
fi

asan='halt_on_error=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1'
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
cd "$BUILD_DIR"
status=0
exclude="$VULKAN_TESTS"
[ "$SUBSET" = "ci" ] && exclude="$VULKAN_TESTS|$CI_EXCLUDE"
ASAN_OPTIONS=${ASAN_OPTIONS:-$asan:detect_leaks=1} \
  ctest --output-on-failure -j "$JOBS" --timeout 1800 -E "$exclude" || status=$?
if [ "$SUBSET" != "ci" ]; then
  ASAN_OPTIONS=${ASAN_OPTIONS:-$asan:detect_leaks=0} \
    ctest --output-on-failure -j "$JOBS" --timeout 1800 -R "$VULKAN_TESTS" || status=$?
fi
exit $status
