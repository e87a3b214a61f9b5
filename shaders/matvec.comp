#version 450
#extension GL_GOOGLE_include_directive : require
// Decode's dense products: y[r] (+)= W[r] . x' (+ bias[r]) for one vector, W [rows, cols] in its
// stored encoding (ENCODING). x' is x, or with MATVEC_NORM its RMSNorm times `norm`, computed by
// every workgroup from x itself (x is small and cached), so the norm costs no dispatch of its own.
// Each subgroup owns MATVEC_ROWS_PER_SUBGROUP rows; its lanes read 8 values (16 bytes of BF16) at
// a time at consecutive addresses, kBatch such reads per row in flight, one subgroupAdd per row.
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

const uint kBatch = 4u;
uvec4 raw[kBatch][2][2];  // [pass][row][load8's two words]

void load_pass(uint row0, uint row1, uint chunks, uint base) {
  [[unroll]] for (uint u = 0u; u < kBatch; ++u) {
    uint c = min(base + u * gl_SubgroupSize + gl_SubgroupInvocationID, chunks - 1u);
    load_raw8(args.weight, args.scales, row0 * args.cols + 8u * c, raw[u][0][0], raw[u][0][1]);
    load_raw8(args.weight, args.scales, row1 * args.cols + 8u * c, raw[u][1][0], raw[u][1][1]);
  }
}

void main() {
  bool normed = (args.flags & MATVEC_NORM) != 0u;
  uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  uint row0 = (group * gl_NumSubgroups + gl_SubgroupID) * MATVEC_ROWS_PER_SUBGROUP;
  bool has_rows = row0 < args.rows;
  row0 = min(row0, args.rows - 1u);
  uint row1 = min(row0 + 1u, args.rows - 1u);
  uint chunks = args.cols / 8u;
  load_pass(row0, row1, chunks, 0u);

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

  float acc0 = 0.0, acc1 = 0.0;
  for (uint base = 0u; base < chunks; base += kBatch * gl_SubgroupSize) {
    if (base > 0u) load_pass(row0, row1, chunks, base);
    [[unroll]] for (uint u = 0u; u < kBatch; ++u) {
      uint c = base + u * gl_SubgroupSize + gl_SubgroupInvocationID;
      if (c >= chunks) break;
      vec4 xlo = staged_lo[c], xhi = staged_hi[c], lo, hi;
      decode_raw8(raw[u][0][0], raw[u][0][1], row0 * args.cols + 8u * c, lo, hi);
      acc0 += dot(lo, xlo) + dot(hi, xhi);
      decode_raw8(raw[u][1][0], raw[u][1][1], row1 * args.cols + 8u * c, lo, hi);
      acc1 += dot(lo, xlo) + dot(hi, xhi);
    }
  }
  acc0 = subgroupAdd(acc0) * inv_rms;
  acc1 = subgroupAdd(acc1) * inv_rms;
  if (subgroupElect()) {
    bool bias = (args.flags & MATVEC_BIAS) != 0u, accumulate = (args.flags & MATVEC_ACCUMULATE) != 0u;
    Floats y = Floats(args.y);
    float v0 = acc0 + (bias ? FloatsIn(args.bias).v[row0] : 0.0);
    y.v[row0] = accumulate ? y.v[row0] + v0 : v0;
    if (row0 + 1u < args.rows) {
      float v1 = acc1 + (bias ? FloatsIn(args.bias).v[row1] : 0.0);
      y.v[row1] = accumulate ? y.v[row1] + v1 : v1;
    }
  }
}
