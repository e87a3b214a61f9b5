// What every kernel of the engine shares: the ABI (kernel_abi.h), buffer references by device
// address, the dense decoders (the encoding a specialization constant, so each pipeline holds the
// code of one encoding and no per-element branch), and subgroup-first reductions.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
#include "kernel_abi.h"

layout(constant_id = SPEC_SUBGROUP_SIZE) const uint SUBGROUP_SIZE = 32u;
layout(constant_id = SPEC_ENCODING) const uint ENCODING = 0u;

// Buffers by address. Read-only views let the compiler use the non-coherent load path.
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer QuadsIn { uvec4 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer PairsIn { uvec2 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer WordsIn { uint v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer Vec4sIn { vec4 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer FloatsIn { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Floats { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) buffer Vec4s { vec4 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Words { uint v[]; };
// Shared between the workgroups of one dispatch (the last one to finish reads what the others
// wrote): coherent, so reads after memoryBarrierBuffer() see other workgroups' writes.
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer SharedFloats { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer SharedWords { uint v[]; };

// Whether this workgroup is the last of `total` to call it for `counter` (every invocation must
// call it, after its writes that the last one reads; the last one resets the counter to zero).
shared bool last_arrival;
bool arrive_last(uvec2 counters, uint counter, uint total) {
  memoryBarrierBuffer();
  barrier();
  if (gl_LocalInvocationIndex == 0u) {
    uint before = atomicAdd(SharedWords(counters).v[counter], 1u);
    last_arrival = before + 1u == total;
    if (last_arrival) SharedWords(counters).v[counter] = 0u;
  }
  barrier();
  memoryBarrierBuffer();
  return last_arrival;
}

bool has_address(uvec2 address) { return address != uvec2(0u); }

// The first key a query at `position` may see through a sliding window of `window` keys (0: every
// key from the first).
uint window_first_key(uint position, uint window) {
  return (window != 0u && position + 1u > window) ? position + 1u - window : 0u;
}
// The first cache position of the sequence holding `position` where a submit packs independent
// sequences of `sequence` tokens each (StepState::sequence; 0: one sequence from position 0).
uint sequence_first_position(uint position, uint sequence) {
  return sequence == 0u ? 0u : position - position % sequence;
}
// A token's RoPE position: its place in its sequence.
uint rope_position(uint position, uint sequence) { return position - sequence_first_position(position, sequence); }
// The prefill attention's first key block for a query tile whose first query is at `first_query`:
// key blocks lie at whole multiples of ATTENTION_KEY_BLOCK whatever the tile, so a row's keys fall
// in the same blocks, and its sums in the same order, wherever a chunk's queries start (the keys
// before a row's window in its first block are masked for it, as those after it are). Packed
// sequences start at whole key blocks and a tile's queries lie in one of them (the launcher's
// Kernels::prefill_sequence_multiple), so a tile never reaches before its sequence's first key and
// each row sums the blocks it would sum in that sequence alone.
uint prefill_first_key_block(uint first_query, uint window, uint sequence) {
  uint first_key = max(window_first_key(first_query, window), sequence_first_position(first_query, sequence));
  return first_key - first_key % ATTENTION_KEY_BLOCK;
}

// ---- dense decoding: 8 consecutive values of a row-major matrix ----

vec4 bf16_low_high(uint a, uint b) {
  return vec4(uintBitsToFloat(a << 16), uintBitsToFloat(a & 0xFFFF0000u), uintBitsToFloat(b << 16),
              uintBitsToFloat(b & 0xFFFF0000u));
}
vec4 f16_low_high(uint a, uint b) { return vec4(unpackHalf2x16(a), unpackHalf2x16(b)); }
vec4 int8x4(uint word) {
  return vec4(float(bitfieldExtract(int(word), 0, 8)), float(bitfieldExtract(int(word), 8, 8)),
              float(bitfieldExtract(int(word), 16, 8)), float(bitfieldExtract(int(word), 24, 8)));
}

#include "ggml_blocks.glsl"

// The raw bytes of elements index .. index + 7 (index a multiple of 8) of the matrix at `data` in
// ENCODING: loads kept apart from decoding, so a kernel can issue its loads early and decode
// later (F32 uses a and b; BF16/F16 a; the block types what ggml_blocks.glsl's loaders say, Q8_0
// a.xy for the quants and a.z for the word holding the block's f16 scale, from `scales`).
void load_raw8(uvec2 data, uvec2 scales, uint index, out uvec4 a, out uvec4 b) {
  b = uvec4(0u);
  if (ENCODING == ENC_F32) {
    a = QuadsIn(data).v[index >> 2];
    b = QuadsIn(data).v[(index >> 2) + 1u];
  } else if (ENCODING == ENC_BF16 || ENCODING == ENC_F16) {
    a = QuadsIn(data).v[index >> 3];
  } else {
    load_block8(data, scales, index, a, b);
  }
}
// The scale of the Q8_0 block of element `index`, from the word of two f16 scales load_raw8 read.
float q8_0_scale(uint scale_word, uint index) {
  return unpackHalf2x16(((index >> 5) & 1u) != 0u ? (scale_word >> 16) : scale_word).x;
}
// Their values (`data` the matrix load_raw8 read: the block types with a lookup table read it there).
void decode_raw8(uvec2 data, uvec4 a, uvec4 b, uint index, out vec4 lo, out vec4 hi) {
  if (ENCODING == ENC_F32) {
    lo = uintBitsToFloat(a);
    hi = uintBitsToFloat(b);
  } else if (ENCODING == ENC_BF16) {
    lo = bf16_low_high(a.x, a.y);
    hi = bf16_low_high(a.z, a.w);
  } else if (ENCODING == ENC_F16) {
    lo = f16_low_high(a.x, a.y);
    hi = f16_low_high(a.z, a.w);
  } else {
    decode_block8(data, a, b, index, lo, hi);
  }
}
// Elements index .. index + 7 of the matrix at `data` in ENCODING, decoded.
void load8(uvec2 data, uvec2 scales, uint index, out vec4 lo, out vec4 hi) {
  uvec4 a, b;
  load_raw8(data, scales, index, a, b);
  decode_raw8(data, a, b, index, lo, hi);
}

// ---- MXFP4 (experts): blocks of 32 values, 16 bytes of nibbles (low nibble = even element) and
// one scale byte (2^(s - 127)) ----
// The 8 codes of `word` (elements 0-3 in lo, 4-7 in hi), times kFp4Unit: each code's sign,
// exponent and mantissa bits placed in an f16's sign, low exponent bits and top mantissa bit, which
// is the code's value times 2^-14 (codes +-0.5 are f16 subnormals: exact where the device keeps
// them; the kernel tests check every code). On the H100 this is 15-30% faster than a shared table
// of the 16 values, and a table of code pairs (one 8-byte load per two values) was 2x slower than
// either for its bank conflicts.
const float kFp4Unit = 1.0 / 16384.0;
void fp4x8(uint word, out vec4 lo, out vec4 hi) {
  uvec4 n = uvec4(word, word >> 4, word >> 8, word >> 12) & uvec4(0x000F000Fu);
  uvec4 h = ((n & uvec4(0x00070007u)) << 9) | ((n & uvec4(0x00080008u)) << 12);
  vec2 p0 = unpackHalf2x16(h.x), p1 = unpackHalf2x16(h.y), p2 = unpackHalf2x16(h.z), p3 = unpackHalf2x16(h.w);
  lo = vec4(p0.x, p1.x, p2.x, p3.x);
  hi = vec4(p0.y, p1.y, p2.y, p3.y);
}
// 2^(s - 127) over kFp4Unit, built as float bits where that is a normal number (every scale a
// trained checkpoint has), ldexp elsewhere.
float mxfp4_scale_value(uint s) {
  int exponent = int(s) - 113;
  return exponent > -127 && exponent < 128 ? uintBitsToFloat(uint(exponent + 127) << 23) : ldexp(1.0, exponent);
}
// The scale of block `block`, over kFp4Unit: fp4x8's values times this are the weights.
float mxfp4_scale(uvec2 scales, uint block) {
  uint byte_value = (WordsIn(scales).v[block >> 2] >> ((block & 3u) * 8u)) & 0xFFu;
  return mxfp4_scale_value(byte_value);
}

// ---- reductions ----

// Sum over the workgroup (every invocation must call it; all get the total). Subgroups first,
// then their partial sums through shared memory: one barrier pair, any subgroup size.
shared float reduce_partials[256];  // one per subgroup: 1024 invocations in subgroups of 4 at least
float workgroup_sum(float value) {
  float partial = subgroupAdd(value);
  if (subgroupElect()) reduce_partials[gl_SubgroupID] = partial;
  barrier();
  float total = 0.0;
  for (uint i = 0u; i < gl_NumSubgroups; ++i) total += reduce_partials[i];
  barrier();
  return total;
}
float workgroup_max(float value) {
  float partial = subgroupMax(value);
  if (subgroupElect()) reduce_partials[gl_SubgroupID] = partial;
  barrier();
  float result = reduce_partials[0];
  for (uint i = 1u; i < gl_NumSubgroups; ++i) result = max(result, reduce_partials[i]);
  barrier();
  return result;
}

// ---- f16 parts of f32 values (the cooperative GEMMs' inputs) ----

// v rounded to f16's 11 significant bits (to nearest, ties away from zero), as an f32: f16's own
// rounding of a value in its normal range. Integer arithmetic on the bits, not a round trip through
// packHalf2x16: NVIDIA's compiler folds unpackHalf2x16(packHalf2x16(v)) into v.
vec4 round_to_f16_bits(vec4 v) { return uintBitsToFloat((floatBitsToUint(v) + uvec4(0x1000u)) & uvec4(0xFFFFE000u)); }

// ---- RoPE (YaRN tables; half-split pairs (i, i + D/2)) ----

// (cos, sin) of position * inv_freq[i], times the YaRN concentration: the engine's table
// [positions, D/2] of pairs, made on the host by runtime/rope.h as the CPU engine makes its own
// (the GPU's cos/sin of a reduced f32 angle were within a few 1e-7 of those values, and that
// difference was the largest of the attention's before the products).
vec2 rope_cos_sin(uvec2 table, uint position, uint i, uint half_dim) {
  uint at = 2u * (position * half_dim + i);
  return vec2(FloatsIn(table).v[at], FloatsIn(table).v[at + 1u]);
}

// ---- KV caches (the attention kernels' ENCODING: ENC_F32, or ENC_F16 with dims 2m, 2m + 1 of a
// row in word m) ----
// `row` is the element index of a row (KV_CACHE_ROW), d a dim of it: even for pairs, a multiple of
// 4 for quads (head_dim % 4 == 0 keeps every such load aligned).

void store_kv_pair(uvec2 cache, uint row, uint d, vec2 values) {
  if (ENCODING == ENC_F16) {
    Words(cache).v[(row + d) >> 1] = packHalf2x16(values);
  } else {
    Floats(cache).v[row + d] = values.x;
    Floats(cache).v[row + d + 1u] = values.y;
  }
}
// An f16 cache's dims d, d + 1 (decode attention reads f32 values one by one).
vec2 load_f16_pair(uvec2 cache, uint row, uint d) { return unpackHalf2x16(WordsIn(cache).v[(row + d) >> 1]); }
vec4 load_kv_quad(uvec2 cache, uint row, uint d) {
  if (ENCODING == ENC_F16) {
    uvec2 words = PairsIn(cache).v[(row + d) >> 2];
    return vec4(unpackHalf2x16(words.x), unpackHalf2x16(words.y));
  }
  return Vec4sIn(cache).v[(row + d) >> 2];
}
