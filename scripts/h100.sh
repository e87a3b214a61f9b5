#!/usr/bin/env bash
# The full-scale measurements of issues 13, 14 and 15 on the GPU machine (device tool: no compilers,
# no network, no Vulkan loader, files gone when the machine goes back). Two halves:
#
#   scripts/h100.sh pack              here: stripped tools, test binaries, the shared libraries the
#                                     image lacks (OpenBLAS, zstd), GNU time and tokenizer.json
#                                     into build-h100/pack.tar.xz (a few MB; carry build-h100 and
#                                     .gl with the working tree)
#   scripts/h100.sh STEP...           there: the steps in order; each writes what it measured under
#                                     $OUT (the device tool brings back at most 8 files: summary.md,
#                                     log.txt, and one JSON per bench or eval)
#
# Steps:
#   tests      vulkan_tests on the device (every kernel against its reference; the goldens are not
#              there, so the tests that read them skip; the CLI tests need the build folder)
#   synth      the synthesized 20b's HF checkpoint alone (what sweep, ab and profile variants need)
#   q8         the Q8_0-dense GGUF alone, converted from it (what `AB_ON=q8_0` needs; convert makes it too)
#   convert    scripts/bench_conversion.sh on the synthesized 20b: synth, the copy floor, HF -> Q8_0
#              GGUF / model.bin / BF16 GGUF (kept in WORK for the next steps), manifest, check
#   bench      gptoss-bench on the HF checkpoint and the Q8_0 GGUF: ppP, tgN, both at depth DEPTH,
#              with each KV cache type of KV_CACHES (default f32; "f32 f16" for both)
#   profile    GPTOSS_VK_PROFILE=1 kernel tables of one prefill and one decode (HF and Q8_0)
#   eval       gptoss-eval of the Q8_0 GGUF, BF16 GGUF and model.bin against the HF checkpoint over
#              CHUNKS x CTX tokens, then the speed of one pair (HF vs Q8_0)
#   parity     the Vulkan engine against the CPU engine (cpu-f64 where the host holds it) at 20b,
#              on GPL-3's first 16 and 64 tokens
#   parity_long the CPU engine against Vulkan on 128-512 tokens (PARITY_LENGTHS), then ENGINES_512
#              (cpu-f64,cpu) on 512: where along a long prompt the engines part
#   ppsamples  every timed run of ppP in several gptoss-bench processes (PP_PROCESSES, PP_R,
#              PP_VARIANTS): which runs are slow
#   decode     after a 512-token prompt: the CPU and Vulkan engines' decode steps compared
#              (gptoss-run --engines cpu,vulkan --decode-steps), then greedy decode on the CPU
#              engine and on the Vulkan engine in each of DECODE_VARIANTS: the same tokens?
#   big        gptoss-bench on synth:120b (generated while it is uploaded; 65 GB never on disk), with
#              each KV cache type of KV_CACHES
#   parity120b the parity step on synth:120b
#   sweep      tgN of the HF checkpoint with the defaults and each of VARIANTS (environment
#              settings such as GPTOSS_VK_EXPERT, GPTOSS_VK_MATVEC; ';' joins several; a part that
#              starts with -- is a gptoss-bench option instead: --kv-cache=f16), then tgN at depth
#              DEPTH with the defaults and each of DEEP_VARIANTS (GPTOSS_VK_ATTN_SPLITS); SWEEP_ON: hf
#              (default), q8_0 or both
#   ab         tgN and tgN at depth DEPTH of the HF checkpoint (AB_ON: hf, q8_0 or both) with other commits' gptoss-bench
#              (build-h100/base*/gptoss-bench, packed by `scripts/h100.sh pack-base BUILD_DIR [NAME]`
#              here) and this pack's, alternated AB_ROUNDS times (default 2): changes measured on one
#              machine, apart from the few percent that machines differ by; AB_NEW_OPTIONS: more rows
#              of this pack's with gptoss-bench options or environment settings (space-separated,
#              ';' joins: --kv-cache=f16;GPTOSS_VK_EXPERT_GROUPS=2), AB_BASE_OPTIONS the same for every base;
#              AB_PLAIN=0: only the rows with options (each side that has some)
#   kernels    vulkan_kernel_bench: each kernel alone at gpt-oss-20b shapes (SECTIONS of prefill,
#              decode, matvec (decode's dense products alone), attention, stream and floor: the bytes decode attention and the other decode
#              kernels read, read by a kernel that does nothing else), with the driver's statistics of each pipeline, then the
#              SECTIONS (default decode) with each of KERNEL_VARIANTS (environment, as VARIANTS)
#   fuzz       every libFuzzer target at once (pack with FUZZ_BUILD=build-asan), FUZZ_RUNS executions
#              each (default 10^6) or FUZZ_SECONDS (540), whichever comes first
#   diagnose   VulkanWideLayer (one layer at 20b widths against a double reference) with the
#              cooperative GEMMs, without them, and without the split f16 inputs
#
# Environment: WORK (model files; default /var/tmp/gptoss-work, on the disk: /tmp may be RAM),
# P (512), N (128), DEPTH (4096), R (3), CTX (512), CHUNKS (32), TEXT (data/eval/gnu-licenses.txt),
# SHARD (5000000000 bytes: the synthesized checkpoint in shards of at most this size, as the published 20b is
# three files; 0 for one file); VARIANTS, DEEP_VARIANTS (sweep), SECTIONS, KERNEL_VARIANTS
# (kernels), PROFILE_VARIANTS (profile: decode profiles with each first, of PROFILE_ON: hf, q8_0 or
# both, default hf; environment settings and gptoss-bench options; with PROFILE_VARIANTS_ONLY=1 nothing else): space-separated, each variant environment settings joined by ';';
# KV_CACHES (bench, big), AB_ON, AB_NEW_OPTIONS and AB_BASE_OPTIONS (ab), PARITY_OPTIONS (parity: gptoss-run options).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PACK=build-h100/pack.tar.xz

if [ "${1:-}" = pack-base ]; then  # pack-base BUILD_DIR [NAME]: a baseline gptoss-bench for the ab step
  set -e
  dir=build-h100/${3:-base}
  mkdir -p "$dir"
  strip -o "$dir/gptoss-bench" "${2:?pack-base BUILD_DIR [NAME]}/tools/gptoss-bench"
  src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$2/CMakeCache.txt")
  git -C "$src" rev-parse --short HEAD >"$dir/COMMIT"
  ls -l "$dir"
  exit 0
fi

if [ "${1:-}" = pack ]; then
  set -e
  build=${BUILD_DIR:-build}
  stage=$(mktemp -d)
  mkdir -p "$stage/bin" "$stage/lib" build-h100
  for tool in gptoss-synth gptoss-convert gptoss-run gptoss-verify gptoss-bench gptoss-eval; do
    strip -o "$stage/bin/$tool" "$build/tools/$tool"
  done
  strip -o "$stage/bin/vulkan_tests" "$build/tests/vulkan/vulkan_tests"
  strip -o "$stage/bin/vulkan_kernel_bench" "$build/tests/vulkan/bench/vulkan_kernel_bench"
  cp /usr/bin/time "$stage/bin/time"
  # What the image may lack: Debian's OpenBLAS (with its Fortran runtime) and zstd. libc,
  # libstdc++ and libcrypto stay the system's (the NVIDIA driver loads into the same process).
  for lib in libopenblas.so.0 libgfortran.so.5 libquadmath.so.0 libzstd.so.1; do
    cp -L "$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ {print $NF; exit}')" "$stage/lib/$lib"
  done
  cp .cache/tokenizer.json "$stage/tokenizer.json"
  git rev-parse --short HEAD >"$stage/COMMIT"  # the device's copy of the tree has no history
  if [ -n "${FUZZ_BUILD:-}" ]; then  # the libFuzzer targets and their seeds (scripts/fuzz.sh's build folder)
    mkdir -p "$stage/fuzzbuild/fuzz"
    for f in "$FUZZ_BUILD"/fuzz/fuzz_*; do [ -x "$f" ] && [ -f "$f" ] && cp "$f" "$stage/fuzzbuild/fuzz/"; done
    cp -r "$FUZZ_BUILD/fuzz-seeds" "$stage/fuzzbuild/"
  fi
  tar -C "$stage" -cJf "$PACK" .
  rm -rf "$stage"
  ls -l "$PACK"
  echo "carry: build-h100 .gl; then: scripts/h100.sh STEP..."
  exit 0
fi

OUT=${OUT:-$ROOT/out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
SUMMARY=$OUT/summary.md
WORK=${WORK:-/var/tmp/gptoss-work}
P=${P:-512} N=${N:-128} DEPTH=${DEPTH:-4096} R=${R:-3}
CTX=${CTX:-512} CHUNKS=${CHUNKS:-32} TEXT=${TEXT:-data/eval/gnu-licenses.txt} SHARD=${SHARD:-5000000000}
KIT=/var/tmp/gptoss-kit
BIN=$KIT/bin
HF=$WORK/s20b/hf Q8=$WORK/q8_0.gguf BF16=$WORK/bf16.gguf MB=$WORK/model.bin
note() { echo "$*" | tee -a "$SUMMARY"; }
timed() {  # timed LABEL COMMAND...: runs it (its stdout into the summary), records its wall time
  local label=$1 start=$EPOCHREALTIME rc=0
  shift
  "$@" | tee -a "$SUMMARY"
  rc=${PIPESTATUS[0]}
  local took
  took=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", b - a}')
  if ((rc)); then note "-- $label: FAILED (exit $rc) after $took s"; else note "-- $label: $took s"; fi
  return 0
}

setup() {
  if [ ! -x "$BIN/gptoss-run" ]; then
    mkdir -p "$KIT" && tar -C "$KIT" -xJf "$PACK" || { echo "no $PACK: run scripts/h100.sh pack here first"; exit 2; }
  fi
  export LD_LIBRARY_PATH=$KIT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  if ! ldconfig -p | grep -q libvulkan.so.1; then
    for f in .gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
  fi
  local icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  [ -z "${VK_DRIVER_FILES:-}" ] && [ -f "$icd" ] && export VK_DRIVER_FILES=$icd
  mkdir -p "$WORK"
  {
    echo "## $(date -u +%Y-%m-%dT%H:%M:%SZ), tools built at commit $(cat "$KIT/COMMIT" 2>/dev/null || echo unknown)"
    echo '```'
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') x $(nproc); memory $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
    "$BIN"/gptoss-run --list-devices 2>&1
    echo "disk: $(df -h --output=avail,size "$WORK" | tail -1) free/size at $WORK"
    echo '```'
  } >>"$SUMMARY"
  cat "$SUMMARY"
}

step_tests() {
  note "### vulkan_tests"
  # GptossRunVulkan.* run the gptoss-run of the build folder they were compiled in: not here.
  timed "vulkan_tests" "$BIN"/vulkan_tests --gtest_brief=1 --gtest_filter='-GptossRunVulkan.*'
}

step_convert() {
  note "### conversion (scripts/bench_conversion.sh)"
  if [ -f "$HF/config.json" ] && [ -f "$Q8" ] && [ -f "$MB" ]; then note "files already there"; return 0; fi
  BIN=$BIN TIMER=$BIN/time TOKENIZER=$KIT/tokenizer.json SYNTH_ARGS="--max-shard-size $SHARD" \
    KEEP=1 KEEP_OUTPUTS=1 BACK=0 MODEL_DIR=$WORK/s20b Q8_OUT=$Q8 MB_OUT=$MB BF16_OUT=$BF16 \
    timed "bench_conversion" scripts/bench_conversion.sh "$WORK/conversion"
  ls -l "$HF" "$WORK"
  df -h "$WORK" | tail -1
}

step_synth() {  # the HF checkpoint alone, for steps that need nothing else (sweep, ab, profile variants)
  note "### gptoss-synth (HF checkpoint only)"
  [ -f "$HF/config.json" ] && { note "already there"; return 0; }
  timed "synth" "$BIN"/gptoss-synth "$WORK/s20b" --preset 20b --layouts hf --tokenizer "$KIT/tokenizer.json" \
    --max-shard-size "$SHARD"
}

step_q8() {  # the Q8_0-dense GGUF alone, converted from the HF checkpoint (after synth)
  note "### gptoss-convert HF -> Q8_0 GGUF"
  [ -f "$Q8" ] && { note "already there"; return 0; }
  timed "convert q8_0" "$BIN"/gptoss-convert "$HF" "$Q8" -q --dense q8_0
}

bench() {  # bench NAME MODEL [gptoss-bench options]
  local name=$1 model=$2
  shift 2
  note "### gptoss-bench $model $*"
  timed "bench $name" "$BIN"/gptoss-bench "$model" -p "$P" -n "$N" -d "0,$DEPTH" -r "$R" -o md -q \
    --save "$OUT/$name.json" "$@"
}
step_bench() {
  local cache suffix
  for cache in ${KV_CACHES:-f32}; do
    suffix=$([ "$cache" = f32 ] || echo "-$cache")
    bench "hf$suffix" "$HF" --kv-cache "$cache"
    bench "q8_0$suffix" "$Q8" --kv-cache "$cache"
  done
  note "greedy decode (argmax on the device):"
  "$BIN"/gptoss-bench "$HF" -p 0 -n "$N" -r "$R" --greedy -o md -q | tee -a "$SUMMARY"
}
step_profile() {
  local which model
  for which in ${PROFILE_ON:-hf}; do
    model=$(model_named "$which") || { note "-- profile: FAILED (PROFILE_ON takes hf and q8_0, not $which)"; return 0; }
    for variant in ${PROFILE_VARIANTS:-}; do
      note "### GPTOSS_VK_PROFILE=1 with $variant, $model: decode of $N (warm-up + 1 run)"
      split_words "${variant//;/ }"
      env "${ENVS[@]}" GPTOSS_VK_PROFILE=1 "$BIN"/gptoss-bench "$model" -p 0 -n "$N" -r 1 -o md -q "${OPTS[@]}" 2>&1 |
        tee -a "$SUMMARY"
    done
  done
  [ -n "${PROFILE_VARIANTS:-}" ] && [ -n "${PROFILE_VARIANTS_ONLY:-}" ] && return 0
  for model in "$HF" "$Q8"; do
    note "### GPTOSS_VK_PROFILE=1, $model: prefill of $P (warm-up + 1 run)"
    GPTOSS_VK_PROFILE=1 "$BIN"/gptoss-bench "$model" -p "$P" -n 0 -r 1 -o md -q 2>&1 | tee -a "$SUMMARY"
    note "### GPTOSS_VK_PROFILE=1, $model: decode of $N (warm-up + 1 run)"
    GPTOSS_VK_PROFILE=1 "$BIN"/gptoss-bench "$model" -p 0 -n "$N" -r 1 -o md -q 2>&1 | tee -a "$SUMMARY"
  done
}

step_eval() {
  local models=("$Q8" "$MB")
  [ -f "$BF16" ] && models=("$Q8" "$BF16" "$MB")
  note "### gptoss-eval: ${models[*]} against $HF, $CHUNKS x $CTX tokens of $TEXT"
  timed "gptoss-eval" "$BIN"/gptoss-eval "$HF" "${models[@]}" --text "$TEXT" --ctx "$CTX" --chunks "$CHUNKS" \
    --engine vulkan
  note "### evaluation speed of one pair"
  timed "gptoss-eval HF vs Q8_0, 8 chunks" "$BIN"/gptoss-eval "$HF" "$Q8" --text "$TEXT" --ctx "$CTX" --chunks 8 --engine vulkan
}

# gptoss-run --engines CPU,vulkan on GPL-3's preamble (o200k ids), 16 and 64 tokens.
P16=976,8833,5694,5473,3312,382,261,2240,11,8039,161773,9745,395,4305,326,1273
P64=$P16,16229,328,5882,13,623,36477,395,1645,4305,326,1273,17377,5882,553,6884,316,2304,4194,634,19165,316,5143,326,3343,290,5882,13,4534,20663,11,290,8833,5694,5473,3312,382,15663,316,16218,634,19165,316,5143,326,3343,722,17980,328
P512=$P64,$P64,$P64,$P64,$P64,$P64,$P64,$P64  # the long steps' prompt: past 256 keys, the sliding window full
parity_on() {  # parity_on MODEL CPU_ENGINE
  for prompt in "$P16" "$P64"; do
    note "### parity $1, $2 vs vulkan, $(tr ',' '\n' <<<"$prompt" | wc -l) tokens"
    # shellcheck disable=SC2086  # PARITY_OPTIONS: gptoss-run options (--kv-cache f16: both engines' caches)
    timed "parity" "$BIN"/gptoss-run "$1" --engines "$2,vulkan" --prompt-tokens "$prompt" ${PARITY_OPTIONS:-}
  done
}
step_parity() { parity_on "$HF" "${CPU_ENGINE:-cpu-f64}"; }
# Parity over longer prompts: GPL-3's first 64 tokens repeated to each length of PARITY_LENGTHS
# (128 256 384 512), the CPU engine (f32) against the Vulkan engine, then ENGINES_512 (cpu-f64,cpu)
# at 512: where along the prompt the engines part (a token routed to other experts: a near tie in
# the router's top-k) and whether two CPU engines part too.
step_parity_long() {
  local prompt=$P512 length
  for length in ${PARITY_LENGTHS:-128 256 384 512}; do
    note "### parity, cpu vs vulkan, the first $length tokens of the decode step's prompt"
    timed "parity $length" "$BIN"/gptoss-run "$HF" --engines cpu,vulkan --prompt-tokens "$(cut -d, -f1-"$length" <<<"$prompt")"
  done
  note "### parity, ${ENGINES_512:-cpu-f64,cpu}, 512 tokens"
  timed "parity 512" "$BIN"/gptoss-run "$HF" --engines "${ENGINES_512:-cpu-f64,cpu}" --prompt-tokens "$prompt"
}
# After GPL-3's first 64 tokens repeated 8 times (512 tokens: past the short attention shape's 256
# keys, the sliding window full), DECODE_TOKENS (64) decode steps: first gptoss-run's parity of the
# CPU engine and the Vulkan engine with --decode-steps (both fed the CPU engine's greedy tokens:
# each step's difference, and how near a tie the CPU engine's choice was), then free-running greedy
# decode on the CPU engine and on the Vulkan engine in each of DECODE_VARIANTS: the same tokens?
step_decode() {
  local prompt=$P512 variant tokens reference=""
  note "### parity of ${DECODE_TOKENS:-64} decode steps after 512 prompt tokens, CPU engine against Vulkan, $HF"
  timed "parity with decode steps" "$BIN"/gptoss-run "$HF" --engines cpu,vulkan --prompt-tokens "$prompt" \
    --decode-steps "${DECODE_TOKENS:-64}"
  note "### greedy decode of ${DECODE_TOKENS:-64} tokens after 512 prompt tokens, $HF"
  for variant in "--engine=cpu" ${DECODE_VARIANTS:---engine=vulkan --engine=vulkan;GPTOSS_VK_ATTN_KEY_LANES=1 --engine=vulkan;--kv-cache=f16}; do
    split_words "${variant//;/ }"
    tokens=$(env "${ENVS[@]}" "$BIN"/gptoss-run "$HF" --prompt-tokens "$prompt" -n "${DECODE_TOKENS:-64}" --temperature 0 \
      --no-default-stops --json "${OPTS[@]}" | grep -o '"tokens":\[[^]]*\]')
    [ -z "$reference" ] && reference=$tokens
    if [ -z "$tokens" ]; then note "-- decode $variant: FAILED (no tokens)"
    elif [ "$tokens" = "$reference" ]; then note "$variant: the CPU engine's tokens"
    else note "$variant: DIFFERENT: $tokens"; fi
  done
  note "CPU engine: $reference"
}
# Every timed run of ppP in PP_PROCESSES (6) gptoss-bench processes of PP_R (8) runs each, in ms, on
# the HF checkpoint, then with each of PP_VARIANTS (as VARIANTS): which runs are slow, and in which
# processes.
step_ppsamples() {
  local variant i samples
  note "### pp$P: every run's ms, ${PP_PROCESSES:-6} processes of -r ${PP_R:-8}, $HF"
  for variant in "" ${PP_VARIANTS:-}; do
    split_words "${variant//;/ }"
    for i in $(seq "${PP_PROCESSES:-6}"); do
      samples=$(env "${ENVS[@]}" "$BIN"/gptoss-bench "$HF" -p "$P" -n 0 -r "${PP_R:-8}" -o json -q "${OPTS[@]}" | tr -d ' \n' |
        grep -o '"samples_ns":\[[^]]*\]' | sed 's/[^0-9,]//g' | awk -F, '{for (i = 1; i <= NF; ++i) printf "%.1f ", $i / 1e6}')
      note "${variant:-(defaults)} #$i: ${samples:-FAILED}"
    done
  done
}
step_big() {
  local cache suffix
  for cache in ${KV_CACHES:-f32}; do
    suffix=$([ "$cache" = f32 ] || echo "-$cache")
    note "### gptoss-bench synth:120b --kv-cache $cache"
    timed "bench synth:120b" "$BIN"/gptoss-bench synth:120b -p "$P" -n "$N" -d "0,$DEPTH" -r "$R" -o md -q \
      --kv-cache "$cache" --save "$OUT/big$suffix.json"
  done
}
step_parity120b() { parity_on synth:120b "${CPU_ENGINE:-cpu-f64}"; }

# Each variant: environment settings joined by ';' (GPTOSS_VK_EXPERT=2,1,4,1;GPTOSS_VK_MATVEC=1,4).
KERNEL_VARIANTS=${KERNEL_VARIANTS:-}
VARIANTS=${VARIANTS:-"GPTOSS_VK_EXPERT=2,3,4,3 GPTOSS_VK_MATVEC=1,4 GPTOSS_VK_MATVEC=1,12"}
DEEP_VARIANTS=${DEEP_VARIANTS:-"GPTOSS_VK_ATTN_SPLITS=64"}
sweep_one() {  # sweep_one MODEL VARIANT gptoss-bench-options...
  local model=$1 variant=$2 part settings=() options=()
  shift 2
  for part in ${variant//;/ }; do
    if [[ $part == --* ]]; then options+=("$part"); else settings+=("$part"); fi
  done
  note "#### ${variant:-(defaults)}: $*"
  env "${settings[@]}" "$BIN"/gptoss-bench "$model" -r "$R" -o md -q "$@" "${options[@]}" 2>&1 | tail -1 | tee -a "$SUMMARY"
}
step_sweep() {
  local which model
  for which in ${SWEEP_ON:-hf}; do
    model=$(model_named "$which") || { note "-- sweep: FAILED (SWEEP_ON takes hf and q8_0, not $which)"; return 0; }
    note "### decode variants of $model (the kernels' shapes from the environment, compared without rebuilding)"
    for variant in "" $VARIANTS; do sweep_one "$model" "$variant" -p 0 -n "$N"; done
    for variant in "" $DEEP_VARIANTS; do sweep_one "$model" "$variant" -p 0 -n "$N" -d "$DEPTH"; done
  done
}
# The file of a name in AB_ON / PROFILE_ON: hf (the HF checkpoint) or q8_0 (the Q8_0 GGUF).
model_named() {
  case "$1" in
    hf) echo "$HF" ;;
    q8_0) echo "$Q8" ;;
    *) return 1 ;;
  esac
}

# A row's words into ENVS (environment settings, NAME=VALUE) and OPTS (gptoss-bench options).
split_words() {
  ENVS=() OPTS=()
  local word
  for word in $1; do
    if [[ $word =~ ^[A-Z_][A-Z0-9_]*= ]]; then ENVS+=("$word"); else OPTS+=("$word"); fi
  done
}

step_ab() {
  local tools=() names=() dir
  for dir in "$ROOT"/build-h100/base*/; do
    [ -x "$dir/gptoss-bench" ] || continue
    tools+=("$dir/gptoss-bench")
    names+=("$(basename "$dir") $(cat "$dir/COMMIT" 2>/dev/null)")
  done
  ((${#tools[@]})) || { note "-- ab: FAILED (no build-h100/base*/gptoss-bench: scripts/h100.sh pack-base BUILD_DIR)"; return 0; }
  local options=() extra bases=${#tools[@]}
  for i in "${!tools[@]}"; do options+=(""); done
  for extra in ${AB_BASE_OPTIONS:-}; do
    for ((i = 0; i < bases; ++i)); do
      tools+=("${tools[$i]}")
      names+=("${names[$i]} ${extra//;/ }")
      options+=("${extra//;/ }")
    done
  done
  if [ "${AB_PLAIN:-1}" = 0 ] && [ -n "${AB_BASE_OPTIONS:-}" ]; then  # the option rows only
    tools=("${tools[@]:bases}") names=("${names[@]:bases}") options=("${options[@]:bases}")
  fi
  if [ "${AB_PLAIN:-1}" != 0 ] || [ -z "${AB_NEW_OPTIONS:-}" ]; then
    tools+=("$BIN/gptoss-bench")
    names+=("new $(cat "$KIT/COMMIT")")
    options+=("")
  fi
  for extra in ${AB_NEW_OPTIONS:-}; do
    tools+=("$BIN/gptoss-bench")
    names+=("new $(cat "$KIT/COMMIT") ${extra//;/ }")
    options+=("${extra//;/ }")
  done
  local which model
  for which in ${AB_ON:-hf}; do
    model=$(model_named "$which") || { note "-- ab: FAILED (AB_ON takes hf and q8_0, not $which)"; return 0; }
    note "### A/B on one machine, $model: ${names[*]}"
    for depth in 0 "$DEPTH"; do
      for round in $(seq "${AB_ROUNDS:-2}"); do
        for i in "${!tools[@]}"; do
          note "#### ${names[$i]}, round $round: -p 0 -n $N -d $depth"
          split_words "${options[$i]}"
          env "${ENVS[@]}" "${tools[$i]}" "$model" -p 0 -n "$N" -d "$depth" -r "$R" -o md -q "${OPTS[@]}" 2>&1 |
            tail -1 | tee -a "$SUMMARY"
        done
      done
    done
  done
}
step_kernels() {
  note "### vulkan_kernel_bench (GPU timestamps; driver statistics of each pipeline)"
  GPTOSS_VK_PIPELINE_STATS=1 timed "vulkan_kernel_bench" "$BIN"/vulkan_kernel_bench 20 "${SECTIONS:-prefill,decode,attention}"
  for variant in $KERNEL_VARIANTS; do
    note "#### $variant: vulkan_kernel_bench 20 ${SECTIONS:-decode}"
    env GPTOSS_VK_PIPELINE_STATS=1 ${variant//;/ } "$BIN"/vulkan_kernel_bench 20 "${SECTIONS:-decode}" 2>&1 |
      grep -E '^\| [a-z]|Register Count' | tee -a "$SUMMARY"
  done
}
step_fuzz() {
  note "### scripts/fuzz.sh all ${FUZZ_SECONDS:-540} -runs=${FUZZ_RUNS:-1000000}, every target at once"
  local log=$WORK/fuzz.log start=$SECONDS rc=0
  GPTOSS_FUZZ_BUILD=$KIT/fuzzbuild GPTOSS_FUZZ_PREBUILT=1 GPTOSS_FUZZ_JOBS=6 \
    scripts/fuzz.sh all "${FUZZ_SECONDS:-540}" -runs="${FUZZ_RUNS:-1000000}" >"$log" 2>&1 || rc=$?
  grep -E '^== fuzz_|^Done [0-9]+ runs|^stat::number_of_executed_units|^stat::peak_rss|FOUND|^fuzz:' "$log" |
    tee -a "$SUMMARY"
  if ((rc)); then
    note "-- fuzz campaign: FAILED (exit $rc) after $((SECONDS - start)) s"
    find "$KIT/fuzzbuild/fuzz-artifacts" -type f | head -5 | while read -r f; do cp "$f" "$OUT/"; done
  else note "-- fuzz campaign: $((SECONDS - start)) s"; fi
}
step_diagnose() {
  for variant in "" GPTOSS_VK_NO_COOPMAT=1 GPTOSS_VK_COOP_SPLIT=0; do
    note "### VulkanWideLayer ${variant:-(defaults)}"
    env $variant "$BIN"/vulkan_tests --gtest_filter='VulkanWideLayer.*' 2>&1 | grep -E "error|OK|FAILED" | tee -a "$SUMMARY"
  done
}

setup
for step in "$@"; do
  case "$step" in
    tests|synth|q8|convert|bench|profile|eval|parity|parity_long|decode|ppsamples|big|parity120b|sweep|ab|kernels|diagnose|fuzz) "step_$step" ;;
    *) echo "unknown step $step" >&2; exit 2 ;;
  esac
done
df -h "$WORK" | tail -1
failures=$(grep -c ': FAILED' "$SUMMARY")
[ "$failures" = 0 ] || { echo "$failures steps failed"; exit 1; }
