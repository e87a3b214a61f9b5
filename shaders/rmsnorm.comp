#version 450
#extension GL_GOOGLE_include_directive : require
// RMSNorm with f32 sums (rmsnorm.glsl says what it computes).
#include "rmsnorm.glsl"
