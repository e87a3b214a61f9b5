#version 450
#extension GL_GOOGLE_include_directive : require
// expert_gemm_coop.comp in tiles of COOP_EXPERT_WIDE_TILE_N weight rows (VulkanTuning::expert_tile
// = 192): 12 subgroups, so 12 on a multiprocessor where the 128-wide tile's registers let 8, and
// each A tile serves 192 weight rows. The f32 C tile of 64 x 192 is over the operand stages' 46 KB,
// so the sums go out 32 rows at a time.
#include "common.glsl"
#define COOP_TILE_M GEMM_TILE_M
#define COOP_TILE_N COOP_EXPERT_WIDE_TILE_N
#define COOP_STAGES COOP_EXPERT_STAGES
#define COOP_W_PARTS COOP_EXPERT_W_PARTS
#define COOP_THREADS COOP_EXPERT_WIDE_WORKGROUP_SIZE
#define COOP_A_STRIDED
#define COOP_C_ROWS 32
layout(local_size_x = COOP_THREADS) in;
layout(push_constant) uniform Push { ExpertGemmArgs args; };
#include "coop_tile.glsl"
#include "expert_coop.glsl"

void main() { expert_gemm_coop(); }
