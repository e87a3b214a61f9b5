#version 450
#extension GL_GOOGLE_include_directive : require
// Decode, first expert projection with SwiGLU, MXFP4 read in place: workgroup (x, slot) computes
// outputs j of expert chosen[slot], EXPERT_OUTPUTS per subgroup, each from rows 2j
// (gate) and 2j+1 (up) of its mlp1, plus bias; then act[slot, j] = (clamp(up, -limit, limit) + 1)
// * gate * sigmoid(1.702 gate), gate = min(gate, limit). Lane l takes blocks l, l + 32, ...;
// it loads EXPERT_BATCH blocks of every row before using any (memory latency, not
// bandwidth, bounds a short row otherwise), and its 32 input values serve all the rows.
#include "common.glsl"
layout(local_size_x = WORKGROUP_SIZE) in;
layout(constant_id = SPEC_EXPERT_OUTPUTS) const uint EXPERT_OUTPUTS = 2u;
layout(constant_id = SPEC_EXPERT_BATCH) const uint EXPERT_BATCH = 4u;
layout(push_constant) uniform Push { ExpertMlp1Args args; };

const uint kRows = 2u * EXPERT_OUTPUTS;

void main() {
  load_fp4_table();
  uint slot = gl_WorkGroupID.y;
  uint j0 = (gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID) * EXPERT_OUTPUTS;
  if (j0 >= args.intermediate) return;
  uint expert = WordsIn(args.chosen).v[slot];
  uint blocks = args.hidden / 32u;
  uint first_row = expert * 2u * args.intermediate + 2u * j0;
  uint rows = min(kRows, 2u * (args.intermediate - j0));
  float acc[kRows];
  [[unroll]] for (uint r = 0u; r < kRows; ++r) acc[r] = 0.0;
  uint step = gl_SubgroupSize;
  for (uint b0 = gl_SubgroupInvocationID; b0 < blocks; b0 += EXPERT_BATCH * step) {
    uvec4 q[EXPERT_BATCH][kRows];
    float scale[EXPERT_BATCH][kRows];
    [[unroll]] for (uint u = 0u; u < EXPERT_BATCH; ++u)
      [[unroll]] for (uint r = 0u; r < kRows; ++r) {
        uint b = b0 + u * step;
        bool here = b < blocks && r < rows;
        uint block = (first_row + r) * blocks + (here ? b : 0u);
        q[u][r] = here ? QuadsIn(args.blocks).v[block] : uvec4(0u);
        scale[u][r] = here ? mxfp4_scale(args.scales, block) : 0.0;
      }
    [[unroll]] for (uint u = 0u; u < EXPERT_BATCH; ++u) {
      uint b = b0 + u * step;
      if (b >= blocks) break;
      vec4 x[8];
      [[unroll]] for (uint i = 0u; i < 8u; ++i) x[i] = Vec4sIn(args.x).v[b * 8u + i];
      [[unroll]] for (uint r = 0u; r < kRows; ++r) {
        vec4 lo, hi;
        float sum = 0.0;
        fp4x8(q[u][r].x, lo, hi);
        sum += dot(lo, x[0]) + dot(hi, x[1]);
        fp4x8(q[u][r].y, lo, hi);
        sum += dot(lo, x[2]) + dot(hi, x[3]);
        fp4x8(q[u][r].z, lo, hi);
        sum += dot(lo, x[4]) + dot(hi, x[5]);
        fp4x8(q[u][r].w, lo, hi);
        sum += dot(lo, x[6]) + dot(hi, x[7]);
        acc[r] += sum * scale[u][r];
      }
    }
  }
  [[unroll]] for (uint r = 0u; r < kRows; ++r) acc[r] = subgroupAdd(acc[r]);
  if (subgroupElect()) {
    [[unroll]] for (uint o = 0u; o < EXPERT_OUTPUTS; ++o) {
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
