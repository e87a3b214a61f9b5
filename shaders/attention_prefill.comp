#version 450
#extension GL_GOOGLE_include_directive : require
// Prefill attention with f32 sums (attention_prefill.glsl says what it computes).
#include "attention_prefill.glsl"
