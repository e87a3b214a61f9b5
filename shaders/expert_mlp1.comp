#version 450
#extension GL_GOOGLE_include_directive : require
// Decode's first expert projection, a workgroup per gl_NumSubgroups items (expert_mlp1.glsl).
#include "expert_mlp1.glsl"

void main() {
  load_fp4_table();
  uint item = gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID;
  rank_and_publish();
  expert_rows_dot(args.blocks, args.scales, args.x, 0u, args.hidden, first_row_of(item), rows_of(item));
  if (item < items()) write_activations(item);
}
