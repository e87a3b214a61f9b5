#!/usr/bin/env bash
# The main job on the embedded default model: synthesize the tiny GPT-OSS (preset a), convert it
# to every format, verify each, and print what came out.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh >/dev/null
BIN=${BUILD_DIR:-build}/tools
OUT=${DEMO_DIR:-out/demo}
rm -rf "$OUT"
mkdir -p "$OUT"

echo "== synthesize preset a (the golden fixture's recipe)"
"$BIN"/gptoss-synth "$OUT/ckpt" --tokenizer .cache/tokenizer.json
sha256sum "$OUT"/ckpt/hf/model.safetensors "$OUT"/ckpt/original/model.safetensors

echo "== convert: HF -> original layout -> HF"
"$BIN"/gptoss-convert -q "$OUT/ckpt/hf" "$OUT/hf-to-original" --layout original
"$BIN"/gptoss-convert -q "$OUT/hf-to-original" "$OUT/roundtrip-hf"
if cmp -s "$OUT/ckpt/hf/model.safetensors" "$OUT/roundtrip-hf/model.safetensors"; then
  echo "round trip HF -> original -> HF: byte-identical weights"
else
  echo "round trip HF -> original -> HF: DIFFERENT" >&2
  exit 1
fi
