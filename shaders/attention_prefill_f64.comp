#version 450
#extension GL_GOOGLE_include_directive : require
// Prefill attention with f64 sums, where the device has shaderFloat64 (attention_prefill.glsl).
#define ATTENTION_F64
#include "attention_prefill.glsl"
