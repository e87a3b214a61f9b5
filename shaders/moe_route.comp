#version 450
#extension GL_GOOGLE_include_directive : require
// Prefill: groups the (token, slot) choices of `count` tokens by expert, on the device. Counts per
// expert, their prefix sums (each expert's rows [offset, offset + count) of the grouped order),
// each choice's row (row_of[t * k + s]) and token (assign_token[row]), the list of tiles of at
// most args.tile_rows rows of one expert, and the two expert GEMMs' indirect dispatch sizes. Rows of
// one expert may come in any order: every row's products are computed alone, and moe_combine
// reads them back by (token, slot). One workgroup.
#include "common.glsl"
layout(local_size_x = REDUCE_WORKGROUP_SIZE) in;
layout(push_constant) uniform Push { MoeRouteArgs args; };

shared uint counts[kMaxExperts];
shared uint offsets[kMaxExperts];

void main() {
  uint i0 = gl_LocalInvocationIndex;
  uint choices = args.count * args.k;
  for (uint e = i0; e < args.experts; e += REDUCE_WORKGROUP_SIZE) counts[e] = 0u;
  barrier();
  for (uint i = i0; i < choices; i += REDUCE_WORKGROUP_SIZE) atomicAdd(counts[WordsIn(args.chosen).v[i]], 1u);
  barrier();
  if (i0 == 0u) {
    uint offset = 0u, tiles = 0u;
    for (uint e = 0u; e < args.experts; ++e) {
      offsets[e] = offset;
      for (uint first = 0u; first < counts[e]; first += args.tile_rows) {
        uint entry = tiles * 3u;
        Words(args.tiles).v[entry] = e;
        Words(args.tiles).v[entry + 1u] = offset + first;
        Words(args.tiles).v[entry + 2u] = min(args.tile_rows, counts[e] - first);
        ++tiles;
      }
      offset += counts[e];
      counts[e] = 0u;  // reused as each expert's cursor below
    }
    Words dispatch = Words(args.dispatch);
    dispatch.v[0] = args.n_tiles_mlp1;
    dispatch.v[1] = tiles;
    dispatch.v[2] = 1u;
    dispatch.v[3] = args.n_tiles_mlp2;
    dispatch.v[4] = tiles;
    dispatch.v[5] = 1u;
  }
  barrier();
  for (uint i = i0; i < choices; i += REDUCE_WORKGROUP_SIZE) {
    uint e = WordsIn(args.chosen).v[i];
    uint row = offsets[e] + atomicAdd(counts[e], 1u);
    Words(args.row_of).v[i] = row;
    Words(args.assign_token).v[row] = i / args.k;
  }
}
