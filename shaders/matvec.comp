#version 450
#extension GL_GOOGLE_include_directive : require
// Decode's dense products: y[r] (+)= W[r] . x' (+ bias[r]) for one vector, W [rows, cols] in its
// stored encoding (ENCODING). x' is x, or with MATVEC_NORM its RMSNorm times `norm`, computed by
// every workgroup from x itself (x is small and cached), so the norm costs no dispatch of its own.
// Each subgroup owns ROWS_PER_SUBGROUP rows; its lanes read 8 values (16 bytes of BF16) at a time at
// consecutive addresses, LOADS_PER_ROW such reads per row in flight, one subgroupAdd per row. Both
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
    staged_lo[c] = lo;
    staged_hi[c] = hi;
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
      vec4 xlo = staged_lo[c], xhi = staged_hi[c], lo, hi;
      [[unroll]] for (uint r = 0u; r < ROWS_PER_SUBGROUP; ++r) {
        decode_raw8(raw[u][r][0], raw[u][r][1], clamped_row(row0, r) * args.cols + 8u * c, lo, hi);
        row_sums[r] += dot(lo, xlo) + dot(hi, xhi);
      }
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
