#version 450
#extension GL_GOOGLE_include_directive : require
// Decode's dense products: y[r] (+)= W[r] . x' (+ bias[r]) for one vector, W [rows, cols] in its
// stored encoding (ENCODING). x' is x, or with MATVEC_NORM its RMSNorm times `norm`, computed by
// every workgroup from x itself (x is small and cached), so the norm costs no dispatch of its own.
// The shape of the work: matvec.glsl.
#include "common.glsl"
#include "matvec.glsl"
layout(push_constant) uniform Push { MatvecArgs args; };

void main() {
  bool normed = (args.flags & MATVEC_NORM) != 0u;
  uint row0 = matvec_first_row();
  bool has_rows = row0 < args.rows;
  row0 = min(row0, args.rows - 1u);
  matvec_load_pass(args.weight, args.scales, args.rows, args.cols, row0, 0u);
  float inv_rms = matvec_stage(args.x, args.norm, args.cols, normed, args.eps);
  if (!has_rows) return;  // whole subgroups leave; no barrier follows
  matvec_dot(args.weight, args.scales, args.rows, args.cols, row0);

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
