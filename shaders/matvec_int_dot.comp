#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_spirv_intrinsics : require
// Decode's Q8_0 products through packed integer dot products (matvec.glsl says how).
#define MATVEC_INT_DOT 1
#include "matvec.glsl"
