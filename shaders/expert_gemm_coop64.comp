#version 450
#extension GL_GOOGLE_include_directive : require
// The cooperative expert GEMM with GEMM_TILE_N (64) weight rows per workgroup (expert_gemm_coop.glsl).
#define COOP_TILE_N GEMM_TILE_N
#define COOP_THREADS COOP_WORKGROUP_SIZE
#include "expert_gemm_coop.glsl"
