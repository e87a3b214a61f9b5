#version 450
#extension GL_GOOGLE_include_directive : require
// expert_gemm.comp on cooperative matrices (same arguments and tile list; the indirect grid's
// columns are COOP_EXPERT_TILE_N weight rows wide): expert_coop.glsl's kernel in 64 x 128 tiles of
// 8 subgroups. Twice the portable tile's weight rows, so each A tile brought to shared memory
// serves COOP_EXPERT_TILE_N of them and each barrier 8 subgroups' products (a 64 x 64 tile of 4
// subgroups, two workgroups to a multiprocessor, was 27% slower in the engine on an H200).
#include "common.glsl"
#define COOP_TILE_M GEMM_TILE_M
#define COOP_TILE_N COOP_EXPERT_TILE_N
#define COOP_STAGES COOP_EXPERT_STAGES
#define COOP_W_PARTS COOP_EXPERT_W_PARTS
#define COOP_THREADS COOP_EXPERT_WORKGROUP_SIZE
layout(local_size_x = COOP_THREADS) in;
layout(push_constant) uniform Push { ExpertGemmArgs args; };
#include "coop_tile.glsl"
#include "expert_coop.glsl"

void main() { expert_gemm_coop(); }
