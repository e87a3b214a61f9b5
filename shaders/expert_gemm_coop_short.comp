#version 450
#extension GL_GOOGLE_include_directive : require
// expert_gemm_coop.comp in tiles of COOP_EXPERT_SHORT_TILE_M rows x COOP_EXPERT_SHORT_TILE_N weight
// rows (VulkanTuning::expert_tile = 256; moe_route's tiles then hold at most 32 rows): 8 subgroups
// side by side, each invocation decoding two MXFP4 blocks a step. Where the experts average fewer
// than 32 rows, the 64-row tile's second half is mostly empty and its W decoding serves few rows;
// this one decodes a block per row it fills. The f32 C tile of 32 x 256 fits over the operand stage.
#include "common.glsl"
#define COOP_TILE_M COOP_EXPERT_SHORT_TILE_M
#define COOP_TILE_N COOP_EXPERT_SHORT_TILE_N
#define COOP_STAGES COOP_EXPERT_STAGES
#define COOP_W_PARTS COOP_EXPERT_W_PARTS
#define COOP_THREADS COOP_EXPERT_SHORT_WORKGROUP_SIZE
layout(local_size_x = COOP_THREADS) in;
layout(push_constant) uniform Push { ExpertGemmArgs args; };
#include "coop_tile.glsl"
#include "expert_coop.glsl"

void main() { expert_gemm_coop(); }
