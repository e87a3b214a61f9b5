#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan, fuzz/) in their own build folder and runs
# them on their corpora. See docs/fuzzing.md.
#
#   scripts/fuzz.sh replay                               the CI gate: every target over its seeds and
#                                                        fuzz/regressions/<target>/, then a fixed-seed run
#   scripts/fuzz.sh TARGET SECONDS [libFuzzer args...]   one target, e.g. scripts/fuzz.sh gguf 600
#   scripts/fuzz.sh all SECONDS [libFuzzer args...]      every target for SECONDS (open-ended campaigns;
#                                                        e.g. -runs=1000000 to stop at that many executions)
#   scripts/fuzz.sh list                                 the target names
#   scripts/fuzz.sh build                                only build the targets and their seeds
#
# Exits non-zero when a target crashes, leaks, times out (5 s per input) or goes past its memory
# limits; the input that did it is left in $BUILD/fuzz-artifacts/<target>/.
# `replay` runs each seed and committed regression input exactly once, then GPTOSS_FUZZ_RUNS
# (default 2000) runs with -seed=1 and address-space randomisation off on a scratch copy of those
# inputs: no clock, no corpus left by earlier runs, so the same tree gives the same result (the
# same coverage, to the edge) every time.
# Environment: GPTOSS_FUZZ_BUILD (build folder, default build-fuzz; a folder that
# scripts/sanitize.sh configured is used as it is), GPTOSS_FUZZ_JOBS (ninja -j, and how many
# targets `all` and `replay` run at once; default 1), GPTOSS_SHARED_DIR (goldens for the seeds,
# default ../shared), GPTOSS_FUZZ_PREBUILT=1 (use the binaries and seeds already in the build folder,
# built elsewhere and carried to a machine without compilers).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${GPTOSS_FUZZ_BUILD:-$ROOT/build-fuzz}"
JOBS="${GPTOSS_FUZZ_JOBS:-1}"
SHARED="${GPTOSS_SHARED_DIR:-$ROOT/../shared}"
TARGETS=(safetensors_header gguf modelbin tokenizer_json config_json harmony_parser)

usage() { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

# Longest input per target: large enough for the seeds (tiny models are 20-150 KB), small
# enough that every execution is fast.
max_len() {
  case "$1" in
    safetensors_header|gguf) echo 98304 ;;
    tokenizer_json) echo 65536 ;;
    modelbin) echo 163840 ;;
    config_json|harmony_parser) echo 4096 ;;
  esac
}

build() {
  if [[ "${GPTOSS_FUZZ_PREBUILT:-0}" == 1 ]]; then
    for t in "${TARGETS[@]}"; do
      [[ -x "$BUILD/fuzz/fuzz_$t" ]] || { echo "fuzz: GPTOSS_FUZZ_PREBUILT=1 but no $BUILD/fuzz/fuzz_$t"; exit 2; }
    done
    [[ -f "$BUILD/fuzz-seeds/.done" ]] || { echo "fuzz: GPTOSS_FUZZ_PREBUILT=1 but no seeds in $BUILD/fuzz-seeds"; exit 2; }
    return 0
  fi
  mkdir -p "$BUILD"
  exec 9>"$BUILD/.fuzz-build.lock"
  flock 9  # two fuzz.sh started at once must not run ninja in the same folder together
  if [[ ! -f "$BUILD/build.ninja" ]]; then
    local san="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -gline-tables-only"
    local launcher=()
    command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    CC=clang CXX=clang++ cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DGPTOSS_FUZZ=ON -DGPTOSS_BUILD_TESTS=OFF -DGPTOSS_WERROR=ON "${launcher[@]}" \
      "-DCMAKE_CXX_FLAGS=$san" "-DCMAKE_C_FLAGS=$san" >/dev/null
  fi
  ninja -C "$BUILD" -j "$JOBS" gptoss_fuzzers >"$BUILD/.ninja-output" || { cat "$BUILD/.ninja-output"; exit 1; }
  if [[ ! -f "$BUILD/fuzz-seeds/.done" ]]; then
    rm -rf "$BUILD/fuzz-seeds"
    local args=("$BUILD/fuzz-seeds")
    [[ -d "$SHARED/goldens" ]] && args+=(--goldens "$SHARED/goldens")
    [[ -f "$ROOT/.cache/tokenizer.json" ]] && args+=(--tokenizer "$ROOT/.cache/tokenizer.json")
    ASAN_OPTIONS=detect_leaks=0 "$BUILD/fuzz/gptoss_fuzz_seeds" "${args[@]}"
    touch "$BUILD/fuzz-seeds/.done"
  fi
  flock -u 9
}

# The libFuzzer flags every mode shares (input size, per-input time and memory limits, where a
# finding is written), into the array LIMITS.
set_limits() {
  local target="$1"
  LIMITS=(-max_len="$(max_len "$target")" -timeout=5 -rss_limit_mb=2048 -malloc_limit_mb=512
          -artifact_prefix="$BUILD/fuzz-artifacts/$target/")
}

# replay TARGET: each seed and committed regression input once (libFuzzer runs the files it is
# given and exits), then GPTOSS_FUZZ_RUNS runs from -seed=1 in a scratch corpus that starts as a
# copy of those inputs and is deleted afterwards.
replay() {
  local target="$1" runs="${GPTOSS_FUZZ_RUNS:-2000}"
  local binary="$BUILD/fuzz/fuzz_$target" artifacts="$BUILD/fuzz-artifacts/$target/"
  mkdir -p "$artifacts"
  set_limits "$target"
  local dirs=("$BUILD/fuzz-seeds/fuzz_$target") inputs=() regressions=0
  if [[ -d "$ROOT/fuzz/regressions/$target" ]]; then
    dirs+=("$ROOT/fuzz/regressions/$target")
    regressions="$(find "$ROOT/fuzz/regressions/$target" -type f | wc -l)"
  fi
  mapfile -t inputs < <(find "${dirs[@]}" -type f | LC_ALL=C sort)
  echo "== fuzz_$target: ${#inputs[@]} inputs ($regressions committed regressions) once each, then -runs=$runs -seed=1"
  local before status=0 scratch
  before="$(find "$artifacts" -type f | wc -l)"
  scratch="$(mktemp -d "${TMPDIR:-/tmp}/gptoss-fuzz-replay-XXXXXX")"
  if ((${#inputs[@]})); then
    "$binary" "${LIMITS[@]}" "${inputs[@]}" >"$scratch.log" 2>&1 || status=$?
    grep -v '^Running: \|^Executed ' "$scratch.log" || true
  fi
  # What makes a fixed-seed run vary, measured: comparison operands feed the mutator, and with
  # address-space randomisation some are addresses (so setarch -R; a container whose seccomp
  # profile refuses it skips the run rather than give a result that varies); and the corpus
  # folder is re-read once a second, re-running the copied inputs at a point that depends on the
  # clock (so -reload=0).
  if ((status == 0 && runs > 0)) && ! setarch -R true 2>/dev/null; then
    echo "note: setarch -R is refused here, so the -seed=1 run is skipped (its result would vary)"
    runs=0
  fi
  if ((status == 0 && runs > 0)); then
    local i=0
    for f in "${inputs[@]}"; do cp "$f" "$scratch/$((i++))-${f##*/}"; done
    setarch -R "$binary" "${LIMITS[@]}" -seed=1 -runs="$runs" -reload=0 -dict="$ROOT/fuzz/dict/fuzz_$target.dict" \
      -print_final_stats=1 \
      "$scratch" >"$scratch.log" 2>&1 || status=$?
    if ((status == 0)); then grep -E '^#[0-9]+.*DONE|^stat::number_of_executed_units' "$scratch.log" || true
    else tail -n 60 "$scratch.log"; fi
  fi
  rm -rf "$scratch" "$scratch.log"
  if ((status == 0)) && (($(find "$artifacts" -type f | wc -l) > before)); then status=1; fi
  if ((status != 0)); then echo "fuzz_$target: FOUND A PROBLEM, inputs in $artifacts"; fi
  return "$status"
}

# on_every_target FUNCTION [args]: FUNCTION TARGET args for each target, up to JOBS at a time (each
# libFuzzer process uses one core), each one's output printed in one piece when it ends. Sets
# `failed` to the targets that failed.
on_every_target() {
  local function="$1"
  shift
  failed=()
  local logs="$BUILD/fuzz-logs"
  mkdir -p "$logs"
  for ((first = 0; first < ${#TARGETS[@]}; first += JOBS)); do
    local batch=("${TARGETS[@]:first:JOBS}") pids=()
    for t in "${batch[@]}"; do "$function" "$t" "$@" >"$logs/$t.log" 2>&1 & pids+=($!); done
    for i in "${!batch[@]}"; do
      wait "${pids[$i]}" || failed+=("${batch[$i]}")
      cat "$logs/${batch[$i]}.log"
    done
  done
}

# run TARGET SECONDS [args]: the working corpus grows in $BUILD/fuzz-corpus/TARGET; the seeds
# and the committed crash inputs (fuzz/regressions/TARGET) are read as extra corpora.
run() {
  local target="$1" seconds="$2"
  shift 2
  local corpus="$BUILD/fuzz-corpus/$target" artifacts="$BUILD/fuzz-artifacts/$target/"
  mkdir -p "$corpus" "$artifacts"
  local dirs=("$corpus" "$BUILD/fuzz-seeds/fuzz_$target")
  [[ -d "$ROOT/fuzz/regressions/$target" ]] && dirs+=("$ROOT/fuzz/regressions/$target")
  echo "== fuzz_$target for ${seconds}s (corpus $corpus)"
  local before status=0
  before="$(find "$artifacts" -type f | wc -l)"
  set_limits "$target"
  nice -n 10 "$BUILD/fuzz/fuzz_$target" "${LIMITS[@]}" -max_total_time="$seconds" \
    -dict="$ROOT/fuzz/dict/fuzz_$target.dict" -print_final_stats=1 "$@" "${dirs[@]}" || status=$?
  # With -fork=N -ignore_crashes=1 libFuzzer exits 0 after a crash: count the new artifacts too.
  if ((status == 0)) && (($(find "$artifacts" -type f | wc -l) > before)); then status=1; fi
  if ((status != 0)); then echo "fuzz_$target: FOUND A PROBLEM, inputs in $artifacts"; fi
  return "$status"
}

[[ $# -ge 1 ]] || usage
case "$1" in
  list) printf '%s\n' "${TARGETS[@]}"; exit 0 ;;
  build) build ;;
  all)
    [[ $# -ge 2 ]] || usage
    build
    on_every_target run "$2" "${@:3}"
    if ((${#failed[@]})); then echo "fuzz: crashes in: ${failed[*]} (inputs in $BUILD/fuzz-artifacts/)"; exit 1; fi
    echo "fuzz: all ${#TARGETS[@]} targets ran $2 s each without a finding"
    ;;
  replay)
    build
    on_every_target replay
    if ((${#failed[@]})); then echo "fuzz replay: findings in: ${failed[*]} (inputs in $BUILD/fuzz-artifacts/)"; exit 1; fi
    echo "fuzz replay: all ${#TARGETS[@]} targets clean on their seeds, regressions and ${GPTOSS_FUZZ_RUNS:-2000} fixed-seed runs"
    ;;
  *)
    [[ $# -ge 2 ]] || usage
    target="${1#fuzz_}"
    [[ " ${TARGETS[*]} " == *" $target "* ]] || { echo "fuzz: unknown target '$1' (scripts/fuzz.sh list)"; exit 2; }
    build
    run "$target" "${@:2}"
    ;;
esac
