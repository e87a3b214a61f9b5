#version 450
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require
#extension GL_EXT_control_flow_attributes : require
// Reads `quads` uvec4s of two buffers and nothing else: the memory system's time for the bytes
// decode attention reads, in the same wave of workgroups, against which vulkan_kernel_bench sets
// the attention kernel's (a measuring kernel; test-only, never in the shipped tools). Eight loads
// per buffer in flight per invocation; what it loads only decides a write that real data never makes.
layout(local_size_x = 256) in;
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer QuadsIn { uvec4 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Words { uint v[]; };
layout(push_constant) uniform Push { uvec2 a; uvec2 b; uvec2 sink; uint quads; } push;
void main() {
  uint stride = gl_NumWorkGroups.x * 256u, seen = 0u;
  for (uint i0 = gl_GlobalInvocationID.x; i0 < push.quads; i0 += 8u * stride) {
    uvec4 x[8], y[8];
    [[unroll]] for (uint u = 0u; u < 8u; ++u) {
      uint i = min(i0 + u * stride, push.quads - 1u);
      x[u] = QuadsIn(push.a).v[i];
      y[u] = QuadsIn(push.b).v[i];
    }
    [[unroll]] for (uint u = 0u; u < 8u; ++u) seen ^= x[u].x ^ y[u].w;
  }
  if (seen == 0x7FC00001u && push.quads == 0xFFFFFFFFu) Words(push.sink).v[0] = seen;
}
