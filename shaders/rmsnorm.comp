#version 450
#extension GL_GOOGLE_include_directive : require
// y[r] = x[first_row + r] * rsqrt(mean(x^2) + eps) * weight (f32), one workgroup per row.
#include "common.glsl"
layout(local_size_x = REDUCE_WORKGROUP_SIZE) in;
layout(push_constant) uniform Push { RmsNormArgs args; };

void main() {
  uint r = gl_WorkGroupID.x;
  uint base = (args.first_row + r) * args.dim;
  FloatsIn x = FloatsIn(args.x);
  float sum_squares = 0.0;
  for (uint i = gl_LocalInvocationIndex; i < args.dim; i += REDUCE_WORKGROUP_SIZE) sum_squares += x.v[base + i] * x.v[base + i];
  float inv_rms = 1.0 / sqrt(workgroup_sum(sum_squares) / float(args.dim) + args.eps);
  for (uint i = gl_LocalInvocationIndex; i < args.dim; i += REDUCE_WORKGROUP_SIZE)
    Floats(args.y).v[r * args.dim + i] = x.v[base + i] * inv_rms * FloatsIn(args.weight).v[i];
}
