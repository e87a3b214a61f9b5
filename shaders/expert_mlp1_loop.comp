#version 450
#extension GL_GOOGLE_include_directive : require
// Decode's first expert projection in fewer workgroups than items, each looping over items
// item, item + stride, ... (stride: every subgroup of the grid): the logits ranked and x staged
// once per workgroup instead of once per gl_NumSubgroups items, and an item's first loads issued
// before the previous item's activations are reduced and written (expert_mlp1.glsl).
#include "expert_mlp1.glsl"

void main() {
  load_fp4_table();
  uint stride = gl_NumWorkGroups.x * gl_NumSubgroups;
  uint item = gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID;
  uint blocks = args.hidden / 32u;
  rank_and_publish();
  expert_load_batch(args.blocks, args.scales, blocks, 0u, first_row_of(item), rows_of(item));
  expert_stage_input(args.x, 0u, args.hidden);
  for (; item < items(); item += stride) {  // no barrier inside: subgroups leave when done
    expert_rows_sum(args.blocks, args.scales, args.hidden, first_row_of(item), rows_of(item));
    uint next = item + stride;
    if (next < items()) expert_load_batch(args.blocks, args.scales, blocks, 0u, first_row_of(next), rows_of(next));
    write_activations(item);
  }
}
