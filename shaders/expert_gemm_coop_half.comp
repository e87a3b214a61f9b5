#version 450
#extension GL_GOOGLE_include_directive : require
// expert_gemm_coop.comp's half form (VulkanTuning::expert_half_tiles): the tiles of at most
// COOP_EXPERT_HALF_TILE_M rows (an expert's last; a third of the tiles at 20b, whose 64-row form
// leaves half its subgroups without products yet decodes and stores a whole W tile) as
// COOP_EXPERT_HALF_TILE_M x COOP_EXPERT_HALF_TILE_N: the same 8 subgroups of 32 x 32, all at work,
// two W blocks per invocation and step, half the workgroups for the same W decoding. Each output
// is the same sequence of products and sums as in the 64-row form, so a row's bits do not depend on
// which form its tile took (VulkanKernels.HalfExpertTilesGiveTheSameBits).
#include "common.glsl"
#define COOP_TILE_M COOP_EXPERT_HALF_TILE_M
#define COOP_TILE_N COOP_EXPERT_HALF_TILE_N
#define COOP_STAGES COOP_EXPERT_STAGES
#define COOP_W_PARTS COOP_EXPERT_W_PARTS
#define COOP_THREADS COOP_EXPERT_WORKGROUP_SIZE
layout(local_size_x = COOP_THREADS) in;
layout(push_constant) uniform Push { ExpertGemmArgs args; };
#include "coop_tile.glsl"
#include "expert_coop.glsl"
