#version 450
#extension GL_GOOGLE_include_directive : require
// The cooperative-matrix GEMMs' f16 inputs, once per product (SplitHalvesArgs): hi = a rounded to
// f16's 10 mantissa bits by integer arithmetic on its bits (exact in f16 within its range), lo =
// (a - hi) * lo_scale rounded to f16 (scaled so that a small value's lo is not an f16 subnormal).
// Rounded to nearest, hi leaves a rest of at most 12 significant bits, so lo (11) drops at most the
// value's last bit; a hi cut by a mask left 13, and lo dropped two. Each invocation splits 8 values
// of row gl_WorkGroupID.y.
#include "common.glsl"
layout(local_size_x = WORKGROUP_SIZE) in;
layout(push_constant) uniform Push { SplitHalvesArgs args; };
layout(buffer_reference, std430, buffer_reference_align = 16) writeonly buffer QuadsOut { uvec4 v[]; };

uvec4 pack8(vec4 a, vec4 b) { return uvec4(packHalf2x16(a.xy), packHalf2x16(a.zw), packHalf2x16(b.xy), packHalf2x16(b.zw)); }

void main() {
  uint r = gl_WorkGroupID.y, chunk = gl_GlobalInvocationID.x;
  if (r >= args.rows || chunk * 8u >= args.cols) return;
  uint at = (r * args.a_stride + chunk * 8u) / 4u;
  vec4 v0 = Vec4sIn(args.a).v[at], v1 = Vec4sIn(args.a).v[at + 1u];
  vec4 h0 = round_to_f16_bits(v0), h1 = round_to_f16_bits(v1);
  uint out_at = (r * args.cols + chunk * 8u) / 8u;
  QuadsOut(args.hi).v[out_at] = pack8(h0, h1);
  QuadsOut(args.lo).v[out_at] = pack8((v0 - h0) * args.lo_scale, (v1 - h1) * args.lo_scale);
}
