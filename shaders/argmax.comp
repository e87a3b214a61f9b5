#version 450
#extension GL_GOOGLE_include_directive : require
// Greedy decoding on the device: result[0] = the index of the largest value (ties to the lowest
// index, as the sampler), result[1] = its bits. One workgroup.
#include "common.glsl"
layout(local_size_x = REDUCE_WORKGROUP_SIZE) in;
layout(push_constant) uniform Push { ArgmaxArgs args; };

shared float best_values[64];
shared uint best_indices[64];

void main() {
  float best = -1.0 / 0.0;
  uint index = 0xFFFFFFFFu;
  for (uint i = gl_LocalInvocationIndex; i < args.count; i += REDUCE_WORKGROUP_SIZE) {
    float v = FloatsIn(args.values).v[i];
    if (v > best || index == 0xFFFFFFFFu) {
      best = v;
      index = i;
    }
  }
  float group_best = subgroupMax(best);
  uint group_index = subgroupMin(best == group_best ? index : 0xFFFFFFFFu);
  if (subgroupElect()) {
    best_values[gl_SubgroupID] = group_best;
    best_indices[gl_SubgroupID] = group_index;
  }
  barrier();
  if (gl_LocalInvocationIndex == 0u) {
    float top = best_values[0];
    uint top_index = best_indices[0];
    for (uint s = 1u; s < gl_NumSubgroups; ++s)
      if (best_values[s] > top || (best_values[s] == top && best_indices[s] < top_index)) {
        top = best_values[s];
        top_index = best_indices[s];
      }
    Words(args.result).v[0] = top_index;
    Words(args.result).v[1] = floatBitsToUint(top);
  }
}
