#version 450
#extension GL_GOOGLE_include_directive : require
// Decode, first expert projection with SwiGLU, MXFP4 read in place: workgroup (x, slot) computes
// outputs j of expert chosen[slot], MLP1_OUTPUTS_PER_SUBGROUP per subgroup, each from rows 2j
// (gate) and 2j+1 (up) of its mlp1 in one pass over the blocks (lane l takes blocks l, l + 32,
// ...: one 16-byte load per row per lane, consecutive across lanes), plus bias; then
// act[slot, j] = (clamp(up, -limit, limit) + 1) * gate * sigmoid(1.702 gate), gate = min(gate, limit).
// Each lane's 32 input values serve the 2 * MLP1_OUTPUTS_PER_SUBGROUP rows it reads.
#include "common.glsl"
layout(local_size_x = WORKGROUP_SIZE) in;
layout(push_constant) uniform Push { ExpertMlp1Args args; };

const uint kRows = 2u * MLP1_OUTPUTS_PER_SUBGROUP;

void main() {
  load_fp4_table();
  uint slot = gl_WorkGroupID.y;
  uint j0 = (gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID) * MLP1_OUTPUTS_PER_SUBGROUP;
  if (j0 >= args.intermediate) return;
  uint expert = WordsIn(args.chosen).v[slot];
  uint blocks = args.hidden / 32u;
  uint first_row = expert * 2u * args.intermediate + 2u * j0;
  uint rows = min(kRows, 2u * (args.intermediate - j0));
  float acc[kRows];
  [[unroll]] for (uint r = 0u; r < kRows; ++r) acc[r] = 0.0;
  for (uint b = gl_SubgroupInvocationID; b < blocks; b += gl_SubgroupSize) {
    vec4 x[8];
    [[unroll]] for (uint i = 0u; i < 8u; ++i) x[i] = Vec4sIn(args.x).v[b * 8u + i];
    [[unroll]] for (uint r = 0u; r < kRows; ++r) {
      if (r >= rows) break;
      uint block = (first_row + r) * blocks + b;
      uvec4 q = QuadsIn(args.blocks).v[block];
      vec4 lo, hi;
      float sum = 0.0;
      fp4x8(q.x, lo, hi);
      sum += dot(lo, x[0]) + dot(hi, x[1]);
      fp4x8(q.y, lo, hi);
      sum += dot(lo, x[2]) + dot(hi, x[3]);
      fp4x8(q.z, lo, hi);
      sum += dot(lo, x[4]) + dot(hi, x[5]);
      fp4x8(q.w, lo, hi);
      sum += dot(lo, x[6]) + dot(hi, x[7]);
      acc[r] += sum * mxfp4_scale(args.scales, block);
    }
  }
  [[unroll]] for (uint r = 0u; r < kRows; ++r) acc[r] = subgroupAdd(acc[r]);
  if (subgroupElect()) {
    [[unroll]] for (uint o = 0u; o < MLP1_OUTPUTS_PER_SUBGROUP; ++o) {
      uint j = j0 + o;
      if (j >= args.intermediate) break;
      uint row = first_row + 2u * o;
      float gate = min(acc[2u * o] + FloatsIn(args.bias).v[row], args.limit);
      float up = clamp(acc[2u * o + 1u] + FloatsIn(args.bias).v[row + 1u], -args.limit, args.limit);
      float glu = gate / (1.0 + exp(-1.702 * gate));
      Floats(args.act).v[slot * args.intermediate + j] = (up + 1.0) * glu;
    }
  }
}
