#!/usr/bin/env bash
# Set-up, build and the whole test suite: the README's test command, and what CI runs.
#   1. tests  the normal build (build/ or $BUILD_DIR) and every ctest test. While ctest runs, the
#             fuzz targets (clang, ASan + UBSan, scripts/fuzz.sh build, in build-fuzz/ or
#             $FUZZ_BUILD_DIR) compile in the background at the lowest priority, on the cores the
#             tests leave idle (a test waiting on a child process, the fixture, a test's last
#             seconds on one core).
#   2. fuzz   the sanitizer gate: every libFuzzer target, built with ASan + UBSan, reads its seeds
#             (our writers' small files, the goldens' heads, gptoss-badinputs' hand-made hostile
#             files) and the committed regression inputs once, then a fixed-seed run with ASLR off
#             (scripts/fuzz.sh replay; docs/fuzzing.md). Open-ended campaigns (scripts/fuzz.sh all
#             SECONDS) never decide CI. Every test under the sanitizers is scripts/sanitize.sh, the
#             release check (docs/robustness.md).
# GPTOSS_QUICK=1 runs stage 1 only. Every stage runs even when an earlier one failed; the script
# fails when any did. Test results come from ctest's JUnit files (ctest --output-junit), not from
# its log: the summary lists every failed and skipped test and ends with one line counting the
# tests of every stage (each fuzz target counts as one).
set -uo pipefail
cd "$(dirname "$0")/.."
QUICK=${GPTOSS_QUICK:-0}
FUZZ_BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}

log_dir=$(mktemp -d)
trap 'rm -rf "$log_dir"' EXIT
stages=()   # "name: result (seconds)"
passed=0 failed=0 skipped=0 status=0
failed_names=() skipped_names=()

# junit_results FILE: one line per test of a ctest JUnit file, "passed|failed|skipped<TAB>name".
# Skipped: a test that said so (GTEST_SKIP, which gtest_discover_tests maps to ctest's skip) or is
# disabled. A test ctest did not run for any other reason (its fixture failed, its binary is
# missing) counts as failed, as in ctest's own summary.
junit_results() {
  awk '
    /<testcase / {
      match($0, /name="[^"]*"/); name = substr($0, RSTART + 6, RLENGTH - 7)
      match($0, /status="[a-z]*"/); st = substr($0, RSTART + 8, RLENGTH - 9)
      state = st == "run" ? "passed" : st == "disabled" ? "skipped" : "failed"
    }
    /<failure/ { state = "failed" }
    /<skipped message="SKIP_(RETURN_CODE|REGULAR_EXPRESSION_MATCHED)/ { state = "skipped" }
    /<\/testcase>/ {
      gsub(/&quot;/, "\"", name); gsub(/&lt;/, "<", name); gsub(/&gt;/, ">", name); gsub(/&amp;/, "\\&", name)
      print state "\t" name
    }' "$1"
}

# add_junit NAME FILE: adds a stage's tests to the totals and sets junit_counts to
# "P passed, F failed, S skipped" (a variable, not output: a $(...) subshell would lose the totals).
add_junit() {
  local results p f s
  results=$(junit_results "$2")
  p=$(grep -c $'^passed\t' <<<"$results")
  f=$(grep -c $'^failed\t' <<<"$results")
  s=$(grep -c $'^skipped\t' <<<"$results")
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
  while IFS=$'\t' read -r state test; do
    [ "$state" = failed ] && failed_names+=("$1: $test")
    [ "$state" = skipped ] && skipped_names+=("$1: $test")
  done <<<"$results"
  junit_counts="$p passed, $f failed, $s skipped"
}

# stage NAME COMMAND...: runs it with its output shown, and records the result. A ctest stage
# leaves its JUnit file in $log_dir/NAME.xml; a stage that failed without one (its build failed)
# counts as one failed test.
stage() {
  local name=$1
  shift
  local start=$SECONDS rc=0 counts=""
  echo "==== stage: $name"
  "$@" || rc=$?
  local took=$((SECONDS - start))
  if [ -s "$log_dir/$name.xml" ]; then
    add_junit "$name" "$log_dir/$name.xml"
    counts=$junit_counts
  elif ((rc != 0)) && [ "$name" != fuzz ]; then
    failed=$((failed + 1)) failed_names+=("$name: did not get as far as running its tests")
  fi
  if ((rc == 0)); then
    stages+=("$name: passed (${took} s)${counts:+; $counts}")
  else
    stages+=("$name: FAILED, exit status $rc (${took} s)${counts:+; $counts}")
    status=1
  fi
  return "$rc"
}

fuzz_build_pid=""
start_fuzz_build() {
  GPTOSS_FUZZ_BUILD="$FUZZ_BUILD_DIR" GPTOSS_FUZZ_JOBS="$(nproc)" nice -n 19 scripts/fuzz.sh build \
    >"$log_dir/fuzz-build.log" 2>&1 &
  fuzz_build_pid=$!
}

fuzz_stage() {
  if [ -n "$fuzz_build_pid" ] && ! wait "$fuzz_build_pid"; then
    cat "$log_dir/fuzz-build.log"
    echo "fuzz: building the targets failed" | tee "$log_dir/fuzz.log"
    return 1
  fi
  GPTOSS_FUZZ_BUILD="$FUZZ_BUILD_DIR" GPTOSS_FUZZ_JOBS="$(nproc)" scripts/fuzz.sh replay 2>&1 |
    tee "$log_dir/fuzz.log"
}

# The tests write, fsync and rename some gigabytes of model files in all (preset a is 78 MB, and
# conversions write it in every format, with 1 and 8 threads). An fsync guards a finished file
# against power loss, which a test's temporary folder does not need; a test then waits on the
# disk with a core idle. eatmydata (installed by setup.sh) makes fsync a no-op in the test
# processes (here and in scripts/sanitize.sh); the atomic rename that the interrupted-output tests
# check is untouched. The tests' large buffers (model files read whole, decoded weights, logits of
# 201088 columns) are malloc's own mmaps, touched a 4 KB page fault at a time: with
# glibc.malloc.hugetlb=1 malloc asks for transparent huge pages on them (where the kernel gives
# them on request, its usual "madvise" setting): the suite's system time was 203 of its 684
# CPU-seconds, and the conversion, Vulkan and evaluation tests take 28-35% less wall time with it.
# Neither changes a result.
normal_suite() {
  scripts/setup.sh && scripts/build.sh || return
  [ "$QUICK" = 1 ] || start_fuzz_build
  local nosync=()
  command -v eatmydata >/dev/null && nosync=(eatmydata)
  scripts/seed_ctest_costs.sh "${BUILD_DIR:-build}"
  (cd "${BUILD_DIR:-build}" &&
    GLIBC_TUNABLES=glibc.malloc.hugetlb=1 "${nosync[@]}" ctest --output-on-failure -j "$(nproc)" --timeout 900 --output-junit "$log_dir/tests.xml")
}

stage tests normal_suite
if [ "$QUICK" = 1 ]; then
  stages+=("fuzz: skipped (GPTOSS_QUICK=1)")
else
  # Each fuzz target that ran clean counts as one passed test, each one with a finding as failed.
  targets=$(scripts/fuzz.sh list | wc -l)
  if stage fuzz fuzz_stage; then
    passed=$((passed + targets))
  else
    crashed=$(grep -c 'FOUND A PROBLEM' "$log_dir/fuzz.log")
    ((crashed > 0)) || crashed=1
    failed=$((failed + crashed)) passed=$((passed + targets - crashed))
    failed_names+=("fuzz: $(grep -o '^fuzz_[a-z_0-9]*: FOUND A PROBLEM' "$log_dir/fuzz.log" | tr '\n' ' ')")
  fi
fi

echo "==== summary"
for s in "${stages[@]}"; do echo "  $s"; done
((${#skipped_names[@]})) && printf '  skipped: %s\n' "${skipped_names[@]}"
((${#failed_names[@]})) && printf '  FAILED: %s\n' "${failed_names[@]}"
ran=$((passed + failed))
percent=100
((ran > 0)) && percent=$((passed * 100 / ran))
echo "$percent% tests passed, $failed tests failed out of $ran (all stages); $skipped skipped"
exit $status
