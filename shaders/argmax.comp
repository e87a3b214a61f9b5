#version 450
#extension GL_GOOGLE_include_directive : require
// Greedy decoding on the device: result[0] = the index of the largest value (ties to the lowest
// index, as the sampler), result[1] = its bits. Workgroup w reduces slice w of the values; the
// last workgroup to finish picks the best of the slices' winners.
#include "common.glsl"
layout(local_size_x = REDUCE_WORKGROUP_SIZE) in;
layout(push_constant) uniform Push { ArgmaxArgs args; };

// One slot per subgroup: as many as the workgroup's invocations, for subgroups of any size.
shared float best_values[REDUCE_WORKGROUP_SIZE];
shared uint best_indices[REDUCE_WORKGROUP_SIZE];

// The best (value, index) over the invocations' candidates: larger value, then lower index.
void reduce_best(inout float best, inout uint index) {
  float group_best = subgroupMax(best);
  uint group_index = subgroupMin(best == group_best ? index : 0xFFFFFFFFu);
  if (subgroupElect()) {
    best_values[gl_SubgroupID] = group_best;
    best_indices[gl_SubgroupID] = group_index;
  }
  barrier();
  best = best_values[0];
  index = best_indices[0];
  for (uint s = 1u; s < gl_NumSubgroups; ++s)
    if (best_values[s] > best || (best_values[s] == best && best_indices[s] < index)) {
      best = best_values[s];
      index = best_indices[s];
    }
  barrier();
}

void main() {
  uint groups = gl_NumWorkGroups.x;
  uint per_group = (args.count + groups - 1u) / groups;
  uint first = gl_WorkGroupID.x * per_group, end = min(first + per_group, args.count);
  float best = -1.0 / 0.0;
  uint index = 0xFFFFFFFFu;
  for (uint i = first + gl_LocalInvocationIndex; i < end; i += REDUCE_WORKGROUP_SIZE) {
    float v = FloatsIn(args.values).v[i];
    if (v > best || index == 0xFFFFFFFFu) {
      best = v;
      index = i;
    }
  }
  reduce_best(best, index);
  if (gl_LocalInvocationIndex == 0u) {
    SharedWords(args.partials).v[2u * gl_WorkGroupID.x] = floatBitsToUint(best);
    SharedWords(args.partials).v[2u * gl_WorkGroupID.x + 1u] = index;
  }
  if (!arrive_last(args.counters, 0u, groups)) return;
  best = -1.0 / 0.0;
  index = 0xFFFFFFFFu;
  for (uint g = gl_LocalInvocationIndex; g < groups; g += REDUCE_WORKGROUP_SIZE) {
    float v = uintBitsToFloat(SharedWords(args.partials).v[2u * g]);
    uint i = SharedWords(args.partials).v[2u * g + 1u];
    if (i != 0xFFFFFFFFu && (index == 0xFFFFFFFFu || v > best || (v == best && i < index))) {
      best = v;
      index = i;
    }
  }
  reduce_best(best, index);
  if (gl_LocalInvocationIndex == 0u) {
    Words(args.result).v[0] = index;
    Words(args.result).v[1] = floatBitsToUint(best);
  }
}
