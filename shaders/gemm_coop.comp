#version 450
#extension GL_GOOGLE_include_directive : require
// The dense cooperative GEMM in GEMM_TILE_N-wide tiles, every encoding (gemm_coop.glsl).
#define COOP_TILE_N GEMM_TILE_N
#define COOP_THREADS COOP_WORKGROUP_SIZE
#define COOP_W_PARTS COOP_DENSE_W_PARTS
#include "gemm_coop.glsl"
