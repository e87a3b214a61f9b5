#version 450
#extension GL_GOOGLE_include_directive : require
// y[v, r] = (accumulate ? y[v, r] : 0) + (sum_k W[r, k] * x[v, k] + bias[r]) for up to 8 vectors
// v at once (the batched variant reads each weight once for all of them). W [rows, cols] stays in
// its stored encoding. 64 invocations per workgroup: `lanes` per row (a power of two the host
// picks from cols, so short rows do not leave lanes idle) and 64 / lanes rows, each lane owning
// every lanes-th block of 32 columns; a shared-memory tree sums the lanes.
#include "dense_decode.glsl"
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Weight { uint weight_words[]; };
layout(std430, binding = 0) readonly buffer Weight4 { uvec4 weight_quads[]; };  // the same buffer, 16 bytes at a time
layout(std430, binding = 1) readonly buffer Bias { uint bias_words[]; };
layout(std430, binding = 2) readonly buffer X { float x[]; };
layout(std430, binding = 2) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 3) buffer Y { float y[]; };
layout(push_constant) uniform Push {
  uint rows; uint cols; uint weight_encoding; uint bias_encoding;
  uint has_bias; uint accumulate; uint vectors; uint lanes;
} push;
DEFINE_DENSE_LOADER(load_weight, weight_words)
DEFINE_DENSE_LOADER(load_bias, bias_words)

const uint kMaxVectors = 8u;
shared float partial[kMaxVectors][64];

void main() {
  uint t = gl_LocalInvocationIndex;
  uint lanes = push.lanes;
  uint lane = t % lanes;
  uint row = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * (64u / lanes) + t / lanes;
  uint vectors = min(push.vectors, kMaxVectors);
  float acc[kMaxVectors];
  for (uint v = 0u; v < kMaxVectors; ++v) acc[v] = 0.0;
  if (row < push.rows && push.weight_encoding == ENC_BF16 && (push.cols & 7u) == 0u) {
    // 8 BF16 values per 16-byte load, lane l taking chunks l, l + lanes, ...: one load instruction
    // of a 32-lane group covers 512 consecutive bytes of the row (rows start 16-byte aligned).
    uint chunks = push.cols / 8u;
    uint row_chunk = row * chunks;
    for (uint c = lane; c < chunks; c += lanes) {
      uvec4 q = weight_quads[row_chunk + c];
      vec4 w0 = vec4(uintBitsToFloat(q.x << 16), uintBitsToFloat(q.x & 0xFFFF0000u),
                     uintBitsToFloat(q.y << 16), uintBitsToFloat(q.y & 0xFFFF0000u));
      vec4 w1 = vec4(uintBitsToFloat(q.z << 16), uintBitsToFloat(q.z & 0xFFFF0000u),
                     uintBitsToFloat(q.w << 16), uintBitsToFloat(q.w & 0xFFFF0000u));
      for (uint v = 0u; v < vectors; ++v) {
        uint x_chunk = (v * push.cols) / 4u + 2u * c;
        acc[v] += dot(w0, x4[x_chunk]) + dot(w1, x4[x_chunk + 1u]);
      }
    }
  } else if (row < push.rows) {
    uint blocks = (push.cols + 31u) / 32u;
    uint row_base = row * push.cols;
    for (uint b = lane; b < blocks; b += lanes) {
      uint k0 = b * 32u;
      if (push.weight_encoding == ENC_Q8_0) {
        // One scale per block; cols is a multiple of 32 for Q8_0 tensors.
        uint block = (row_base >> 5) + b;
        float d = load_weight_half(block * 34u);
        for (uint i = 0u; i < 32u; ++i) {
          float w = d * float(int(load_weight_byte(block * 34u + 2u + i) << 24) >> 24);
          for (uint v = 0u; v < vectors; ++v) acc[v] += w * x[v * push.cols + k0 + i];
        }
      } else if (push.weight_encoding == ENC_BF16 && (push.cols & 1u) == 0u) {
        // Two BF16 values per word (even cols keep every row word-aligned).
        uint end = min(k0 + 32u, push.cols);
        for (uint k = k0; k < end; k += 2u) {
          uint word = weight_words[(row_base + k) >> 1];
          float w0 = uintBitsToFloat(word << 16), w1 = uintBitsToFloat(word & 0xFFFF0000u);
          for (uint v = 0u; v < vectors; ++v) {
            acc[v] += w0 * x[v * push.cols + k];
            acc[v] += w1 * x[v * push.cols + k + 1u];
          }
        }
      } else {
        uint end = min(k0 + 32u, push.cols);
        for (uint k = k0; k < end; ++k) {
          float w = load_weight(push.weight_encoding, row_base + k);
          for (uint v = 0u; v < vectors; ++v) acc[v] += w * x[v * push.cols + k];
        }
      }
    }
  }
  for (uint v = 0u; v < vectors; ++v) partial[v][t] = acc[v];
  barrier();
  for (uint s = lanes / 2u; s > 0u; s >>= 1) {
    if (lane < s)
      for (uint v = 0u; v < vectors; ++v) partial[v][t] += partial[v][t + s];
    barrier();
  }
  if (lane == 0u && row < push.rows) {
    float bias = push.has_bias != 0u ? load_bias(push.bias_encoding, row) : 0.0;
    for (uint v = 0u; v < vectors; ++v) {
      float value = partial[v][t] + bias;
      uint index = v * push.rows + row;
      y[index] = push.accumulate != 0u ? y[index] + value : value;
    }
  }
}
