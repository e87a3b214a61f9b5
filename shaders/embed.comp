#version 450
#extension GL_GOOGLE_include_directive : require
// x[d] = embedding[token, d], decoded from the stored encoding; the token comes from the step
// buffer written by the host before each submit (the command buffer is recorded once).
#include "dense_decode.glsl"
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Table { uint table_words[]; };
layout(std430, binding = 1) readonly buffer Step { uint step[]; };  // [0] token, [1] position
layout(std430, binding = 2) writeonly buffer Out { float x[]; };
layout(push_constant) uniform Push { uint encoding; uint hidden; } push;
DEFINE_DENSE_LOADER(load_table, table_words)
void main() {
  uint d = gl_GlobalInvocationID.x;
  if (d < push.hidden) x[d] = load_table(push.encoding, step[0] * push.hidden + d);
}
