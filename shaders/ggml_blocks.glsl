// ggml's block quantizations decoded inside the kernels, 8 consecutive values at a time: the
// block types' part of common.glsl's load_raw8 / decode_raw8 (the encoding a specialization
// constant, so a pipeline holds one type's code). Their bytes lie on the device as
// GGML_BLOCK_ENCODINGS (kernel_abi.h) says: per block a quants record in the weight buffer (after
// the type's lookup table, where it has one) and a meta record in the scales buffer. Each type has
// one loader, which issues the loads of a chunk's bits and scales into two uvec4 (a, b) and does
// nothing else, and one decoder, which turns them into the chunk's values with the operations
// ggml's dequantize_row_* use, in the same order (formats/codecs/ggml_quants.cpp; `precise`, so no
// product and sum fuse into one rounding): the values are those of the codec, bit for bit.
// The decoders of types with a grid look it up at `data`, the weight buffer (its indices are
// masked to the grid's size, so even words a kernel loaded for no row stay within it).
//
// A chunk is values 8k .. 8k + 7 of block `blk` (k < BLOCK / 8). Offsets below are the byte
// offsets of ggml's block layout (ggml_quants.h); QUANT_BYTE and META_BYTE place them on the device.

#define DECLARE_BLOCK_LAYOUT(T, ID, BLOCK, Q, QN, M0, M0N, M1, M1N, GRID)                          \
  const uint T##_BLOCK = uint(BLOCK), T##_Q = uint(Q), T##_QN = uint(QN), T##_M0 = uint(M0),     \
             T##_M0N = uint(M0N), T##_M1 = uint(M1), T##_M1N = uint(M1N), T##_MN = uint(M0N + M1N), \
             T##_GRID = uint(GRID);
GGML_BLOCK_ENCODINGS(DECLARE_BLOCK_LAYOUT)
#undef DECLARE_BLOCK_LAYOUT

// Device byte of block byte AT (a constant within one of the type's ranges) of block BLK: in the
// weight buffer (quants) or the scales buffer (meta).
#define QUANT_BYTE(T, BLK, AT) (T##_GRID + (BLK) * T##_QN + (AT) - T##_Q)
#define META_BYTE(T, BLK, AT) ((BLK) * T##_MN + (T##_M1N != 0u && (AT) >= T##_M1 ? T##_M0N + (AT) - T##_M1 : (AT) - T##_M0))

uvec2 pair_at(uvec2 memory, uint byte_address) { return PairsIn(memory).v[byte_address >> 3]; }
uint word_at(uvec2 memory, uint byte_address) { return WordsIn(memory).v[byte_address >> 2]; }
// Byte `byte_address` out of the word that holds it; the half at an even byte address likewise.
uint byte_in(uint word, uint byte_address) { return (word >> ((byte_address & 3u) * 8u)) & 0xFFu; }
float half_in(uint word, uint byte_address) { return unpackHalf2x16(word >> ((byte_address & 2u) * 8u)).x; }
uvec4 bytes4(uint word) { return (uvec4(word) >> uvec4(0u, 8u, 16u, 24u)) & 0xFFu; }
// The nibbles at `shift` (0 or 4) of 8 bytes; bits 0..3 of `word` spread over the 4 lanes.
uvec4 nibbles4(uint word, uint shift) { return (bytes4(word) >> shift) & 0xFu; }
uvec4 bits4(uint word) { return (uvec4(word) >> uvec4(0u, 1u, 2u, 3u)) & 1u; }
// 8 signed levels byte j of `t` (a 16-byte table) for the 8 codes lo, hi: IQ4's kvalues.
int level_in(uvec4 t, uint code) { return bitfieldExtract(int(t[code >> 2]), int((code & 3u) * 8u), 8); }
vec4 levels4(uvec4 t, uvec4 codes) {
  return vec4(level_in(t, codes.x), level_in(t, codes.y), level_in(t, codes.z), level_in(t, codes.w));
}
// v, negated where `signs` has the lane's bit set (the IQ2/IQ3 sign bytes; negation is exact).
vec4 signed4(vec4 v, uint signs) { return mix(v, -v, notEqual(bits4(signs), uvec4(0u))); }
// The IQ2 and IQ3 types' 8 values: db times the 8 magnitude bytes of `magnitudes` (a grid entry,
// or two 4-byte ones), negated where `signs` has their bit set.
void signed_grid8(float db, uvec2 magnitudes, uint signs, out vec4 lo, out vec4 hi) {
  precise vec4 l = db * vec4(bytes4(magnitudes.x));
  precise vec4 h = db * vec4(bytes4(magnitudes.y));
  lo = signed4(l, signs);
  hi = signed4(h, signs >> 4);
}
// The 8-bit sign pattern of a 7-bit sign index: the 8th sign makes the count of negatives even.
uint signs_of_index(uint index7) {
  uint i = index7 & 127u;
  return i | ((uint(bitCount(i)) & 1u) << 7);
}
// The IQ2 types' sub-block scale d * (0.5 + s) * 0.25.
float iq2_scale(float d, uint s) {
  precise float scale = d * (0.5 + float(s)) * 0.25;
  return scale;
}
// The IQ1 types' values dl * (grid value + shift) of the 8 signed grid bytes in `entry`.
ivec4 signed_bytes4(uint word) { return ivec4(uvec4(word) << uvec4(24u, 16u, 8u, 0u)) >> 24; }
void iq1_values(uvec2 entry, float dl, float shift, out vec4 lo, out vec4 hi) {
  precise vec4 l = dl * (vec4(signed_bytes4(entry.x)) + shift);
  precise vec4 h = dl * (vec4(signed_bytes4(entry.y)) + shift);
  lo = l;
  hi = h;
}
const float kIq1Shift = 0.125;
// The six-bit scale and min of 32-value sub-block j of a Q4_K / Q5_K meta record m (d, dmin,
// then the 12 scale bytes: k_scale_min in ggml_quants.cpp).
uint meta_byte(uvec4 m, uint i) { return (m[i >> 2] >> ((i & 3u) * 8u)) & 0xFFu; }
uvec2 k_scale_min(uvec4 m, uint j) {
  uint q = 4u;  // the scale bytes within the record
  if (j < 4u) return uvec2(meta_byte(m, q + j) & 63u, meta_byte(m, q + j + 4u) & 63u);
  return uvec2((meta_byte(m, q + j + 4u) & 0xFu) | ((meta_byte(m, q + j - 4u) >> 6) << 4),
               (meta_byte(m, q + j + 4u) >> 4) | ((meta_byte(m, q + j) >> 6) << 4));
}

// ---- 32-value blocks: byte j of qs holds value j (low nibble) and j + 16 (high): chunk k reads
// the low (k < 2) or high nibbles of qs bytes 8 (k & 1) .. + 8 ----

// Q8_0: 32 int8 quants and an f16 d per block.
void load_Q8_0(uvec2 data, uvec2 scales, uint blk, uint k, out uvec4 a, out uvec4 b) {
  a = uvec4(pair_at(data, QUANT_BYTE(Q8_0, blk, 2u) + 8u * k), word_at(scales, META_BYTE(Q8_0, blk, 0u)), 0u);
  b = uvec4(0u);
}
void decode_Q8_0(uvec2 data, uvec4 a, uvec4 b, uint blk, uint k, out vec4 lo, out vec4 hi) {
  float d = half_in(a.z, META_BYTE(Q8_0, blk, 0u));
  lo = d * int8x4(a.x);
  hi = d * int8x4(a.y);
}

void load_Q4_0(uvec2 data, uvec2 scales, uint blk, uint k, out uvec4 a, out uvec4 b) {
  a = uvec4(pair_at(data, QUANT_BYTE(Q4_0, blk, 2u) + 8u * (k & 1u)), word_at(scales, META_BYTE(Q4_0, blk, 0u)), 0u);
  b = uvec4(0u);
}
void decode_Q4_0(uvec2 data, uvec4 a, uvec4 b, uint blk, uint k, out vec4 lo, out vec4 hi) {
  float d = half_in(a.z, META_BYTE(Q4_0, blk, 0u));
  precise vec4 l = vec4(ivec4(nibbles4(a.x, 4u * (k >> 1))) - 8) * d;
  precise vec4 h = vec4(ivec4(nibbles4(a.y, 4u * (k >> 1))) - 8) * d;
  lo = l;
  hi = h;
}

void load_Q4_1(uvec2 data, uvec2 scales, uint blk, uint k, out uvec4 a, out uvec4 b) {
  a = uvec4(pair_at(data, QUANT_BYTE(Q4_1, blk, 4u) + 8u * (k & 1u)), word_at(scales, META_BYTE(Q4_1, blk, 0u)), 0u);
  b = uvec4(0u);
}
void decode_Q4_1(uvec2 data, uvec4 a, uvec4 b, uint blk, uint k, out vec4 lo, out vec4 hi) {
  vec2 dm = unpackHalf2x16(a.z);  // d, m
  precise vec4 l = vec4(nibbles4(a.x, 4u * (k >> 1))) * dm.x + dm.y;
  precise vec4 h = vec4(nibbles4(a.y, 4u * (k >> 1))) * dm.x + dm.y;
  lo = l;
  hi = h;
}

// Q5_0's 6 meta bytes (d, qh) start at an even byte: two words hold them.
void load_Q5_0(uvec2 data, uvec2 scales, uint blk, uint k, out uvec4 a, out uvec4 b) {
  uint at = META_BYTE(Q5_0, blk, 0u);
  a = uvec4(pair_at(data, QUANT_BYTE(Q5_0, blk, 6u) + 8u * (k & 1u)), word_at(scales, at), word_at(scales, at + 4u));
  b = uvec4(0u);
}
void decode_Q5_0(uvec2 data, uvec4 a, uvec4 b, uint blk, uint k, out vec4 lo, out vec4 hi) {
  bool odd = (META_BYTE(Q5_0, blk, 0u) & 2u) != 0u;
  float d = unpackHalf2x16(odd ? a.z >> 16 : a.z).x;
  uint qh = (odd ? a.w : (a.z >> 16) | (a.w << 16)) >> (8u * k);
  precise vec4 l = vec4(ivec4(nibbles4(a.x, 4u * (k >> 1)) | (bits4(qh) << 4)) - 16) * d;
  precise vec4 h = vec4(ivec4(nibbles4(a.y, 4u * (k >> 1)) | (bits4(qh >> 4) << 4)) - 16) * d;
  lo = l;
  hi = h;
}

void load_Q5_1(uvec2 data, uvec2 scales, uint blk, uint k, out uvec4 a, out uvec4 b) {
  a = uvec4(pair_at(data, QUANT_BYTE(Q5_1, blk, 8u) + 8u * (k & 1u)), pair_at(scales, META_BYTE(Q5_1, blk, 0u)));
  b = uvec4(0u);
}
void decode_Q5_1(uvec2 data, uvec4 a, uvec4 b, uint blk, uint k, out vec4 lo, out vec4 hi) {
  vec2 dm = unpackHalf2x16(a.z);
  uint qh = a.w >> (8u * k);
  precise vec4 l = vec4(nibbles4(a.x, 4u * (k >> 1)) | (bits4(qh) << 4)) * dm.x + dm.y;
  precise vec4 h = vec4(nibbles4(a.y, 4u * (k >> 1)) | (bits4(qh >> 4) << 4)) * dm.x + dm.y;
  lo = l;
  hi = h;
}

// The 16 levels in b, read once per chunk (the same 16 bytes for every lane: a broadcast).
void load_IQ4_NL(uvec2 data, uvec2 scales, uint blk, uint k, out uvec4 a, out uvec4 b) {
  a = uvec4(pair_at(data, QUANT_BYTE(IQ4_NL, blk, 2u) + 8u * (k & 1u)), word_at(scales, META_BYTE(IQ4_NL, blk, 0u)), 0u);
  b = QuadsIn(data).v[0];
}
void decode_IQ4_NL(uvec2 data, uvec4 a, uvec4 b, uint blk, uint k, out vec4 lo, out vec4 hi) {
  float d = half_in(a.z, META_BYTE(IQ4_NL, blk, 0u));
  precise vec4 l = d * levels4(b, nibbles4(a.x, 4u * (k >> 1)));
  precise vec4 h = d * levels4(b, nibbles4(a.y, 4u * (k >> 1)));
  lo = l;
  hi = h;
}

// ---- 256-value blocks ----

// Q2_K: half h = k / 16 takes qs bytes 32h .. + 32; its four runs of 32 values are the four 2-bit
// fields (run (k / 4) % 4), each two sub-blocks of 16 (scale byte k / 2: scale | min << 4).
void load_Q2_K(uvec2 data, uvec2 scales, uint blk, uint k, out uvec4 a, out uvec4 b) {
  a = uvec4(pair_at(data, QUANT_BYTE(Q2_K, blk, 16u) + 32u * (k >> 4) + 8u * (k & 3u)),
            word_at(scales, META_BYTE(Q2_K, blk, 0u) + (k >> 1)), word_at(scales, META_BYTE(Q2_K, blk, 80u)));
  b = uvec4(0u);
}
void decode_Q2_K(uvec2 data, uvec4 a, uvec4 b, uint blk, uint k, out vec4 lo, out vec4 hi) {
  uint sc = byte_in(a.z, META_BYTE(Q2_K, blk, 0u) + (k >> 1)), shift = 2u * ((k >> 2) & 3u);
  vec2 dd = unpackHalf2x16(a.w);  // d, dmin
  precise float dl = dd.x * float(sc & 0xFu), ml = dd.y * float(sc >> 4);
  precise vec4 l = dl * vec4((bytes4(a.x) >> shift) & 3u) - ml;
  precise vec4 h = dl * vec4((bytes4(a.y) >> shift) & 3u) - ml;
  lo = l;
  hi = h;
}

// Q3_K: Q2_K's runs; the third bit of run r = k / 4 is bit r of hmask bytes 8 (k & 3) .., a clear
// bit subtracting 4; the six-bit scale of sub-block k / 2 has its low nibble in scale byte
// (k / 2) % 8 and its high bits in byte 8 + (k / 2) % 4 (q3_k_scale).
void load_Q3_K(uvec2 data, uvec2 scales, uint blk, uint k, out uvec4 a, out uvec4 b) {
  uint is = k >> 1, s = META_BYTE(Q3_K, blk, 96u);
  a = uvec4(pair_at(data, QUANT_BYTE(Q3_K, blk, 32u) + 32u * (k >> 4) + 8u * (k & 3u)),
            word_at(scales, s + (is & 7u)), word_at(scales, s + 8u + (is & 3u)));
  b = uvec4(pair_at(data, QUANT_BYTE(Q3_K, blk, 0u) + 8u * (k & 3u)), word_at(scales, META_BYTE(Q3_K, blk, 108u)), 0u);
}
void decode_Q3_K(uvec2 data, uvec4 a, uvec4 b, uint blk, uint k, out vec4 lo, out vec4 hi) {
  uint is = k >> 1, run = k >> 2, s = META_BYTE(Q3_K, blk, 96u);
  uint low = (byte_in(a.z, s + (is & 7u)) >> (4u * (is >> 3))) & 0xFu;
  uint high = (byte_in(a.w, s + 8u + (is & 3u)) >> (2u * (is >> 2))) & 3u;
  precise float dl = half_in(b.z, META_BYTE(Q3_K, blk, 108u)) * float(int(low | (high << 4)) - 32);
  uint shift = 2u * (run & 3u);
  precise vec4 l = dl * vec4(ivec4((bytes4(a.x) >> shift) & 3u) - ivec4(equal((bytes4(b.x) >> run) & 1u, uvec4(0u))) * 4);
  precise vec4 h = dl * vec4(ivec4((bytes4(a.y) >> shift) & 3u) - ivec4(equal((bytes4(b.y) >> run) & 1u, uvec4(0u))) * 4);
  lo = l;
  hi = h;
}

// Q4_K: chunk c = k / 8 of 64 values takes qs bytes 32c .. + 32, the low nibbles for sub-block 2c
// and the high ones for 2c + 1; sub-block k / 4's six-bit scale and min from the 16-byte meta record.
void load_Q4_K(uvec2 data, uvec2 scales, uint blk, uint k, out uvec4 a, out uvec4 b) {
  a = uvec4(pair_at(data, QUANT_BYTE(Q4_K, blk, 16u) + 32u * (k >> 3) + 8u * (k & 3u)), 0u, 0u);
  b = QuadsIn(scales).v[META_BYTE(Q4_K, blk, 0u) >> 4];
}
void decode_Q4_K(uvec2 data, uvec4 a, uvec4 b, uint blk, uint k, out vec4 lo, out vec4 hi) {
  vec2 dd = unpackHalf2x16(b.x);
  uvec2 sm = k_scale_min(b, k >> 2);
  precise float dl = dd.x * float(sm.x), ml = dd.y * float(sm.y);
  uint shift = 4u * ((k >> 2) & 1u);
  precise vec4 l = dl * vec4(nibbles4(a.x, shift)) - ml;
  precise vec4 h = dl * vec4(nibbles4(a.y, shift)) - ml;
  lo = l;
  hi = h;
}

// Q5_K: Q4_K with a fifth bit, bit k / 4 of qh bytes 8 (k & 3) ..
void load_Q5_K(uvec2 data, uvec2 scales, uint blk, uint k, out uvec4 a, out uvec4 b) {
  a = uvec4(pair_at(data, QUANT_BYTE(Q5_K, blk, 48u) + 32u * (k >> 3) + 8u * (k & 3u)),
            pair_at(data, QUANT_BYTE(Q5_K, blk, 16u) + 8u * (k & 3u)));
  b = QuadsIn(scales).v[META_BYTE(Q5_K, blk, 0u) >> 4];
}
void decode_Q5_K(uvec2 data, uvec4 a, uvec4 b, uint blk, uint k, out vec4 lo, out vec4 hi) {
  vec2 dd = unpackHalf2x16(b.x);
  uvec2 sm = k_scale_min(b, k >> 2);
  precise float dl = dd.x * float(sm.x), ml = dd.y * float(sm.y);
  uint shift = 4u * ((k >> 2) & 1u), bit = k >> 2;
  precise vec4 l = dl * vec4(nibbles4(a.x, shift) + (((bytes4(a.z) >> bit) & 1u) << 4)) - ml;
  precise vec4 h = dl * vec4(nibbles4(a.y, shift) + (((bytes4(a.w) >> bit) & 1u) << 4)) - ml;
  lo = l;
  hi = h;
}

// Q6_K: half h = k / 16 takes ql bytes 64h .. + 64 and qh bytes 32h .. + 32; run r = (k / 4) % 4
// reads the low (r < 2) or high nibbles of ql bytes 32 (r & 1) + 8 (k & 3) .. and bits 2r, 2r + 1
// of qh bytes 8 (k & 3) ..; sub-block k / 2 has an int8 scale.
void load_Q6_K(uvec2 data, uvec2 scales, uint blk, uint k, out uvec4 a, out uvec4 b) {
  uint h = k >> 4, run = (k >> 2) & 3u;
  a = uvec4(pair_at(data, QUANT_BYTE(Q6_K, blk, 0u) + 64u * h + 32u * (run & 1u) + 8u * (k & 3u)),
            pair_at(data, QUANT_BYTE(Q6_K, blk, 128u) + 32u * h + 8u * (k & 3u)));
  b = uvec4(word_at(scales, META_BYTE(Q6_K, blk, 192u) + (k >> 1)), word_at(scales, META_BYTE(Q6_K, blk, 208u)), 0u, 0u);
}
void decode_Q6_K(uvec2 data, uvec4 a, uvec4 b, uint blk, uint k, out vec4 lo, out vec4 hi) {
  uint run = (k >> 2) & 3u, shift = 4u * (run >> 1), qshift = 2u * run;
  uint sc_at = META_BYTE(Q6_K, blk, 192u) + (k >> 1);
  precise float dl = half_in(b.y, META_BYTE(Q6_K, blk, 208u)) * float(bitfieldExtract(int(b.x), int((sc_at & 3u) * 8u), 8));
  precise vec4 l = dl * vec4(ivec4(nibbles4(a.x, shift) | (((bytes4(a.z) >> qshift) & 3u) << 4)) - 32);
  precise vec4 h = dl * vec4(ivec4(nibbles4(a.y, shift) | (((bytes4(a.w) >> qshift) & 3u) << 4)) - 32);
  lo = l;
  hi = h;
}

// IQ4_XS: 32-value sub-blocks ib = k / 4 laid out as IQ4_NL's blocks (chunk k % 4), a six-bit
// scale each (low nibble in scales_l, high bits in scales_h); the 16 levels in b.
void load_IQ4_XS(uvec2 data, uvec2 scales, uint blk, uint k, out uvec4 a, out uvec4 b) {
  a = uvec4(pair_at(data, QUANT_BYTE(IQ4_XS, blk, 8u) + 16u * (k >> 2) + 8u * (k & 1u)),
            pair_at(scales, META_BYTE(IQ4_XS, blk, 0u)));
  b = QuadsIn(data).v[0];
}
void decode_IQ4_XS(uvec2 data, uvec4 a, uvec4 b, uint blk, uint k, out vec4 lo, out vec4 hi) {
  uint ib = k >> 2;
  uint ls = ((byte_in(a.w, ib >> 1) >> (4u * (ib & 1u))) & 0xFu) | (((a.z >> (16u + 2u * ib)) & 3u) << 4);
  precise float dl = unpackHalf2x16(a.z).x * float(int(ls) - 32);
  uint shift = 4u * ((k >> 1) & 1u);
  precise vec4 l = dl * levels4(b, nibbles4(a.x, shift));
  precise vec4 h = dl * levels4(b, nibbles4(a.y, shift));
  lo = l;
  hi = h;
}

// IQ3_S: group l = k % 4 of sub-block ib = k / 4 is two 9-bit indices of 4 magnitudes each (qs
// bytes 8 ib + 2l, + 1, ninth bits from qh byte ib), a sign byte and a 4-bit scale.
void load_IQ3_S(uvec2 data, uvec2 scales, uint blk, uint k, out uvec4 a, out uvec4 b) {
  uint ib = k >> 2, l = k & 3u;
  a = uvec4(word_at(data, QUANT_BYTE(IQ3_S, blk, 2u) + 8u * ib + 2u * l), word_at(scales, META_BYTE(IQ3_S, blk, 0u)),
            word_at(scales, META_BYTE(IQ3_S, blk, 66u) + ib), word_at(scales, META_BYTE(IQ3_S, blk, 74u) + 4u * ib + l));
  b = uvec4(word_at(scales, META_BYTE(IQ3_S, blk, 106u) + (ib >> 1)), 0u, 0u, 0u);
}
void decode_IQ3_S(uvec2 data, uvec4 a, uvec4 b, uint blk, uint k, out vec4 lo, out vec4 hi) {
  uint ib = k >> 2, l = k & 3u;
  uint qs = (a.x >> (16u * (l & 1u))) & 0xFFFFu, qh = byte_in(a.z, META_BYTE(IQ3_S, blk, 66u) + ib);
  uint first = (qs & 0xFFu) | ((qh << (8u - 2u * l)) & 256u), second = (qs >> 8) | ((qh << (7u - 2u * l)) & 256u);
  uint scale = (byte_in(b.x, META_BYTE(IQ3_S, blk, 106u) + (ib >> 1)) >> (4u * (ib & 1u))) & 0xFu;
  precise float db = half_in(a.y, META_BYTE(IQ3_S, blk, 0u)) * float(1u + 2u * scale);
  uint signs = byte_in(a.w, META_BYTE(IQ3_S, blk, 74u) + 4u * ib + l);
  signed_grid8(db, uvec2(WordsIn(data).v[first], WordsIn(data).v[second]), signs, lo, hi);
}

// IQ3_XXS: group l of sub-block ib: two index bytes (qs 8 ib + 2l, + 1) and sub-block ib's u32 of
// four 7-bit sign indices and a 4-bit scale.
void load_IQ3_XXS(uvec2 data, uvec2 scales, uint blk, uint k, out uvec4 a, out uvec4 b) {
  uint ib = k >> 2;
  a = uvec4(word_at(data, QUANT_BYTE(IQ3_XXS, blk, 2u) + 8u * ib + 2u * (k & 3u)),
            word_at(data, QUANT_BYTE(IQ3_XXS, blk, 66u) + 4u * ib), word_at(scales, META_BYTE(IQ3_XXS, blk, 0u)), 0u);
  b = uvec4(0u);
}
void decode_IQ3_XXS(uvec2 data, uvec4 a, uvec4 b, uint blk, uint k, out vec4 lo, out vec4 hi) {
  uint l = k & 3u, qs = (a.x >> (16u * (l & 1u))) & 0xFFFFu, aux = a.y;
  precise float db = half_in(a.z, META_BYTE(IQ3_XXS, blk, 0u)) * (0.5 + float(aux >> 28)) * 0.5;
  uint signs = signs_of_index(aux >> (7u * l));
  signed_grid8(db, uvec2(WordsIn(data).v[qs & 0xFFu], WordsIn(data).v[qs >> 8]), signs, lo, hi);
}

// IQ2_S: group l of sub-block ib: a 10-bit index (qs byte 4 ib + l, bits 8-9 from qh byte ib), a
// sign byte, and sub-block ib's two 4-bit scales (low nibble for groups 0 and 1).
void load_IQ2_S(uvec2 data, uvec2 scales, uint blk, uint k, out uvec4 a, out uvec4 b) {
  uint ib = k >> 2;
  a = uvec4(word_at(data, QUANT_BYTE(IQ2_S, blk, 2u) + 4u * ib), word_at(data, QUANT_BYTE(IQ2_S, blk, 34u) + 4u * ib),
            word_at(scales, META_BYTE(IQ2_S, blk, 0u)), word_at(scales, META_BYTE(IQ2_S, blk, 66u) + ib));
  b = uvec4(word_at(scales, META_BYTE(IQ2_S, blk, 74u) + ib), 0u, 0u, 0u);
}
void decode_IQ2_S(uvec2 data, uvec4 a, uvec4 b, uint blk, uint k, out vec4 lo, out vec4 hi) {
  uint ib = k >> 2, l = k & 3u;
  uint index = byte_in(a.x, l) | ((byte_in(a.w, META_BYTE(IQ2_S, blk, 66u) + ib) << (8u - 2u * l)) & 0x300u);
  uint scale = byte_in(b.x, META_BYTE(IQ2_S, blk, 74u) + ib) >> (4u * (l >> 1));
  float db = iq2_scale(half_in(a.z, META_BYTE(IQ2_S, blk, 0u)), scale & 0xFu);
  uvec2 entry = PairsIn(data).v[index];
  uint signs = byte_in(a.y, l);
  signed_grid8(db, entry, signs, lo, hi);
}

// IQ2_XS: group l of sub-block ib: a u16 of a 9-bit index and a 7-bit sign index; two 4-bit scales.
void load_IQ2_XS(uvec2 data, uvec2 scales, uint blk, uint k, out uvec4 a, out uvec4 b) {
  uint ib = k >> 2;
  a = uvec4(word_at(data, QUANT_BYTE(IQ2_XS, blk, 2u) + 8u * ib + 2u * (k & 3u)),
            word_at(scales, META_BYTE(IQ2_XS, blk, 0u)), word_at(scales, META_BYTE(IQ2_XS, blk, 66u) + ib), 0u);
  b = uvec4(0u);
}
void decode_IQ2_XS(uvec2 data, uvec4 a, uvec4 b, uint blk, uint k, out vec4 lo, out vec4 hi) {
  uint ib = k >> 2, l = k & 3u;
  uint q = (a.x >> (16u * (l & 1u))) & 0xFFFFu;
  uint scale = byte_in(a.z, META_BYTE(IQ2_XS, blk, 66u) + ib) >> (4u * (l >> 1));
  float db = iq2_scale(half_in(a.y, META_BYTE(IQ2_XS, blk, 0u)), scale & 0xFu);
  uvec2 entry = PairsIn(data).v[q & 511u];
  uint signs = signs_of_index(q >> 9);
  signed_grid8(db, entry, signs, lo, hi);
}

// IQ2_XXS: sub-block ib is 8 quant bytes, four index bytes and a u32 of four 7-bit sign indices
// and a 4-bit scale.
void load_IQ2_XXS(uvec2 data, uvec2 scales, uint blk, uint k, out uvec4 a, out uvec4 b) {
  a = uvec4(pair_at(data, QUANT_BYTE(IQ2_XXS, blk, 2u) + 8u * (k >> 2)), word_at(scales, META_BYTE(IQ2_XXS, blk, 0u)), 0u);
  b = uvec4(0u);
}
void decode_IQ2_XXS(uvec2 data, uvec4 a, uvec4 b, uint blk, uint k, out vec4 lo, out vec4 hi) {
  uint l = k & 3u, aux = a.y;
  float db = iq2_scale(half_in(a.z, META_BYTE(IQ2_XXS, blk, 0u)), aux >> 28);
  uvec2 entry = PairsIn(data).v[byte_in(a.x, l)];
  uint signs = signs_of_index(aux >> (7u * l));
  signed_grid8(db, entry, signs, lo, hi);
}

// IQ1_S: group l of sub-block ib: an 11-bit index (qs byte 4 ib + l, bits 8-10 from qh u16 ib,
// which also holds a 3-bit scale and the sign of the shift).
void load_IQ1_S(uvec2 data, uvec2 scales, uint blk, uint k, out uvec4 a, out uvec4 b) {
  uint ib = k >> 2;
  a = uvec4(word_at(data, QUANT_BYTE(IQ1_S, blk, 2u) + 4u * ib), word_at(data, QUANT_BYTE(IQ1_S, blk, 34u) + 2u * ib),
            word_at(scales, META_BYTE(IQ1_S, blk, 0u)), 0u);
  b = uvec4(0u);
}
void decode_IQ1_S(uvec2 data, uvec4 a, uvec4 b, uint blk, uint k, out vec4 lo, out vec4 hi) {
  uint ib = k >> 2, l = k & 3u;
  uint qh = (a.y >> (16u * (ib & 1u))) & 0xFFFFu;
  precise float dl = half_in(a.z, META_BYTE(IQ1_S, blk, 0u)) * float(2u * ((qh >> 12) & 7u) + 1u);
  uint index = byte_in(a.x, l) | (((qh >> (3u * l)) & 7u) << 8);
  iq1_values(PairsIn(data).v[index], dl, (qh & 0x8000u) != 0u ? -kIq1Shift : kIq1Shift, lo, hi);
}

// IQ1_M: group l of sub-block ib: qs byte 4 ib + l and a nibble of qh (index bits 8-10, the
// shift's sign in bit 3); the 8 meta bytes hold two 3-bit scales per sub-block and, in their u16
// words' top nibbles, the block's f16 d.
void load_IQ1_M(uvec2 data, uvec2 scales, uint blk, uint k, out uvec4 a, out uvec4 b) {
  uint ib = k >> 2;
  a = uvec4(word_at(data, QUANT_BYTE(IQ1_M, blk, 0u) + 4u * ib), word_at(data, QUANT_BYTE(IQ1_M, blk, 32u) + 2u * ib),
            pair_at(scales, META_BYTE(IQ1_M, blk, 48u)));
  b = uvec4(0u);
}
void decode_IQ1_M(uvec2 data, uvec4 a, uvec4 b, uint blk, uint k, out vec4 lo, out vec4 hi) {
  uint ib = k >> 2, l = k & 3u;
  uint d_bits = ((a.z >> 12) & 0xFu) | ((a.z >> 24) & 0xF0u) | ((a.w >> 4) & 0xF00u) | ((a.w >> 16) & 0xF000u);
  uint sc = ((ib < 4u ? a.z : a.w) >> (16u * ((ib >> 1) & 1u))) & 0xFFFFu;  // the u16 of sub-blocks ib, ib ^ 1
  uint s3 = (sc >> (6u * (ib & 1u) + 3u * (l >> 1))) & 7u;
  precise float dl = unpackHalf2x16(d_bits).x * float(2u * s3 + 1u);
  uint h = (byte_in(a.y, 2u * (ib & 1u) + (l >> 1)) >> (4u * (l & 1u))) & 0xFu;
  uint index = byte_in(a.x, l) | ((h & 7u) << 8);
  iq1_values(PairsIn(data).v[index], dl, (h & 8u) != 0u ? -kIq1Shift : kIq1Shift, lo, hi);
}

// ---- the block types' loads and decodes, by ENCODING (a chain of branches on a specialization
// constant: each pipeline keeps one) ----

// The raw words of elements index .. index + 7 (index a multiple of 8) of a block-type matrix.
#define LOAD_BLOCK8_IF(T, ID, BLOCK, Q, QN, M0, M0N, M1, M1N, GRID) \
  if (ENCODING == ENC_##T) load_##T(data, scales, index / T##_BLOCK, (index % T##_BLOCK) >> 3, a, b); else
void load_block8(uvec2 data, uvec2 scales, uint index, out uvec4 a, out uvec4 b) {
  GGML_BLOCK_ENCODINGS(LOAD_BLOCK8_IF) {
    a = uvec4(0u);
    b = uvec4(0u);
  }
}
#undef LOAD_BLOCK8_IF
// Their values.
#define DECODE_BLOCK8_IF(T, ID, BLOCK, Q, QN, M0, M0N, M1, M1N, GRID) \
  if (ENCODING == ENC_##T) decode_##T(data, a, b, index / T##_BLOCK, (index % T##_BLOCK) >> 3, lo, hi); else
void decode_block8(uvec2 data, uvec4 a, uvec4 b, uint index, out vec4 lo, out vec4 hi) {
  GGML_BLOCK_ENCODINGS(DECODE_BLOCK8_IF) {
    lo = vec4(0.0);
    hi = vec4(0.0);
  }
}
#undef DECODE_BLOCK8_IF
