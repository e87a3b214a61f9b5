#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan, fuzz/) in their own build folder and runs
# them on their corpora. See docs/fuzzing.md.
#
#   scripts/fuzz.sh TARGET SECONDS [libFuzzer args...]   one target, e.g. scripts/fuzz.sh gguf 600
#   scripts/fuzz.sh all SECONDS                          every target (CI, via scripts/test.sh: all 20)
#   scripts/fuzz.sh list                                 the target names
#
# Exits non-zero when a target crashes, leaks, times out (5 s per input) or goes past its memory
# limits; the input that did it is left in $BUILD/fuzz-artifacts/<target>/.
# Environment: GPTOSS_FUZZ_BUILD (build folder, default build-fuzz; a folder that
# scripts/sanitize.sh configured is used as it is), GPTOSS_FUZZ_JOBS (ninja -j, and how many
# targets `all` runs at once; default 1), GPTOSS_SHARED_DIR (goldens for the seeds, default ../shared).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${GPTOSS_FUZZ_BUILD:-$ROOT/build-fuzz}"
JOBS="${GPTOSS_FUZZ_JOBS:-1}"
SHARED="${GPTOSS_SHARED_DIR:-$ROOT/../shared}"
TARGETS=(safetensors_header gguf modelbin tokenizer_json config_json harmony_parser)

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

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
  ninja -C "$BUILD" -j "$JOBS" gptoss_fuzzers >/dev/null
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
  nice -n 10 "$BUILD/fuzz/fuzz_$target" \
    -max_total_time="$seconds" -max_len="$(max_len "$target")" -timeout=5 -rss_limit_mb=2048 -malloc_limit_mb=512 \
    -dict="$ROOT/fuzz/dict/fuzz_$target.dict" -artifact_prefix="$artifacts" -print_final_stats=1 \
    "$@" "${dirs[@]}" || status=$?
  # With -fork=N -ignore_crashes=1 libFuzzer exits 0 after a crash: count the new artifacts too.
  if ((status == 0)) && (($(find "$artifacts" -type f | wc -l) > before)); then status=1; fi
  if ((status != 0)); then echo "fuzz_$target: FOUND A PROBLEM, inputs in $artifacts"; fi
  return "$status"
}

[[ $# -ge 1 ]] || usage
case "$1" in
  list) printf '%s\n' "${TARGETS[@]}"; exit 0 ;;
  all)
    [[ $# -ge 2 ]] || usage
    build
    failed=()
    # Up to JOBS targets at a time (each libFuzzer process uses one core); each one's output is
    # printed in one piece when it ends.
    logs="$BUILD/fuzz-logs"
    mkdir -p "$logs"
    for ((first = 0; first < ${#TARGETS[@]}; first += JOBS)); do
      batch=("${TARGETS[@]:first:JOBS}")
      pids=()
      for t in "${batch[@]}"; do run "$t" "$2" >"$logs/$t.log" 2>&1 & pids+=($!); done
      for i in "${!batch[@]}"; do
        wait "${pids[$i]}" || failed+=("${batch[$i]}")
        cat "$logs/${batch[$i]}.log"
      done
    done
    if ((${#failed[@]})); then echo "fuzz: crashes in: ${failed[*]} (inputs in $BUILD/fuzz-artifacts/)"; exit 1; fi
    echo "fuzz: all ${#TARGETS[@]} targets ran $2 s each without a finding"
    ;;
  *)
    [[ $# -ge 2 ]] || usage
    target="${1#fuzz_}"
    [[ " ${TARGETS[*]} " == *" $target "* ]] || { echo "fuzz: unknown target '$1' (scripts/fuzz.sh list)"; exit 2; }
    build
    run "$target" "${@:2}"
    ;;
esac
