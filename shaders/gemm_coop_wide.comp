#version 450
#extension GL_GOOGLE_include_directive : require
// The dense cooperative GEMM in COOP_DENSE_WIDE_TILE_N-wide tiles (gemm_coop.glsl): one W part, so
// only for weights whose values are exact in f16 (F16, BF16) and Q8_0's quants with their d
// applied to the sums (kScaledW), which the launcher checks (Kernels::scaled_q8_0).
#define COOP_TILE_N COOP_DENSE_WIDE_TILE_N
#define COOP_THREADS COOP_DENSE_WIDE_WORKGROUP_SIZE
#define COOP_W_PARTS COOP_DENSE_WIDE_W_PARTS
#include "gemm_coop.glsl"
