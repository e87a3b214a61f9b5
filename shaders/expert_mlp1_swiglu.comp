#version 450
#extension GL_GOOGLE_include_directive : require
// First expert projection and SwiGLU for the selected experts, reading MXFP4 in place.
// Workgroup (j, slot): rows 2j (gate) and 2j+1 (up) of expert chosen[slot]'s mlp1, 32 lanes each,
// plus bias; act[slot, j] = (clamp(up, -limit, limit) + 1) * gate * sigmoid(1.702 * gate) with
// gate = min(gate, limit).
#include "dense_decode.glsl"
#include "mxfp4_decode.glsl"
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Blocks { uint block_words[]; };
layout(std430, binding = 1) readonly buffer Scales { uint scale_words[]; };
layout(std430, binding = 2) readonly buffer Bias { uint bias_words[]; };
layout(std430, binding = 3) readonly buffer X { float x[]; };
layout(std430, binding = 4) readonly buffer Chosen { uint chosen[]; };
layout(std430, binding = 5) writeonly buffer Act { float act[]; };  // [k, intermediate]
layout(push_constant) uniform Push { uint hidden; uint intermediate; uint bias_encoding; float limit; } push;
DEFINE_DENSE_LOADER(load_bias, bias_words)
DEFINE_MXFP4_ROW_DOT(mxfp4_dot, block_words, scale_words, x)

shared float partial[64];
void main() {
  uint j = gl_WorkGroupID.x, slot = gl_WorkGroupID.y;
  uint t = gl_LocalInvocationIndex;
  uint lane = t % 32u, which = t / 32u;  // which: 0 gate, 1 up
  uint expert = chosen[slot];
  uint row = expert * 2u * push.intermediate + 2u * j + which;
  partial[t] = mxfp4_dot(row, push.hidden / 32u, 0u, lane, 32u);
  barrier();
  for (uint s = 16u; s > 0u; s >>= 1) {
    if (lane < s) partial[t] += partial[t + s];
    barrier();
  }
  if (t == 0u) {
    float gate = partial[0] + load_bias(push.bias_encoding, row);
    float up = partial[32] + load_bias(push.bias_encoding, row + 1u);
    gate = min(gate, push.limit);
    up = clamp(up, -push.limit, push.limit);
    float glu = gate / (1.0 + exp(-1.702 * gate));
    act[slot * push.intermediate + j] = (up + 1.0) * glu;
  }
}
