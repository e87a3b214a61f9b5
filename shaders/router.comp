#version 450
#extension GL_GOOGLE_include_directive : require
// The MoE router with f32 sums (router.glsl says what it computes).
#include "router.glsl"
