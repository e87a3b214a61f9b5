#version 450
#extension GL_GOOGLE_include_directive : require
// The decode router with f64 sums, where the device has shaderFloat64 (router_decode.glsl).
#define ROUTER_F64
#include "router_decode.glsl"
