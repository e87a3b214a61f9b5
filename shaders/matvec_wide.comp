#version 450
#extension GL_GOOGLE_include_directive : require
// Decode's dense products of matrices with many more row blocks than the device holds workgroups
// at once (the unembedding: 6284 blocks of 32 rows at 20b against 264 workgroups on an H100), in
// workgroups that each take blocks group, group + groups, ...: x staged (and its norm computed)
// once per workgroup instead of once per block, and a block's first loads issued before the
// previous block's sums are reduced and written. matvec.glsl says how a block is computed.
#include "matvec.glsl"

void main() {
  uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  uint groups = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
  uint blocks = (args.rows + gl_NumSubgroups * ROWS_PER_SUBGROUP - 1u) / (gl_NumSubgroups * ROWS_PER_SUBGROUP);
  uint chunks = args.cols / 8u;
  load_pass(min(first_row_of(group), args.rows - 1u), chunks, 0u);
  float inv_rms = stage_x((args.flags & MATVEC_NORM) != 0u, chunks);
  for (uint block = group; block < blocks; block += groups) {
    uint row0 = first_row_of(block);
    if (row0 >= args.rows) break;  // whole subgroups leave; no barrier follows
    sum_rows(row0, chunks);
    if (block + groups < blocks) load_pass(min(first_row_of(block + groups), args.rows - 1u), chunks, 0u);
    write_rows(row0, inv_rms);
  }
}
