#version 450
#extension GL_GOOGLE_include_directive : require
// y = x * rsqrt(mean(x^2) + eps) * weight, one workgroup of 256 per row of `dim` values.
#define REDUCE_SIZE 256u
#include "dense_decode.glsl"
#include "workgroup_reduce.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Weight { uint weight_words[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint dim; uint encoding; float eps; } push;
DEFINE_DENSE_LOADER(load_weight, weight_words)
void main() {
  uint base = gl_WorkGroupID.x * push.dim;
  float sum_squares = 0.0;
  for (uint i = gl_LocalInvocationIndex; i < push.dim; i += 256u) sum_squares += x[base + i] * x[base + i];
  float total = workgroup_sum(sum_squares);
  float inv_rms = 1.0 / sqrt(total / float(push.dim) + push.eps);
  for (uint i = gl_LocalInvocationIndex; i < push.dim; i += 256u)
    y[base + i] = x[base + i] * inv_rms * load_weight(push.encoding, i);
}
