#version 450
#extension GL_GOOGLE_include_directive : require
// The cooperative expert GEMM with W decoded by each lane straight into its B operands
// (expert_direct.glsl), in tiles of COOP_EXPERT_DIRECT_TILE_M rows x COOP_EXPERT_DIRECT_TILE_N weight
// rows: 8 subgroups of 32 x COOP_EXPERT_DIRECT_SUB_N, A in two shared stages (one barrier a step),
// the f32 C tile in shared memory of its own size over them. At about 120 registers two workgroups
// share a multiprocessor, so that one's barrier, loads and decoding overlap the other's products.
#include "common.glsl"
#define COOP_TILE_M COOP_EXPERT_DIRECT_TILE_M
#define COOP_TILE_N COOP_EXPERT_DIRECT_TILE_N
#define COOP_STAGES COOP_EXPERT_DIRECT_STAGES
#define COOP_W_PARTS 0
#define COOP_THREADS COOP_EXPERT_DIRECT_WORKGROUP_SIZE
#define COOP_SUB_N COOP_EXPERT_DIRECT_SUB_N
#define COOP_A_STRIDED
#define COOP_C_BEYOND_STAGES
#define COOP_DIRECT_W
layout(local_size_x = COOP_THREADS) in;
layout(push_constant) uniform Push { ExpertGemmArgs args; };
#include "coop_tile.glsl"
#include "expert_direct.glsl"
#include "expert_coop.glsl"

void main() { expert_gemm_coop(); }
