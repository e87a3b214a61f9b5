#!/usr/bin/env bash
# Full-scale measurements on a GPU machine that has no compilers: pack the tools here, run a fixed
# list of steps there. How to measure on a GPU machine in general: README.md, "Measuring on a GPU".
#
#   scripts/gpu_measure.sh pack [BUILD_DIR]   here: the stripped tools, vulkan_tests, the kernel bench,
#                                             libzstd and tokenizer.json into build-pack/pack.tar.xz
#   scripts/gpu_measure.sh [STEP...]          there, from the repository's root (the pack beside it):
#                                             every step by default, in this order
#     tests    vulkan_tests on the device (the goldens are not there: the tests that read them skip)
#     convert  the synthesized 20b (HF checkpoint) and its Q8_0-dense GGUF, timed
#     bench    gptoss-bench of both files: pp512, pp2048, tg128 at depths 0, 4096 and 16384, each
#              variant of VARIANTS (gptoss-bench --variant NAME:KEYS), one JSON
#     eval     each file on the Vulkan engine against itself on cpu-f64 (the engine's noise floor:
#              KL, top-1, PPL), then the Q8_0 GGUF against the HF checkpoint on the Vulkan engine
#     profile  a pp512 of each file with the GPU time per kernel and the pipelines' registers
#              (gptoss-bench --profile --pipeline-stats), one text file per file and variant
#     parity   gptoss-run --parity: the HF checkpoint on cpu and vulkan over a 512-token prompt
#     big      gptoss-bench on synth:120b (generated as it is uploaded, never on disk), and its
#              noise floor over 2 chunks (the Vulkan engine against cpu-f64)
#     peer-build  llama.cpp's llama-bench (CUDA) from the source archive LLAMA_SRC (default
#              build-pack/llama-src.tar.gz: a tarball of a llama.cpp checkout, top folder llama-src/)
#              into WORK/llama, in the background at low priority: name it first, beside steps that
#              take as long (about 6 minutes on 16 cores), since a machine may end a call's processes
#     peer     llama-bench (LLAMA_BENCH=path, default the peer-build's, waited for) on the Q8_0
#              GGUF, the same tests, JSON (OUT/PEER_NAME.json, default peer-20b: name each build or
#              setting of the peer, e.g. its Vulkan backend with GGML_VK_DISABLE_COOPMAT2=1 and without);
#              PEER_ARGS are added to its command line (e.g. "-ub 2048", the micro-batch of our
#              default prefill chunk, where llama-bench's default is 512)
# Results land in OUT (default ./out): summary.md and one JSON per bench and eval. Model files in
# WORK (default /var/tmp/gptoss-work). Settings: R (repetitions, 5), CHUNKS (eval, 4), VARIANTS.
# The Vulkan loader and driver are the machine's business, not this script's.
set -uo pipefail
cd "$(dirname "$0")/.."
PACK=build-pack/pack.tar.xz

if [ "${1:-}" = pack ]; then
  set -e
  build=${2:-build}
  stage=$(mktemp -d)
  mkdir -p "$stage/bin" "$stage/lib" build-pack
  for tool in gptoss-synth gptoss-convert gptoss-run gptoss-bench gptoss-eval; do strip -o "$stage/bin/$tool" "$build/tools/$tool"; done
  strip -o "$stage/bin/vulkan_tests" "$build/tests/vulkan/vulkan_tests"
  strip -o "$stage/bin/vulkan_kernel_bench" "$build/tests/vulkan/bench/vulkan_kernel_bench"
  cp -L "$(ldconfig -p | awk '$1 == "libzstd.so.1" && /x86-64/ {print $NF; exit}')" "$stage/lib/"
  cp .cache/tokenizer.json "$stage/"
  git rev-parse --short HEAD >"$stage/COMMIT"
  tar -C "$stage" -cJf "$PACK" .
  rm -rf "$stage"
  ls -l "$PACK"
  exit 0
fi

OUT=${OUT:-$PWD/out} WORK=${WORK:-/var/tmp/gptoss-work} R=${R:-5} CHUNKS=${CHUNKS:-4}
KIT=$WORK/kit BIN=$WORK/kit/bin HF=$WORK/s20b/hf Q8=$WORK/q8_0.gguf TEXT=data/eval/gnu-licenses.txt
mkdir -p "$OUT" "$KIT"
exec > >(tee -a "$OUT/summary.md") 2>&1
[ -x "$BIN/gptoss-run" ] || tar -C "$KIT" -xJf "$PACK" || { echo "no $PACK: run scripts/gpu_measure.sh pack first"; exit 2; }
export LD_LIBRARY_PATH=$KIT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
echo "## $(date -u +%FT%TZ), tools at $(cat "$KIT/COMMIT"), $(nproc) cores"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null
"$BIN"/gptoss-run --list-devices
run() {  # run LABEL COMMAND...: the command, its wall time and exit status
  local label=$1 start=$EPOCHREALTIME
  shift
  echo "### $label"
  "$@"
  echo "-- $label: exit $?, $(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", b - a}') s"
}
variants=()
for v in ${VARIANTS:-}; do variants+=(--variant "$v"); done
tests() { run vulkan_tests "$BIN"/vulkan_tests --gtest_brief=1 --gtest_filter='-GptossRunVulkan.*'; }
convert() {
  [ -f "$HF/config.json" ] || run synth "$BIN"/gptoss-synth "$WORK/s20b" --preset 20b --layouts hf --tokenizer "$KIT/tokenizer.json"
  [ -f "$Q8" ] || run "convert HF -> Q8_0 GGUF" "$BIN"/gptoss-convert "$HF" "$Q8" -q --dense q8_0
}
bench() {
  run "bench 20b" "$BIN"/gptoss-bench "$HF" "$Q8" -p 512,2048 -n 128 -d 0,4096,16384 -r "$R" -q -o md \
    --save "$OUT/bench-20b.json" "${variants[@]}"
}
evaluate() {
  for model in "$HF" "$Q8"; do
    run "eval floor $(basename "$model")" "$BIN"/gptoss-eval "$model" --text "$TEXT" --chunks "$CHUNKS" \
      --engine vulkan --reference-engine cpu-f64 --floor-chunks "$CHUNKS" --json >"$OUT/eval-floor-$(basename "$model").json"
  done
  run "eval Q8_0 vs HF" "$BIN"/gptoss-eval "$HF" "$Q8" --text "$TEXT" --chunks 32 --engine vulkan --json >"$OUT/eval-q8_0.json"
}
profile() {
  local model v name
  for model in "$HF" "$Q8"; do
    for v in default ${VARIANTS:-}; do
      name=${v%%:*}
      local tuning=()
      [ "$v" != default ] && tuning=(--tuning "${v#*:}")
      run "profile $(basename "$model") $name" "$BIN"/gptoss-bench "$model" -p 512 -n 0 -r 2 -q -o md --profile \
        --pipeline-stats "${tuning[@]}" >"$OUT/profile-$(basename "$model")-$name.txt" 2>&1
      grep -E "pp512|prefill|Register" "$OUT/profile-$(basename "$model")-$name.txt" | head -24
    done
  done
}
parity() {
  local ids
  ids=$("$BIN"/gptoss-run "$HF" -p "$(head -c 3000 "$TEXT")" --no-harmony -n 0 --engine vulkan --json | tr -d ' \n' |
    grep -o '"prompt_tokens":\[[0-9,]*' | cut -d[ -f2 | cut -d, -f1-512)
  run "parity 512 tokens" "$BIN"/gptoss-run "$HF" --engines cpu,vulkan --prompt-tokens "$ids"
}
big() {
  run "bench 120b" "$BIN"/gptoss-bench synth:120b -p 512 -n 128 -r 3 -q -o md --save "$OUT/bench-120b.json"
  run "eval floor 120b" timeout 400 "$BIN"/gptoss-eval synth:120b --tokenizer "$KIT/tokenizer.json" --text "$TEXT" --chunks 2 \
    --engine vulkan --reference-engine cpu-f64 --floor-chunks 2 --json >"$OUT/eval-floor-120b.json"
}
LLAMA_DIR=$WORK/llama
peer_build() {
  local src=${LLAMA_SRC:-build-pack/llama-src.tar.gz}
  [ -x "$LLAMA_DIR/build/bin/llama-bench" ] && { echo "peer-build: $LLAMA_DIR/build/bin/llama-bench is there"; return 0; }
  [ -f "$src" ] || { echo "peer-build: no $src"; return 0; }
  mkdir -p "$LLAMA_DIR" && tar -C "$LLAMA_DIR" -xzf "$src" || return 1
  echo "### peer-build: llama.cpp from $src in the background, log $LLAMA_DIR/build.log"
  ( cd "$LLAMA_DIR" && start=$EPOCHREALTIME &&
    nice -n 5 cmake -S llama-src -B build -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" \
      -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
      -DLLAMA_BUILD_SERVER=OFF >build.log 2>&1 &&
    nice -n 5 cmake --build build --target llama-bench -j "$(nproc)" >>build.log 2>&1
    echo "exit $?, $(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", b - a}') s" >build.done ) &
  echo $! >"$LLAMA_DIR/build.pid"
}
peer() {
  if [ -z "${LLAMA_BENCH:-}" ] && [ -f "$LLAMA_DIR/build.pid" ]; then
    while kill -0 "$(cat "$LLAMA_DIR/build.pid")" 2>/dev/null; do sleep 5; done
    echo "peer-build: $(cat "$LLAMA_DIR/build.done" 2>/dev/null || echo 'ended without a result')"
  fi
  LLAMA_BENCH=${LLAMA_BENCH:-$LLAMA_DIR/build/bin/llama-bench}
  [ -x "$LLAMA_BENCH" ] || { echo "peer: no llama-bench (LLAMA_BENCH, or the peer-build step)"; return 0; }
  # shellcheck disable=SC2086  # PEER_ARGS: words
  run "llama-bench Q8_0" "$LLAMA_BENCH" -m "$Q8" -p 512,2048 -n 128 -d 0,4096,16384 -r "$R" -fa 1 -ngl 99 ${PEER_ARGS:-} -o json >"$OUT/${PEER_NAME:-peer-20b}.json"
}
for step in ${@:-tests convert bench eval profile parity big}; do
  case $step in
    tests | convert | bench | profile | parity | big | peer) $step ;;
    peer-build) peer_build ;;
    eval) evaluate ;;
    *) echo "unknown step $step" && exit 2 ;;
  esac
done
