// Decode's dense products: y[r] (+)= W[r] . x' (+ bias[r]) for one vector, W [rows, cols] in its
// stored encoding (ENCODING). x' is x, or with MATVEC_NORM its RMSNorm times `norm`, computed by
// every workgroup from x itself (x is small and cached), so the norm costs no dispatch of its own.
// Each subgroup owns ROWS_PER_SUBGROUP rows; its lanes read 8 values (16 bytes of BF16) at a time at
// consecutive addresses, LOADS_PER_ROW such reads per row in flight, one subgroupAdd per row. Both
// are specialization constants (VulkanTuning::matvec_rows/matvec_loads): few rows per subgroup make more workgroups for
// the small projections (qkv: 5120 rows), which are latency-bound where the unembedding is not.
//
// Order of work, for latency: each lane issues its first weight loads, then the workgroup stages
// x (times `norm`) in shared memory and sums its squares, and only then are the loads used. The
// RMS factor is one scalar, applied to each row's sum at the end. Shared memory holds the 8 values
// of chunk c as two vec4s in two arrays, so consecutive lanes read consecutive 16-byte slots (no
// bank conflicts), where reading x from global memory cost every lane its own cache lines.
//
// matvec.comp builds this file as it is. matvec_int_dot.comp builds it with MATVEC_INT_DOT, for Q8_0
// on devices with VK_KHR_shader_integer_dot_product: x is staged as three int8 digits per value
// (x = s * (d0 * 2^16 + d1 * 2^8 + d2), s one scale per 8-value chunk: 24 bits of each chunk's
// largest value, as f32 keeps), so a chunk's dot product with 8 quants is 6 packed 4-way integer dot
// products (dp4a) and 3 conversions instead of 8 conversions and 16 float operations. The integer
// products are exact; x's rounding is at most half a unit of s (2^-24 of the chunk's largest value:
// block floating point, so a value beside a much larger one keeps fewer bits of its own). Its own
// module: the dot product's SPIR-V capability needs the device feature.
#include "common.glsl"
layout(local_size_x = MATVEC_WORKGROUP_SIZE) in;
layout(push_constant) uniform Push { MatvecArgs args; };

#ifdef MATVEC_INT_DOT
// Chunk c's digits: lo = (d0 of values 0-3, d0 of 4-7, d1 of 0-3, d1 of 4-7), hi = (d2 of 0-3,
// d2 of 4-7, the bits of s, unused); signed bytes, value 0 in the lowest.
shared uvec4 staged_lo[kMaxMatvecCols / 8u], staged_hi[kMaxMatvecCols / 8u];
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int dot4x8(uint a, uint b, spirv_literal int packed_vector_format);  // OpSDotKHR, 4x8-bit packed (format 0)
const float kDigitRange = 127.0 * 65536.0;  // the largest |value| of a chunk, in units of s
uint pack_bytes(ivec4 v) { return uint(v.x & 0xFF) | uint(v.y & 0xFF) << 8 | uint(v.z & 0xFF) << 16 | uint(v.w) << 24; }
// lo, hi (8 values) as digits and their scale.
void stage_digits(uint c, vec4 lo, vec4 hi) {
  vec4 m4 = max(abs(lo), abs(hi));
  float largest = max(max(m4.x, m4.y), max(m4.z, m4.w));
  // NaN or infinity make s non-finite, and with it every sum of the chunk (as the float path does).
  float s = max(largest, 1e-30) / kDigitRange;
  ivec4 v[2] = ivec4[2](ivec4(round(lo / s)), ivec4(round(hi / s)));
  uvec4 words[2];
  [[unroll]] for (uint h = 0u; h < 2u; ++h) {
    ivec4 d2 = (v[h] << 24) >> 24;  // signed low byte
    ivec4 rest = (v[h] - d2) >> 8;
    ivec4 d1 = (rest << 24) >> 24;
    ivec4 d0 = (rest - d1) >> 8;
    words[h] = uvec4(pack_bytes(d0), pack_bytes(d1), pack_bytes(d2), 0u);
  }
  staged_lo[c] = uvec4(words[0].x, words[1].x, words[0].y, words[1].y);
  staged_hi[c] = uvec4(words[0].z, words[1].z, floatBitsToUint(s), 0u);
}
// The 8 quants in q0, q1 dotted with chunk c's staged values, times the quants' scale d.
float chunk_dot(uvec4 digits_lo, uvec4 digits_hi, uint q0, uint q1) {
  int s0 = dot4x8(q0, digits_lo.x, 0) + dot4x8(q1, digits_lo.y, 0);
  int s1 = dot4x8(q0, digits_lo.z, 0) + dot4x8(q1, digits_lo.w, 0);
  int s2 = dot4x8(q0, digits_hi.x, 0) + dot4x8(q1, digits_hi.y, 0);
  return fma(float(s0), 65536.0, fma(float(s1), 256.0, float(s2)));
}
#else
shared vec4 staged_lo[kMaxMatvecCols / 8u], staged_hi[kMaxMatvecCols / 8u];
#endif

layout(constant_id = SPEC_MATVEC_ROWS) const uint ROWS_PER_SUBGROUP = MATVEC_DEFAULT_ROWS;
layout(constant_id = SPEC_MATVEC_BATCH) const uint LOADS_PER_ROW = MATVEC_DEFAULT_BATCH;
uvec4 raw[LOADS_PER_ROW][ROWS_PER_SUBGROUP][2];  // [pass][row][load_raw8's two words]
float row_sums[ROWS_PER_SUBGROUP];  // module scope: glslang matches no parameter sized by a specialization constant

// Row first_row + r clamped to the matrix (the extra rows' sums are not written).
uint clamped_row(uint first_row, uint r) { return min(first_row + r, args.rows - 1u); }

void load_pass(uint first_row, uint chunks, uint base) {
  [[unroll]] for (uint u = 0u; u < LOADS_PER_ROW; ++u) {
    uint c = min(base + u * gl_SubgroupSize + gl_SubgroupInvocationID, chunks - 1u);
    [[unroll]] for (uint r = 0u; r < ROWS_PER_SUBGROUP; ++r)
      load_raw8(args.weight, args.scales, clamped_row(first_row, r) * args.cols + 8u * c, raw[u][r][0], raw[u][r][1]);
  }
}

void main() {
  bool normed = (args.flags & MATVEC_NORM) != 0u;
  uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  uint row0 = (group * gl_NumSubgroups + gl_SubgroupID) * ROWS_PER_SUBGROUP;
  bool has_rows = row0 < args.rows;
  row0 = min(row0, args.rows - 1u);
  uint chunks = args.cols / 8u;
  load_pass(row0, chunks, 0u);

  float sum_squares = 0.0;
  for (uint c = gl_LocalInvocationIndex; c < chunks; c += MATVEC_WORKGROUP_SIZE) {
    vec4 lo = Vec4sIn(args.x).v[2u * c], hi = Vec4sIn(args.x).v[2u * c + 1u];
    sum_squares += dot(lo, lo) + dot(hi, hi);
    if (normed) {
      lo *= Vec4sIn(args.norm).v[2u * c];
      hi *= Vec4sIn(args.norm).v[2u * c + 1u];
    }
#ifdef MATVEC_INT_DOT
    stage_digits(c, lo, hi);
#else
    staged_lo[c] = lo;
    staged_hi[c] = hi;
#endif
  }
  float inv_rms = 1.0;
  if (normed)
    inv_rms = 1.0 / sqrt(workgroup_sum(sum_squares) / float(args.cols) + args.eps);  // its barriers order the staging
  else
    barrier();
  if (!has_rows) return;  // whole subgroups leave; no barrier follows

  [[unroll]] for (uint r = 0u; r < ROWS_PER_SUBGROUP; ++r) row_sums[r] = 0.0;
  for (uint base = 0u; base < chunks; base += LOADS_PER_ROW * gl_SubgroupSize) {
    if (base > 0u) load_pass(row0, chunks, base);
    [[unroll]] for (uint u = 0u; u < LOADS_PER_ROW; ++u) {
      uint c = base + u * gl_SubgroupSize + gl_SubgroupInvocationID;
      if (c >= chunks) break;
#ifdef MATVEC_INT_DOT
      uvec4 digits_lo = staged_lo[c], digits_hi = staged_hi[c];
      float s = uintBitsToFloat(digits_hi.z);
      [[unroll]] for (uint r = 0u; r < ROWS_PER_SUBGROUP; ++r) {
        uint index = clamped_row(row0, r) * args.cols + 8u * c;
        float d = q8_0_scale(raw[u][r][0].z, index);
        row_sums[r] = fma(d * s, chunk_dot(digits_lo, digits_hi, raw[u][r][0].x, raw[u][r][0].y), row_sums[r]);
      }
#else
      vec4 xlo = staged_lo[c], xhi = staged_hi[c], lo, hi;
      [[unroll]] for (uint r = 0u; r < ROWS_PER_SUBGROUP; ++r) {
        decode_raw8(args.weight, raw[u][r][0], raw[u][r][1], clamped_row(row0, r) * args.cols + 8u * c, lo, hi);
        row_sums[r] += dot(lo, xlo) + dot(hi, xhi);
      }
#endif
    }
  }
  bool bias = (args.flags & MATVEC_BIAS) != 0u, accumulate = (args.flags & MATVEC_ACCUMULATE) != 0u;
  Floats y = Floats(args.y);
  [[unroll]] for (uint r = 0u; r < ROWS_PER_SUBGROUP; ++r) {
    float total = subgroupAdd(row_sums[r]) * inv_rms;
    uint row = row0 + r;
    if (subgroupElect() && row < args.rows) {
      float v = total + (bias ? FloatsIn(args.bias).v[row] : 0.0);
      y.v[row] = accumulate ? y.v[row] + v : v;
    }
  }
}
