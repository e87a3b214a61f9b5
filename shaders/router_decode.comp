#version 450
#extension GL_GOOGLE_include_directive : require
// The decode router with f32 sums (router_decode.glsl says what it computes).
#include "router_decode.glsl"
