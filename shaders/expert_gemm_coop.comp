#version 450
#extension GL_GOOGLE_include_directive : require
// The cooperative expert GEMM in steps of COOP_TILE_K, one operand stage (expert_gemm_coop.glsl).
#define COOP_STAGES 1
#define COOP_STEP_K COOP_TILE_K
#include "expert_gemm_coop.glsl"
