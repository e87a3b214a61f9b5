#version 450
#extension GL_GOOGLE_include_directive : require
// Decode's dense products: y[r] (+)= W[r] . x' (+ bias[r]) for one vector, W [rows, cols] in its
// stored encoding (ENCODING). x' is x, or with MATVEC_NORM its RMSNorm times `norm`, computed by
// every workgroup from x itself (x is small and cached), so the norm costs no dispatch of its own.
// Each subgroup owns ROWS_PER_SUBGROUP rows; its lanes read 16 bytes (8 values of BF16, 16 of Q8_0)
// at a time at consecutive addresses, LOADS_PER_ROW such reads per row in flight, one subgroupAdd per row. Both
// are specialization constants (GPTOSS_VK_MATVEC): few rows per subgroup make more workgroups for
// the small projections (qkv: 5120 rows), which are latency-bound where the unembedding is not.
//
// Order of work, for latency: each lane issues its first weight loads, then the workgroup stages
// x (times `norm`) in shared memory and sums its squares, and only then are the loads used. The
// RMS factor is one scalar, applied to each row's sum at the end. Shared memory holds the 8 values
// of chunk c as two vec4s in two arrays, so consecutive lanes read consecutive 16-byte slots (no
// bank conflicts), where reading x from global memory cost every lane its own cache lines.
#include "common.glsl"
layout(local_size_x = MATVEC_WORKGROUP_SIZE) in;
layout(push_constant) uniform Push { MatvecArgs args; };

shared vec4 staged_lo[kMaxMatvecCols / 8u], staged_hi[kMaxMatvecCols / 8u];

layout(constant_id = SPEC_MATVEC_ROWS) const uint ROWS_PER_SUBGROUP = MATVEC_DEFAULT_ROWS;
layout(constant_id = SPEC_MATVEC_BATCH) const uint LOADS_PER_ROW = MATVEC_DEFAULT_BATCH;
uvec4 raw[LOADS_PER_ROW][ROWS_PER_SUBGROUP][2];  // [pass][row][a chunk's two words]
float row_sums[ROWS_PER_SUBGROUP];  // module scope: glslang matches no parameter sized by a specialization constant

// A lane's chunk: 8 values (16 bytes of BF16/F16, 32 of F32), or 16 of Q8_0 (16 bytes of quants
// and the word holding their block's scale), so every encoding's weight loads are 16 bytes wide:
// with 8 quants per 8-byte load the Q8_0 products read at 0.9 TB/s where BF16's read at 1.3.
const uint kChunkValues = ENCODING == ENC_Q8_0 ? 16u : 8u;
// Q8_0 stages x as two planes of 16-value chunks (values 0-7 of chunk c in slot c of the lower
// plane, 8-15 in the upper), so consecutive lanes still read consecutive 16-byte slots.
const uint kStagePlane = kMaxMatvecCols / 16u;
uint staged_slot(uint c8) { return ENCODING == ENC_Q8_0 ? (c8 & 1u) * kStagePlane + (c8 >> 1) : c8; }

// Row first_row + r clamped to the matrix (the extra rows' sums are not written).
uint clamped_row(uint first_row, uint r) { return min(first_row + r, args.rows - 1u); }

void load_chunk(uint index, out uvec4 a, out uvec4 b) {
  if (ENCODING == ENC_Q8_0) {
    a = QuadsIn(args.weight).v[index >> 4];
    b = uvec4(WordsIn(args.scales).v[index >> 6], 0u, 0u, 0u);
  } else {
    load_raw8(args.weight, args.scales, index, a, b);
  }
}
// The chunk at element `index` (chunk c of its row) dotted with the staged x.
float chunk_dot(uvec4 a, uvec4 b, uint index, uint c) {
  if (ENCODING == ENC_Q8_0) {
    float d = unpackHalf2x16(((index >> 5) & 1u) != 0u ? (b.x >> 16) : b.x).x;
    return d * (dot(int8x4(a.x), staged_lo[c]) + dot(int8x4(a.y), staged_hi[c]) +
                dot(int8x4(a.z), staged_lo[kStagePlane + c]) + dot(int8x4(a.w), staged_hi[kStagePlane + c]));
  }
  vec4 lo, hi;
  decode_raw8(a, b, index, lo, hi);
  return dot(lo, staged_lo[c]) + dot(hi, staged_hi[c]);
}

void load_pass(uint first_row, uint chunks, uint base) {
  [[unroll]] for (uint u = 0u; u < LOADS_PER_ROW; ++u) {
    uint c = min(base + u * gl_SubgroupSize + gl_SubgroupInvocationID, chunks - 1u);
    [[unroll]] for (uint r = 0u; r < ROWS_PER_SUBGROUP; ++r)
      load_chunk(clamped_row(first_row, r) * args.cols + kChunkValues * c, raw[u][r][0], raw[u][r][1]);
  }
}

void main() {
  bool normed = (args.flags & MATVEC_NORM) != 0u;
  uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  uint row0 = (group * gl_NumSubgroups + gl_SubgroupID) * ROWS_PER_SUBGROUP;
  bool has_rows = row0 < args.rows;
  row0 = min(row0, args.rows - 1u);
  uint chunks = args.cols / kChunkValues;
  load_pass(row0, chunks, 0u);

  float sum_squares = 0.0;
  for (uint c = gl_LocalInvocationIndex; c < args.cols / 8u; c += MATVEC_WORKGROUP_SIZE) {
    vec4 lo = Vec4sIn(args.x).v[2u * c], hi = Vec4sIn(args.x).v[2u * c + 1u];
    sum_squares += dot(lo, lo) + dot(hi, hi);
    if (normed) {
      lo *= Vec4sIn(args.norm).v[2u * c];
      hi *= Vec4sIn(args.norm).v[2u * c + 1u];
    }
    staged_lo[staged_slot(c)] = lo;
    staged_hi[staged_slot(c)] = hi;
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
      [[unroll]] for (uint r = 0u; r < ROWS_PER_SUBGROUP; ++r)
        row_sums[r] += chunk_dot(raw[u][r][0], raw[u][r][1], clamped_row(row0, r) * args.cols + kChunkValues * c, c);
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
