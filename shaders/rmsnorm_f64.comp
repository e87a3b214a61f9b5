#version 450
#extension GL_GOOGLE_include_directive : require
// RMSNorm with the mean square in f64, where the device has shaderFloat64 (rmsnorm.glsl).
#define RMSNORM_F64
#include "rmsnorm.glsl"
