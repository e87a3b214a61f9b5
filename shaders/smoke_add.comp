#version 450
// Smallest useful kernel: y[i] = x[i] + push.value. Proves the build embeds SPIR-V and that a
// device runs it (the lavapipe test in tests/unit/vulkan_smoke_test.cpp).
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint n; float value; } push;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < push.n) y[i] = x[i] + push.value;
}
