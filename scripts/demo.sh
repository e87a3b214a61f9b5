#!/usr/bin/env bash
# The main job on the embedded default model (a synthesized tiny GPT-OSS, preset a): convert it to
# every format, verify each, check they hold the same weights, run each on the CPU and Vulkan engines
# and print the parity tables, then evaluate every format against the HF checkpoint over a text.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh >/dev/null
BIN=${BUILD_DIR:-build}/tools
OUT=${DEMO_DIR:-out/demo}
GOLDENS=../shared/goldens/a
rm -rf "$OUT"
mkdir -p "$OUT"

echo "== 1. synthesize preset a (shared/goldens/make_fixture.py's recipe): HF and original layouts"
"$BIN"/gptoss-synth "$OUT/ckpt" --tokenizer .cache/tokenizer.json
sha256sum "$OUT"/ckpt/hf/model.safetensors "$OUT"/ckpt/original/model.safetensors

echo
echo "== 2. convert the HF checkpoint to every format"
"$BIN"/gptoss-convert -q "$OUT/ckpt/hf" "$OUT/original" --layout original
"$BIN"/gptoss-convert -q "$OUT/ckpt/hf" "$OUT/model-bf16.gguf"
"$BIN"/gptoss-convert -q "$OUT/ckpt/hf" "$OUT/model-q8_0.gguf" --dense q8_0
"$BIN"/gptoss-convert -q "$OUT/ckpt/hf" "$OUT/model.bin"
"$BIN"/gptoss-convert -q "$OUT/model.bin" "$OUT/from-modelbin"
ls -l "$OUT"/*.gguf "$OUT"/model.bin
if [ -d "$GOLDENS" ]; then
  echo "-- against the goldens made by llama.cpp and OpenAI's converter:"
  cmp "$OUT/model.bin" "$GOLDENS/model.bin" && echo "model.bin: byte-identical to OpenAI's create-local-model.py"
  "$BIN"/gptoss-verify --same "$GOLDENS/model-q8_0.gguf" "$OUT/model-q8_0.gguf" | grep -E '^tensors:' \
    | sed 's/^/model-q8_0.gguf vs llama.cpp convert_hf_to_gguf.py --outtype q8_0: /'
fi

echo
echo "== 3. verify each (structure, values)"
for m in "$OUT/ckpt/hf" "$OUT/original" "$OUT/model-bf16.gguf" "$OUT/model-q8_0.gguf" "$OUT/model.bin" "$OUT/from-modelbin"; do
  "$BIN"/gptoss-verify -q --values "$m" | grep -E '^\S.*\((safetensors|GGUF|model.bin)\)|errors,' | paste - -
done

echo
echo "== 4. do they hold the same weights? (gptoss-verify --same HF X)"
for m in "$OUT/original" "$OUT/model-bf16.gguf" "$OUT/model.bin" "$OUT/model-q8_0.gguf"; do
  echo "-- $m"
  "$BIN"/gptoss-verify --same "$OUT/ckpt/hf" "$m" | grep -E '^tensors:|^(SAME|DIFFERENT)|lossy as declared \(' | head -5 || true
done

echo
echo "== 5. run each format on the CPU reference engine: layer-by-layer parity"
if [ -f "$GOLDENS/refs-a.safetensors" ]; then
  "$BIN"/gptoss-run "$OUT/ckpt/hf" --parity "$OUT/original" "$OUT/model-bf16.gguf" "$OUT/model.bin" "$OUT/model-q8_0.gguf" \
    --refs "$GOLDENS/refs-a.safetensors" --refs-prompt long
else
  "$BIN"/gptoss-run "$OUT/ckpt/hf" --parity "$OUT/original" "$OUT/model-bf16.gguf" "$OUT/model.bin" "$OUT/model-q8_0.gguf" \
    --prompt-tokens 200006,1428,200008,4827,382,220,17,10,17,30,200007,200006,173781
fi

echo
echo "== 6. the Vulkan engine (GPU, or Mesa's lavapipe on a machine without one) next to the CPU engine in f32 and f64"
vulkan_prompt=(--prompt-tokens 200006,1428,200008,4827,382,220,17,10,17,30,200007,200006,173781)
[ -f "$GOLDENS/refs-a.safetensors" ] && vulkan_prompt=(--refs "$GOLDENS/refs-a.safetensors" --refs-prompt long)
"$BIN"/gptoss-run "$OUT/model.bin" --parity "$OUT/model-q8_0.gguf" --engines cpu,cpu-f64,vulkan "${vulkan_prompt[@]}" \
  || echo "(no usable Vulkan device: the Vulkan columns are skipped)"

echo
echo "== 7. generate (harmony chat, greedy; the tiny model's weights are random, so is its text)"
"$BIN"/gptoss-run "$OUT/model.bin" -p "What is 2+2?" --max-tokens 12 --raw
"$BIN"/gptoss-run "$OUT/model.bin" -p "What is 2+2?" --max-tokens 12 --raw --engine vulkan \
  || echo "(no usable Vulkan device)"

echo
echo "== 8. does each format still compute the same model? gptoss-eval against the HF checkpoint over a text"
text=/usr/share/common-licenses/GPL-3
[ -f "$text" ] || text=data/eval/gnu-licenses.txt
"$BIN"/gptoss-eval "$OUT/ckpt/hf" "$OUT/original" "$OUT/model-bf16.gguf" "$OUT/model-q8_0.gguf" "$OUT/model.bin" \
  "$OUT/from-modelbin" --text "$text" --ctx 128 --chunks 4
echo "-- on the Vulkan engine, the four chunks one per forward (--batch 128) and packed into one (the default --batch 2048,"
echo "   llama-perplexity's): the same numbers to the last digit"
for batch in 128 2048; do
  "$BIN"/gptoss-eval "$OUT/ckpt/hf" "$OUT/model-q8_0.gguf" --text "$text" --ctx 128 --chunks 4 --engine vulkan --batch "$batch" \
    2>/dev/null | grep -E '^chunks:|^\| GGUF' || { echo "(no usable Vulkan device)"; break; }
done

echo
echo "== 9. a GGUF in llama-quantize's types, made by llama.cpp (data/quant-goldens/mixed.gguf: Q2_K .. Q6_K, IQ1_S .. IQ4_XS,"
echo "     Q4_0 .. Q5_1 dense tensors, MXFP4 experts): read and checked, against the model it was quantized from, run on both engines"
mixed=data/quant-goldens/mixed.gguf
"$BIN"/gptoss-synth "$OUT/mixed-source" --preset 20b --layers 4 --vocab 64 --hidden 256 --intermediate 32 --heads 1 \
  --kv-heads 1 --head-dim 64 --experts 2 --experts-per-token 1 --layouts hf >/dev/null
"$BIN"/gptoss-verify -q --values "$mixed" | grep -E 'types|errors,' || true
"$BIN"/gptoss-verify --same "$OUT/mixed-source/hf" "$mixed" | grep -E '^tensors:|^(SAME|DIFFERENT)|lossy as declared \(' | head -5 || true
"$BIN"/gptoss-run "$OUT/mixed-source/hf" --parity "$mixed" --engines cpu,vulkan --prompt-tokens 1,5,9,2,33,17,8,60 \
  || echo "(no usable Vulkan device: the Vulkan column is skipped)"
echo "(its vocabulary of 64 ids holds no real tokenizer, so gptoss-eval, which scores a text, has nothing to read here)"

echo
echo "== 10. llama-quantize's Q4_K_M written in one pass (gptoss-convert --mix q4_k_m): against llama.cpp's two passes, then read,"
echo "     verified, run and evaluated"
shape=$(awk '$1 == "shape" && $2 == "rows320" { $1 = $2 = ""; print }' data/mix-goldens/expected.txt)
synth_args=()
for o in $shape; do synth_args+=("--${o%%=*}" "${o#*=}"); done
"$BIN"/gptoss-synth "$OUT/mix-source" --preset 20b --layouts hf "${synth_args[@]}" >/dev/null
"$BIN"/gptoss-convert -q "$OUT/mix-source/hf" "$OUT/rows320-q4_k_m.gguf" --mix q4_k_m 2>/dev/null
expected=$(awk '$1 == "mix" && $2 == "rows320" && $3 == "q4_k_m" { print $4 }' data/mix-goldens/expected.txt)
if [ "$(sha256sum <"$OUT/rows320-q4_k_m.gguf" | cut -d' ' -f1)" = "$expected" ]; then
  echo "rows320-q4_k_m.gguf: byte-identical to convert_hf_to_gguf.py + llama-quantize Q4_K_M (sha256 ${expected:0:16}...)"
else
  echo "rows320-q4_k_m.gguf: DIFFERS from llama-quantize's file (data/mix-goldens/expected.txt)"
fi
"$BIN"/gptoss-convert -q "$OUT/ckpt/hf" "$OUT/model-q4_k_m.gguf" --mix q4_k_m 2>&1 | grep -E '^(lossy: (layers.0.attn|\.\.\.)|wrote)' || true
"$BIN"/gptoss-verify -q --values "$OUT/model-q4_k_m.gguf" | grep -E 'dense tensors are|errors,' || true
"$BIN"/gptoss-verify --same "$OUT/ckpt/hf" "$OUT/model-q4_k_m.gguf" | grep -E '^tensors:|^(SAME|DIFFERENT)' | head -3 || true
"$BIN"/gptoss-run "$OUT/model-q4_k_m.gguf" -p "What is 2+2?" --max-tokens 12 --raw
"$BIN"/gptoss-eval "$OUT/ckpt/hf" "$OUT/model-q4_k_m.gguf" --text "$text" --ctx 128 --chunks 4
