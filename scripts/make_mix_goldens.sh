#!/usr/bin/env bash
# make_mix_goldens.sh LLAMA_BIN_DIR OUT_DIR [TOOLS_DIR]
#
# The goldens of `gptoss-convert --mix` (data/mix-goldens/README.md): llama.cpp's two passes over
# small synthesized GPT-OSS models, the GGUF our converter writes (what convert_hf_to_gguf.py
# writes: BF16 dense tensors) and `llama-quantize` of it to each mix without an importance matrix,
# recorded as the SHA-256 of every output file and the number of tensors of each type in it.
#
#   LLAMA_BIN_DIR  a folder with a PREBUILT llama-quantize (this script never builds llama.cpp)
#   OUT_DIR        receives expected.txt and provenance.txt
#   TOOLS_DIR      our built tools (default: build/tools beside this script's repository)
#
# Two shapes of 8 layers (so that llama.cpp's use_more_bits picks attn_v of layers 0, 3, 6, 7):
# rows of 320 (not whole 256-element blocks: the K types fall back) with a 256-wide attn_output,
# and rows of 256 with a 320-wide attn_output. The experts stay MXFP4: for the K mixes and Q8_0 by
# --tensor-type '_exps\.weight$=mxfp4' (what the published gpt-oss files show), for MXFP4_MOE by
# the mix itself.
set -euo pipefail

source "$(dirname "$0")/goldens_common.sh"
need_tools "$TOOLS/gptoss-synth" "$TOOLS/gptoss-convert"

# name and gptoss-synth --preset 20b overrides (option=value, as the test reads them)
SHAPES=(
  "rows320 layers=8 vocab=64 hidden=320 intermediate=64 heads=4 kv-heads=1 head-dim=64 experts=2 experts-per-token=1"
  "rows256 layers=8 vocab=64 hidden=256 intermediate=64 heads=5 kv-heads=1 head-dim=64 experts=2 experts-per-token=1"
)
# --mix name and llama-quantize's ftype
MIXES=("q4_k_m Q4_K_M" "q5_k_m Q5_K_M" "q6_k Q6_K" "q8_0 Q8_0" "mxfp4 MXFP4_MOE")

{
  echo "# shape NAME gptoss-synth --preset 20b overrides"
  for s in "${SHAPES[@]}"; do echo "shape $s"; done
  echo "# mix SHAPE MIX SHA256-of-llama-quantize's-file TYPE=TENSORS..."
} >"$WORK/expected.txt"

for s in "${SHAPES[@]}"; do
  read -r name overrides <<<"$s"
  args=()
  for o in $overrides; do args+=("--${o%%=*}" "${o#*=}"); done
  "$TOOLS/gptoss-synth" "$WORK/$name" --preset 20b --layouts hf "${args[@]}" -j 1 >/dev/null
  "$TOOLS/gptoss-convert" "$WORK/$name/hf" "$WORK/$name-bf16.gguf" -q -j 1 2>/dev/null
  for m in "${MIXES[@]}"; do
    read -r mix ftype <<<"$m"
    keep=()
    [[ $ftype == MXFP4_MOE ]] || keep=(--tensor-type '_exps\.weight$=mxfp4')
    (cd "$WORK" && "$QUANTIZE" "${keep[@]}" "$name-bf16.gguf" "$name-$mix.gguf" "$ftype" 1 >"$name-$mix.log" 2>&1) ||
      { cat "$WORK/$name-$mix.log" >&2; exit 1; }
    # Each tensor's type in the output: "converting to X" where it was quantized, else "type = X".
    counts=$(grep -E '^\[ *[0-9]+/ *[0-9]+\]' "$WORK/$name-$mix.log" |
      sed -E 's/.*converting to ([A-Za-z0-9_]+).*/\1/; s/.*type = *([A-Za-z0-9_]+),.*/\1/' |
      tr '[:lower:]' '[:upper:]' | sort | uniq -c | awk '{printf " %s=%s", $2, $1}')
    echo "mix $name $mix $(sha256sum "$WORK/$name-$mix.gguf" | cut -d' ' -f1)$counts" >>"$WORK/expected.txt"
  done
done

mkdir -p "$OUT"
cp "$WORK/expected.txt" "$OUT/"
{
  echo "llama-quantize: $(grep -m1 -o 'build = .*' "$WORK/${SHAPES[0]%% *}-q8_0.log" || echo 'build unknown')"
  echo "intermediate:   gptoss-synth OUT --preset 20b --layouts hf <shape overrides>; gptoss-convert OUT/hf NAME-bf16.gguf"
  echo "quantize:       llama-quantize --tensor-type '_exps\\.weight\$=mxfp4' NAME-bf16.gguf NAME-MIX.gguf FTYPE 1  (Q4_K_M Q5_K_M Q6_K Q8_0)"
  echo "                llama-quantize NAME-bf16.gguf NAME-mxfp4.gguf MXFP4_MOE 1"
} >"$OUT/provenance.txt"
echo "wrote $OUT/expected.txt: $(grep -c '^mix' "$OUT/expected.txt") files of ${#SHAPES[@]} shapes"
