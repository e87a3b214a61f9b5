#!/usr/bin/env bash
# The full-scale checks of docs/eval.md, for a GPU machine that gets the binaries carried in (no
# compilers there). Two halves:
#
#   scripts/eval_h100.sh pack            here: stripped tools + tokenizer.json into build-h100/
#                                        (34 MB; carry build-h100 with the working tree)
#   scripts/eval_h100.sh OUTDIR [STEP]   there: one step per call (each fits a 10-minute command),
#                                        or every step in order without STEP
#
# Steps (each skips what OUTDIR already holds, prints what it ran and how long it took):
#   files       the 20b checkpoint (gptoss-synth --preset 20b, HF layout + tokenizer.json), and
#               from it the Q8_0 GGUF, the BF16 GGUF and model.bin (about 52 GB in all)
#   parity      the Vulkan engine against the CPU engine on prompts of 16 and 64 tokens:
#               gptoss-run MODEL --engines CPU,vulkan, each stage's max abs difference and the
#               same relative to the stage's largest |value| (goal: <= 1e-3). CPU is cpu-f64 when
#               the host memory holds it (8 bytes per dense parameter, the experts staying MXFP4
#               at 0.53 bytes: ~25 GB at 20b, ~78 GB at 120b), else cpu (4 bytes per dense one)
#   parity120b  the same at 120b through the synth:120b model spec, when gptoss-run knows it
#   eval        gptoss-eval of the Q8_0 GGUF, the BF16 GGUF and model.bin against the HF checkpoint
#               over CHUNKS x CTX tokens of TEXT (default 32 x 512 = 16,384) on the Vulkan engine
#   speed       the evaluation speed of one pair (HF vs Q8_0 GGUF) over 8 chunks
#   logits      --save-logits of the HF checkpoint and --against-logits of the Q8_0 GGUF over
#               8 chunks: the file's size per token and its KL against the live value
#
# Environment: BIN (tools; default build-h100/bin, else build/tools), TOKENIZER (default
# build-h100/tokenizer.json, else .cache/tokenizer.json), PRESET (20b; "a" to try the script on
# the tiny model), TEXT (data/eval/gnu-licenses.txt), CTX (512), CHUNKS (32), ENGINE (vulkan),
# DEVICE (a Vulkan device index, default: the best).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = pack ]; then
  rm -rf build-h100
  mkdir -p build-h100/bin
  for tool in gptoss-synth gptoss-convert gptoss-run gptoss-eval gptoss-verify; do
    strip -o build-h100/bin/$tool "${BUILD_DIR:-build}/tools/$tool"
  done
  cp .cache/tokenizer.json build-h100/tokenizer.json
  du -sh build-h100
  echo "carry: build-h100 (the run tool's carry list); then: scripts/eval_h100.sh OUTDIR [STEP]"
  exit 0
fi

OUT=${1:?usage: scripts/eval_h100.sh pack | OUTDIR [files|parity|parity120b|eval|speed|logits]}
STEP=${2:-all}
if [ -z "${BIN:-}" ]; then BIN=build/tools; [ -x build-h100/bin/gptoss-run ] && BIN=build-h100/bin; fi
if [ -z "${TOKENIZER:-}" ]; then TOKENIZER=.cache/tokenizer.json; [ -f build-h100/tokenizer.json ] && TOKENIZER=build-h100/tokenizer.json; fi
PRESET=${PRESET:-20b}
TEXT=${TEXT:-data/eval/gnu-licenses.txt}
CTX=${CTX:-512}
CHUNKS=${CHUNKS:-32}
ENGINE=${ENGINE:-vulkan}
device=()
[ -n "${DEVICE:-}" ] && device=(--device "$DEVICE")
mkdir -p "$OUT"
HF=$OUT/ckpt/hf
Q8=$OUT/model-q8_0.gguf
BF16=$OUT/model-bf16.gguf
MB=$OUT/model.bin

# Prompts: GPL-3's preamble in o200k tokens (the first 16, and 64).
P16=976,8833,5694,5473,3312,382,261,2240,11,8039,161773,9745,395,4305,326,1273
P64=$P16,16229,328,5882,13,623,36477,395,1645,4305,326,1273,17377,5882,553,6884,316,2304,4194,634,19165,316,5143,326,3343,290,5882,13,4534,20663,11,290,8833,5694,5473,3312,382,15663,316,16218,634,19165,316,5143,326,3343,722,17980,328

timed() {  # timed LABEL COMMAND...: runs it, then prints its wall time
  local label=$1 start=$SECONDS
  shift
  "$@"
  echo "-- $label: $((SECONDS - start)) s"
}

step_files() {
  echo "== files: preset $PRESET in $OUT"
  [ -f "$HF/config.json" ] || timed "gptoss-synth --preset $PRESET" \
    "$BIN"/gptoss-synth "$OUT/ckpt" --preset "$PRESET" --layouts hf --tokenizer "$TOKENIZER"
  [ -f "$Q8" ] || timed "convert to Q8_0 GGUF" "$BIN"/gptoss-convert -q "$HF" "$Q8" --dense q8_0
  [ -f "$BF16" ] || timed "convert to BF16 GGUF" "$BIN"/gptoss-convert -q "$HF" "$BF16"
  [ -f "$MB" ] || timed "convert to model.bin" "$BIN"/gptoss-convert -q "$HF" "$MB"
  ls -l "$HF" "$Q8" "$BF16" "$MB"
  df -h "$OUT" | tail -1
}

# The CPU engine that fits this host for a model of DENSE dense and EXPERTS expert parameters:
# cpu-f64, cpu, or none. Dense tensors cost 8 (f64) or 4 (f32) bytes per parameter, the experts
# stay MXFP4 (17 bytes per 32); 10% on top for scratch, the KV cache and the allocator.
cpu_gb() { echo $((($1 * $3 + $2 * 17 / 32) * 11 / 10 / 1000000000)); }  # cpu_gb DENSE EXPERTS BYTES
cpu_engine_for() {
  local dense=$1 experts=$2 mem_gb
  mem_gb=$(awk '/^MemAvailable:/ {print int($2 / 976562.5)}' /proc/meminfo)
  if ((mem_gb > $(cpu_gb "$dense" "$experts" 8))); then echo cpu-f64
  elif ((mem_gb > $(cpu_gb "$dense" "$experts" 4))); then echo cpu
  else echo none; fi
}

params_of() {  # "DENSE EXPERTS": the parameters of an HF checkpoint folder, from its config.json
  local config=$1/config.json
  field() { grep -o "\"$1\": *[0-9]*" "$config" | head -1 | grep -o '[0-9]*$'; }
  local h i l heads kv d e v
  h=$(field hidden_size) i=$(field intermediate_size) l=$(field num_hidden_layers) heads=$(field num_attention_heads)
  kv=$(field num_key_value_heads) d=$(field head_dim) e=$(field num_local_experts) v=$(field vocab_size)
  local experts=$((l * e * 3 * i * h))
  echo "$((2 * v * h + l * (h * (heads + 2 * kv) * d + heads * d * h + e * h + 2 * h))) $experts"
}

parity_on() {  # parity_on MODEL DENSE EXPERTS
  local model=$1 dense=$2 experts=$3 cpu
  cpu=$(cpu_engine_for "$dense" "$experts")
  echo "host memory available: $(awk '/^MemAvailable:/ {printf "%.0f GB", $2 / 976562.5}' /proc/meminfo); $dense dense + $experts expert parameters -> CPU engine: $cpu"
  if [ "$cpu" = none ]; then
    echo "the CPU engine cannot hold this model here (f32 needs ~$(cpu_gb "$dense" "$experts" 4) GB): no parity run"
    return 0
  fi
  for prompt in "$P16" "$P64"; do
    timed "parity, $(tr ',' '\n' <<<"$prompt" | wc -l) tokens" \
      "$BIN"/gptoss-run "$model" --engines "$cpu,$ENGINE" "${device[@]}" --prompt-tokens "$prompt"
  done
}

step_parity() {
  echo "== parity: the $ENGINE engine against the CPU engine, preset $PRESET"
  local params
  params=$(params_of "$HF")
  parity_on "$HF" $params
}

step_parity120b() {
  echo "== parity at 120b (synth:120b)"
  if ! "$BIN"/gptoss-run --help 2>&1 | grep -q "synth:"; then
    echo "this gptoss-run does not know the synth: model specs (its --help does not mention them): skipped"
    return 0
  fi
  parity_on synth:120b 2167000000 114660000000
}

step_eval() {
  echo "== eval: every format against the HF checkpoint, $CHUNKS chunks of $CTX tokens of $TEXT, engine $ENGINE"
  timed "gptoss-eval, 4 models" "$BIN"/gptoss-eval "$HF" "$Q8" "$BF16" "$MB" --text "$TEXT" --ctx "$CTX" \
    --chunks "$CHUNKS" --engine "$ENGINE" "${device[@]}"
}

step_speed() {
  echo "== speed: one pair (HF vs Q8_0 GGUF), 8 chunks of $CTX tokens, engine $ENGINE"
  timed "gptoss-eval, one pair" "$BIN"/gptoss-eval "$HF" "$Q8" --text "$TEXT" --ctx "$CTX" --chunks 8 \
    --engine "$ENGINE" "${device[@]}"
}

step_logits() {
  echo "== logits: the reference's distributions saved, then compared against"
  timed "--save-logits" "$BIN"/gptoss-eval "$HF" --text "$TEXT" --ctx "$CTX" --chunks 8 --engine "$ENGINE" \
    "${device[@]}" --save-logits "$OUT/ref.logits"
  timed "--against-logits" "$BIN"/gptoss-eval "$HF" "$Q8" --text "$TEXT" --ctx "$CTX" --chunks 8 --engine "$ENGINE" \
    "${device[@]}" --against-logits "$OUT/ref.logits"
  ls -l "$OUT/ref.logits"
}

"$BIN"/gptoss-run --list-devices || true
case "$STEP" in
  all) step_files; step_parity; step_parity120b; step_eval; step_speed; step_logits ;;
  files|parity|parity120b|eval|speed|logits) "step_$STEP" ;;
  *) echo "unknown step $STEP" >&2; exit 2 ;;
esac
