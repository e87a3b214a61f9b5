#version 450
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require
// Smallest useful kernel: y[i] = x[i] + value, buffers by device address as every engine kernel
// takes them. Proves the build embeds SPIR-V and that a device runs it (tests/core/vulkan_smoke_test.cpp).
// Test-only: embedded in the test binaries, not in the shipped ones.
layout(local_size_x = 64) in;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Floats { float v[]; };
layout(push_constant) uniform Push { uvec2 x; uvec2 y; uint n; float value; } push;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < push.n) Floats(push.y).v[i] = Floats(push.x).v[i] + push.value;
}
