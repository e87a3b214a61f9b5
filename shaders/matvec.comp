#version 450
#extension GL_GOOGLE_include_directive : require
// Decode's dense products: y[r] (+)= W[r] . x' (+ bias[r]) for one vector, W [rows, cols] in its
// stored encoding (ENCODING). x' is x, or with MATVEC_NORM its RMSNorm times `norm`, computed by
// every workgroup from x itself (x is small and cached), so the norm costs no dispatch of its own.
// Each subgroup owns MATVEC_ROWS_PER_SUBGROUP rows; its lanes read 8 values (16 bytes of BF16) at
// a time at consecutive addresses, four such reads per row in flight, one subgroupAdd per row.
#include "common.glsl"
layout(local_size_x = WORKGROUP_SIZE) in;
layout(push_constant) uniform Push { MatvecArgs args; };

void main() {
  float inv_rms = 1.0;
  bool normed = (args.flags & MATVEC_NORM) != 0u;
  if (normed) {
    float sum_squares = 0.0;
    for (uint i = gl_LocalInvocationIndex; i < args.cols / 4u; i += WORKGROUP_SIZE) {
      vec4 v = Vec4sIn(args.x).v[i];
      sum_squares += dot(v, v);
    }
    inv_rms = 1.0 / sqrt(workgroup_sum(sum_squares) / float(args.cols) + args.eps);
  }
  uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  uint row0 = (group * gl_NumSubgroups + gl_SubgroupID) * MATVEC_ROWS_PER_SUBGROUP;
  if (row0 >= args.rows) return;  // whole subgroups leave; no barrier follows
  uint row1 = min(row0 + 1u, args.rows - 1u);
  uint chunks = args.cols / 8u;
  float acc0 = 0.0, acc1 = 0.0;
  // Four chunks per lane per pass, every weight load issued before any is used: a row of a few
  // thousand values is only a few passes, so latency, not bandwidth, bounds it otherwise.
  const uint kBatch = 4u;
  uint step = gl_SubgroupSize;
  for (uint c0 = gl_SubgroupInvocationID; c0 < chunks; c0 += kBatch * step) {
    vec4 w0[kBatch][2], w1[kBatch][2];
    [[unroll]] for (uint u = 0u; u < kBatch; ++u) {
      uint c = min(c0 + u * step, chunks - 1u);
      load8(args.weight, args.scales, row0 * args.cols + 8u * c, w0[u][0], w0[u][1]);
      load8(args.weight, args.scales, row1 * args.cols + 8u * c, w1[u][0], w1[u][1]);
    }
    [[unroll]] for (uint u = 0u; u < kBatch; ++u) {
      uint c = c0 + u * step;
      if (c >= chunks) break;
      vec4 xlo = Vec4sIn(args.x).v[2u * c], xhi = Vec4sIn(args.x).v[2u * c + 1u];
      if (normed) {
        xlo = (xlo * inv_rms) * Vec4sIn(args.norm).v[2u * c];
        xhi = (xhi * inv_rms) * Vec4sIn(args.norm).v[2u * c + 1u];
      }
      acc0 += dot(w0[u][0], xlo) + dot(w0[u][1], xhi);
      acc1 += dot(w1[u][0], xlo) + dot(w1[u][1], xhi);
    }
  }
  acc0 = subgroupAdd(acc0);
  acc1 = subgroupAdd(acc1);
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
