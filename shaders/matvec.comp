#version 450
#extension GL_GOOGLE_include_directive : require
// Decode's dense products: y[r] (+)= W[r] . x' (+ bias[r]) for one vector, W [rows, cols] in its
// stored encoding (ENCODING). x' is x, or with MATVEC_NORM its RMSNorm times `norm`, computed by
// every workgroup from x itself (x is small and cached), so the norm costs no dispatch of its own.
// Each subgroup owns MATVEC_ROWS_PER_SUBGROUP rows; its lanes read 8 values (16 bytes of BF16) at
// a time at consecutive addresses, one subgroupAdd per row.
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
  // Two chunks per lane per pass: four 16-byte weight loads in flight.
  uint step = gl_SubgroupSize;
  for (uint c = gl_SubgroupInvocationID; c < chunks; c += 2u * step) {
    uint c2 = min(c + step, chunks - 1u);
    bool second = c + step < chunks;
    vec4 xlo = Vec4sIn(args.x).v[2u * c], xhi = Vec4sIn(args.x).v[2u * c + 1u];
    vec4 ylo = Vec4sIn(args.x).v[2u * c2], yhi = Vec4sIn(args.x).v[2u * c2 + 1u];
    if (normed) {
      xlo = (xlo * inv_rms) * Vec4sIn(args.norm).v[2u * c];
      xhi = (xhi * inv_rms) * Vec4sIn(args.norm).v[2u * c + 1u];
      ylo = (ylo * inv_rms) * Vec4sIn(args.norm).v[2u * c2];
      yhi = (yhi * inv_rms) * Vec4sIn(args.norm).v[2u * c2 + 1u];
    }
    if (!second) {
      ylo = vec4(0.0);
      yhi = vec4(0.0);
    }
    vec4 w0lo, w0hi, w1lo, w1hi, v0lo, v0hi, v1lo, v1hi;
    load8(args.weight, args.scales, row0 * args.cols + 8u * c, w0lo, w0hi);
    load8(args.weight, args.scales, row1 * args.cols + 8u * c, w1lo, w1hi);
    load8(args.weight, args.scales, row0 * args.cols + 8u * c2, v0lo, v0hi);
    load8(args.weight, args.scales, row1 * args.cols + 8u * c2, v1lo, v1hi);
    acc0 += dot(w0lo, xlo) + dot(w0hi, xhi) + dot(v0lo, ylo) + dot(v0hi, yhi);
    acc1 += dot(w1lo, xlo) + dot(w1hi, xhi) + dot(v1lo, ylo) + dot(v1hi, yhi);
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
