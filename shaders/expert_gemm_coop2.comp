#version 450
#extension GL_GOOGLE_include_directive : require
// The cooperative expert GEMM in steps of COOP_EXPERT_STEP2_K, two operand stages: one barrier a
// step, the next step's stores beside the last one's products (expert_gemm_coop.glsl).
#define COOP_STAGES 2
#define COOP_STEP_K COOP_EXPERT_STEP2_K
#include "expert_gemm_coop.glsl"
