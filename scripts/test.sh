#!/usr/bin/env bash
# Set-up, build and the whole test suite: the README's test command, and what CI runs.
#   1. tests       the normal build (build/ or $BUILD_DIR) and ctest
#   2. sanitizers  the whole suite again under ASan + UBSan (clang, build-asan/ or $ASAN_BUILD_DIR,
#                  scripts/sanitize.sh; docs/robustness.md says which tests it leaves out and why)
#   3. fuzz        every libFuzzer target for $GPTOSS_FUZZ_SECONDS (default 20) s on its corpus,
#                  built in the same sanitizer folder (scripts/fuzz.sh; docs/fuzzing.md)
# GPTOSS_QUICK=1 runs stage 1 only. Every stage runs even when an earlier one failed; the script
# fails when any did. The last line counts the tests of every stage that ran, as ctest does.
set -uo pipefail
cd "$(dirname "$0")/.."
QUICK=${GPTOSS_QUICK:-0}
ASAN_BUILD_DIR=${ASAN_BUILD_DIR:-build-asan}
FUZZ_SECONDS=${GPTOSS_FUZZ_SECONDS:-20}

log_dir=$(mktemp -d)
trap 'rm -rf "$log_dir"' EXIT
stages=()   # "name: result (seconds)"
passed=0 failed=0 status=0

# ctest's own summary line of a log, if it has one.
ctest_summary() {
  grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$1" | tail -1
}

# Adds the counts of a ctest summary line to the totals.
add_counts() {
  [[ "$1" =~ ([0-9]+)\ tests?\ failed\ out\ of\ ([0-9]+) ]] || return 0
  failed=$((failed + BASH_REMATCH[1]))
  passed=$((passed + BASH_REMATCH[2] - BASH_REMATCH[1]))
}

# stage NAME COMMAND...: runs it with its output shown and kept, and records the result.
stage() {
  local name=$1
  shift
  local start=$SECONDS rc=0
  echo "==== stage: $name"
  "$@" 2>&1 | tee "$log_dir/$name.log" || rc=$?
  local took=$((SECONDS - start)) summary=""
  if [ "$name" = tests ] || [ "$name" = sanitizers ]; then
    summary=$(ctest_summary "$log_dir/$name.log")
    add_counts "$summary"
  fi
  if ((rc == 0)); then
    stages+=("$name: passed (${took} s)${summary:+; $summary}")
  else
    stages+=("$name: FAILED, exit status $rc (${took} s)${summary:+; $summary}")
    status=1
    [ -n "$summary" ] || [ "$name" = fuzz ] || failed=$((failed + 1))  # a build that failed counts as a failed test
  fi
  return "$rc"
}

normal_suite() {
  scripts/setup.sh && scripts/build.sh && (cd "${BUILD_DIR:-build}" && ctest --output-on-failure -j "$(nproc)" --timeout 900)
}

stage tests normal_suite
if [ "$QUICK" = 1 ]; then
  stages+=("sanitizers: skipped (GPTOSS_QUICK=1)" "fuzz: skipped (GPTOSS_QUICK=1)")
else
  stage sanitizers env BUILD_DIR="$ASAN_BUILD_DIR" SANITIZE_SUBSET=ci scripts/sanitize.sh
  # Each fuzz target that ran clean counts as one passed test, each finding as one failure.
  if stage fuzz env GPTOSS_FUZZ_BUILD="$ASAN_BUILD_DIR" GPTOSS_FUZZ_JOBS="$(nproc)" \
      scripts/fuzz.sh all "$FUZZ_SECONDS"; then
    passed=$((passed + $(scripts/fuzz.sh list | wc -l)))
  else
    crashed=$(grep -c 'FOUND A PROBLEM' "$log_dir/fuzz.log")
    failed=$((failed + (crashed > 0 ? crashed : 1)))
    passed=$((passed + $(scripts/fuzz.sh list | wc -l) - (crashed > 0 ? crashed : 1)))
  fi
fi

echo "==== summary"
for s in "${stages[@]}"; do echo "  $s"; done
total=$((passed + failed))
percent=100
((total > 0)) && percent=$((passed * 100 / total))
echo "$percent% tests passed, $failed tests failed out of $total (all stages)"
exit $status
