#version 450
#extension GL_GOOGLE_include_directive : require
// Decode's dense products with a workgroup per row block (matvec.glsl says how they work).
#include "matvec.glsl"

void main() {
  uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  uint row0 = first_row_of(group);
  bool has_rows = row0 < args.rows;
  row0 = min(row0, args.rows - 1u);
  uint chunks = args.cols / 8u;
  load_pass(row0, chunks, 0u);
  float inv_rms = stage_x((args.flags & MATVEC_NORM) != 0u, chunks);
  if (!has_rows) return;  // whole subgroups leave; no barrier follows
  sum_rows(row0, chunks);
  write_rows(row0, inv_rms);
}
