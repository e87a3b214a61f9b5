#!/usr/bin/env bash
# make_quantizer_goldens.sh LLAMA_BIN_DIR OUT_DIR [TOOLS_DIR]
#
# The goldens of ggml's reference quantizers (data/quantizer-goldens/README.md): fixed f32 values,
# and the SHA-256 of the bytes llama.cpp's own llama-quantize makes of them in every type the
# toolkit quantizes (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K), without an importance matrix.
#
#   LLAMA_BIN_DIR  a folder with a PREBUILT llama-quantize (this script never builds llama.cpp)
#   OUT_DIR        receives values.f32, expected.sha256 and provenance.txt
#   TOOLS_DIR      our built tools (default: build/tools beside this script's repository)
#
# The values (32 rows of 256) are made here: full-mantissa values at several scales, and the rows
# that take the quantizers' rarer paths (all zero, constant, one sign, an outlier, values far
# below f16's normal range, exact grid points where rounding ties, sub-blocks of very different
# size). They become the attn_k matrix of every layer of a small synthesized GPT-OSS (a safetensors
# F32 tensor in an otherwise BF16 checkpoint), converted to a GGUF with F32 dense tensors; one
# --tensor-type per layer gives each layer's attn_k one type.
set -euo pipefail

source "$(dirname "$0")/goldens_common.sh"
need_tools "$TOOLS/gptoss-synth" "$TOOLS/gptoss-convert" "$TOOLS/gptoss-verify"

TYPES=(q4_0 q4_1 q5_0 q5_1 q8_0 q4_k q5_k q6_k)
"$TOOLS/gptoss-synth" "$WORK/synth" --preset 20b --layouts hf --layers ${#TYPES[@]} --vocab 64 --hidden 256 \
  --intermediate 32 --heads 4 --kv-heads 1 --head-dim 32 --experts 2 --experts-per-token 1 -j 1 >/dev/null

python3 - "$WORK/synth/hf/model.safetensors" "$WORK/values.f32" <<'EOF'
import json, math, struct, sys

ROWS, COLS = 32, 256
state = 0x9E3779B9
def uniform():  # a 32-bit xorshift in [0, 1): deterministic, no library
    global state
    state ^= (state << 13) & 0xFFFFFFFF; state ^= state >> 17; state ^= (state << 5) & 0xFFFFFFFF
    return state / 2**32
def normal():
    return math.sqrt(-2 * math.log(1 - uniform())) * math.cos(2 * math.pi * uniform())

rows = []
for scale in (1e-3, 0.02, 0.02, 0.3, 1.0, 7.5, 60.0, 0.02):  # full-mantissa values
    rows.append([scale * normal() for _ in range(COLS)])
rows.append([0.0] * COLS)                                        # all zero
rows.append([0.5] * COLS)                                        # constant
rows.append([-abs(0.1 * normal()) for _ in range(COLS)])         # all negative
rows.append([abs(0.1 * normal()) + 0.05 for _ in range(COLS)])   # all positive, away from zero
rows.append([0.01 * normal() if i % 97 else 50.0 for i in range(COLS)])  # one outlier per 97
rows.append([1e-7 * normal() for _ in range(COLS)])              # d below f16's normal range
rows.append([float((i * 7) % 16 - 8) for i in range(COLS)])      # grid points: rounding ties
rows.append([float((i * 5) % 32 - 16) * 0.25 for i in range(COLS)])
rows.append([0.0 if (i // 16) % 2 else normal() for i in range(COLS)])   # zero 16-element sub-blocks
rows.append([0.0 if (i // 32) % 2 else normal() for i in range(COLS)])   # zero 32-element sub-blocks
for r in range(ROWS - len(rows)):                                # sub-blocks of very different size
    rows.append([normal() * 10.0 ** (-((i // 16 + r) % 8)) for i in range(COLS)])
values = struct.pack('<%df' % (ROWS * COLS), *[v for row in rows for v in row])
open(sys.argv[2], 'wb').write(values)

# Every layer's k_proj becomes these values as F32; the other tensors are copied as they are.
path = sys.argv[1]
blob = open(path, 'rb').read()
n = struct.unpack('<Q', blob[:8])[0]
header = json.loads(blob[8:8 + n])
data = blob[8 + n:]
tensors, out, offset = {}, [], 0
for name in sorted((k for k in header if k != '__metadata__'), key=lambda k: header[k]['data_offsets'][0]):
    info = header[name]
    raw = data[info['data_offsets'][0]:info['data_offsets'][1]]
    if name.endswith('self_attn.k_proj.weight'):
        assert info['shape'] == [ROWS, COLS], info['shape']
        info['dtype'], raw = 'F32', values
    info['data_offsets'] = [offset, offset + len(raw)]
    offset += len(raw)
    out.append(raw)
text = json.dumps(header, separators=(',', ':')).encode()
text += b' ' * (-len(text) % 8)
open(path, 'wb').write(struct.pack('<Q', len(text)) + text + b''.join(out))
EOF

"$TOOLS/gptoss-convert" "$WORK/synth/hf" "$WORK/input-f32.gguf" --dense f32 -q -j 1 2>/dev/null
OVERRIDES=(--tensor-type '_exps\.weight$=mxfp4')
for l in "${!TYPES[@]}"; do OVERRIDES+=(--tensor-type "^blk\\.$l\\.attn_k\\.weight\$=${TYPES[$l]}"); done
cd "$WORK"
"$QUANTIZE" "${OVERRIDES[@]}" input-f32.gguf quantized.gguf Q8_0 1 >quantize.log 2>&1 || { cat quantize.log >&2; exit 1; }
cd - >/dev/null
"$TOOLS/gptoss-verify" "$WORK/quantized.gguf" --write-manifest "$WORK/quantized.sha256" -j 1 >/dev/null 2>&1

mkdir -p "$OUT"
cp "$WORK/values.f32" "$OUT/"
# One line per type: its name as the DType table spells it, and the SHA-256 of the quantized bytes.
for l in "${!TYPES[@]}"; do
  hash=$(grep -F "quantized.gguf:blk.$l.attn_k.weight" "$WORK/quantized.sha256" | awk '{print $2}')
  [[ -n $hash ]] || { echo "no hash for blk.$l.attn_k.weight" >&2; exit 1; }
  echo "${TYPES[$l]^^} $hash"
done >"$OUT/expected.sha256"
{
  echo "llama-quantize: $(grep -m1 -o 'build = .*' "$WORK/quantize.log" || echo 'build unknown')"
  echo "quantize: llama-quantize ${OVERRIDES[*]} input-f32.gguf quantized.gguf Q8_0 1"
  echo "values:   sha256 $(sha256sum "$OUT/values.f32" | cut -d' ' -f1)  values.f32 (32 x 256 f32, little-endian)"
} >"$OUT/provenance.txt"
echo "wrote $OUT: values.f32 and the hashes of ${#TYPES[@]} types"
