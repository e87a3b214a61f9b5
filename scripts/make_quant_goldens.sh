#!/usr/bin/env bash
# make_quant_goldens.sh LLAMA_BIN_DIR OUT_DIR [TOOLS_DIR]
#
# The goldens of ggml's block quantizations (data/quant-goldens/README.md): a small GPT-OSS GGUF
# whose dense tensors are in every type llama-quantize can put in a gpt-oss file, quantized by
# llama.cpp's own llama-quantize, and llama.cpp's own dequantization of every tensor to f32.
#
#   LLAMA_BIN_DIR  a folder with a PREBUILT llama-quantize (this script never builds llama.cpp)
#   OUT_DIR        receives mixed.gguf, reference-f32.sha256 and provenance.txt
#   TOOLS_DIR      our built tools (default: build/tools beside this script's repository)
#
# The model is synthesized (gptoss-synth) with rows of 256 elements, which every block type
# divides, except attn_output's rows of 64 (heads x head_dim), which take the 32-element types.
# Four layers give 14 tensors of 256-element rows and 4 of 64, one per type below; the experts stay
# MXFP4 and the norms, sinks, router and biases F32, as in every published gpt-oss file.
set -euo pipefail

source "$(dirname "$0")/goldens_common.sh"
need_tools "$TOOLS/gptoss-synth" "$TOOLS/gptoss-convert" "$TOOLS/gptoss-verify"

LAYERS=4
HIDDEN=256
HEAD_DIM=64
"$TOOLS/gptoss-synth" "$WORK/synth" --preset 20b --layouts hf --layers $LAYERS --vocab 64 --hidden $HIDDEN \
  --intermediate 32 --heads 1 --kv-heads 1 --head-dim $HEAD_DIM --experts 2 --experts-per-token 1 -j 1 >/dev/null
"$TOOLS/gptoss-convert" "$WORK/synth/hf" "$WORK/input-f32.gguf" --dense f32 -q -j 1

# One type per tensor: every type of issue 33's list. The 256-element types need the 256-wide rows;
# the 32-element ones go on attn_output (64 wide) and IQ4_NL on a 256-wide row.
TYPES=(
  '^token_embd\.weight$=q4_k' '^output\.weight$=q6_k'
  '^blk\.0\.attn_q\.weight$=q2_k'   '^blk\.0\.attn_k\.weight$=q3_k'  '^blk\.0\.attn_v\.weight$=q5_k'
  '^blk\.1\.attn_q\.weight$=iq4_xs' '^blk\.1\.attn_k\.weight$=iq3_s' '^blk\.1\.attn_v\.weight$=iq3_xxs'
  '^blk\.2\.attn_q\.weight$=iq2_s'  '^blk\.2\.attn_k\.weight$=iq2_xs' '^blk\.2\.attn_v\.weight$=iq2_xxs'
  '^blk\.3\.attn_q\.weight$=iq1_s'  '^blk\.3\.attn_k\.weight$=iq1_m' '^blk\.3\.attn_v\.weight$=iq4_nl'
  '^blk\.0\.attn_output\.weight$=q4_0' '^blk\.1\.attn_output\.weight$=q4_1'
  '^blk\.2\.attn_output\.weight$=q5_0' '^blk\.3\.attn_output\.weight$=q5_1'
  '_exps\.weight$=mxfp4'
)
OVERRIDES=()
for t in "${TYPES[@]}"; do OVERRIDES+=(--tensor-type "$t"); done

# The importance matrix the IQ1/IQ2/IQ3_XXS types require, all ones, in the file format
# llama.cpp's imatrix loader reads when the file is not GGUF (common/imatrix-loader.cpp): an int32
# entry count, then per entry the int32 name length, the name, an int32 call count (1) and an
# int32 value count followed by that many f32 sums; importance = sum / calls.
le32() {  # the escapes are made first, then printed as bytes
  printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($1 & 255)) $((($1 >> 8) & 255)) $((($1 >> 16) & 255)) $((($1 >> 24) & 255)))"
}
imatrix_entry() {  # name, number of values
  le32 ${#1}
  printf '%s' "$1"
  le32 1
  le32 "$2"
  for ((i = 0; i < $2; ++i)); do printf '\x00\x00\x80\x3f'; done  # 1.0f
}
{
  le32 $((4 * LAYERS))
  for ((l = 0; l < LAYERS; ++l)); do
    for t in attn_q attn_k attn_v; do imatrix_entry "blk.$l.$t.weight" $HIDDEN; done
    imatrix_entry "blk.$l.attn_output.weight" $HEAD_DIM
  done
} >"$WORK/ones.imatrix"

# Quantize, then dequantize every tensor back to F32 with llama-quantize itself: a tensor whose
# type changes to F32 goes through ggml's type_traits[type].to_float (llama-quant.cpp,
# llama_tensor_dequantize_impl), and "quantizing" to F32 copies those floats unchanged. The
# experts are dequantized too: MXFP4's reference comes along.
# Relative paths from inside the work folder: llama-quantize records the imatrix file's path in
# the output's metadata (quantize.imatrix.file), and the output must not depend on where it ran.
cd "$WORK"
"$QUANTIZE" --imatrix ones.imatrix "${OVERRIDES[@]}" input-f32.gguf mixed.gguf MXFP4_MOE 1 \
  >quantize.log 2>&1 || { cat quantize.log >&2; exit 1; }
"$QUANTIZE" --allow-requantize mixed.gguf reference-f32.gguf F32 1 >dequantize.log 2>&1 || { cat dequantize.log >&2; exit 1; }
cd - >/dev/null

# The expected values: SHA-256 of each tensor's f32 bytes as llama.cpp wrote them.
"$TOOLS/gptoss-verify" "$WORK/reference-f32.gguf" --write-manifest "$WORK/reference-f32.sha256" -j 1 >/dev/null

mkdir -p "$OUT"
cp "$WORK/mixed.gguf" "$WORK/reference-f32.sha256" "$OUT/"
{
  echo "llama-quantize: $(grep -m1 -o 'build = .*' "$WORK/quantize.log" || echo 'build unknown')"
  echo "quantize:   llama-quantize --imatrix ones.imatrix ${TYPES[*]/#/--tensor-type } input-f32.gguf mixed.gguf MXFP4_MOE 1"
  echo "dequantize: llama-quantize --allow-requantize mixed.gguf reference-f32.gguf F32 1"
  echo "input:      gptoss-synth --preset 20b --layers $LAYERS --vocab 64 --hidden $HIDDEN --intermediate 32 --heads 1 --kv-heads 1 --head-dim $HEAD_DIM --experts 2 --experts-per-token 1; gptoss-convert --dense f32"
  echo "sha256:     $(sha256sum "$OUT/mixed.gguf" | cut -d' ' -f1)  mixed.gguf"
} >"$OUT/provenance.txt"
echo "wrote $OUT: $(du -b "$OUT/mixed.gguf" | cut -f1) bytes of mixed.gguf, $(grep -c ':' "$OUT/reference-f32.sha256") tensor hashes"
