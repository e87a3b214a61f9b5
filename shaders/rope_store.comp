#version 450
// RoPE (half-split pairs (i, i + D/2), YaRN: cos/sin of position * inv_freq[i], both times the
// concentration) on the new token's Q heads in place and K heads on their way into the cache,
// plus V's copy into the cache; the position comes from the step buffer. Invocations:
// [0, heads*D/2) rotate Q pairs, then kv_heads*D/2 rotate K pairs, then kv_heads*D copy V.
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Q { float q[]; };
layout(std430, binding = 1) readonly buffer KNew { float k_new[]; };
layout(std430, binding = 2) readonly buffer VNew { float v_new[]; };
layout(std430, binding = 3) writeonly buffer KCache { float k_cache[]; };
layout(std430, binding = 4) writeonly buffer VCache { float v_cache[]; };
layout(std430, binding = 5) readonly buffer InvFreq { float inv_freq[]; };
layout(std430, binding = 6) readonly buffer Step { uint step[]; };  // [0] token, [1] position
layout(push_constant) uniform Push { uint heads; uint kv_heads; uint head_dim; float concentration; } push;

// The f32 angle reduced to about [-pi, pi] (Cody-Waite, 2*pi split in three f32 parts, each
// step one fma): GPU sin/cos are only accurate for small arguments (NVIDIA's are approximations
// whose error grows with the argument: 1.6e-4 at 4095 rad), while positions reach 131072 rad.
// The CPU engine takes cos/sin of the same f32 angle with exact reduction; this keeps the two
// within about 1e-6 at any position.
float reduce_angle(float angle) {
  const float kTwoPiHigh = 6.28125;                  // 8 significant bits: k * it is exact
  const float kTwoPiMid = 1.9353071693331003e-3;     // f32(2*pi - high)
  const float kTwoPiLow = 1.0253376273028358e-11;    // f32(2*pi - high - mid)
  precise float k = round(angle * 0.15915494309189535);
  precise float r = fma(-k, kTwoPiHigh, angle);
  r = fma(-k, kTwoPiMid, r);
  r = fma(-k, kTwoPiLow, r);
  return r;
}

void main() {
  uint id = gl_GlobalInvocationID.x;
  uint half_dim = push.head_dim / 2u;
  uint q_pairs = push.heads * half_dim;
  uint k_pairs = push.kv_heads * half_dim;
  uint kv_rows = push.kv_heads * push.head_dim;
  uint position = step[1];
  if (id < q_pairs + k_pairs) {
    bool is_q = id < q_pairs;
    uint pair = is_q ? id : id - q_pairs;
    uint head = pair / half_dim, i = pair % half_dim;
    precise float angle = float(position) * inv_freq[i];
    float reduced = reduce_angle(angle);
    float c = cos(reduced) * push.concentration;
    float s = sin(reduced) * push.concentration;
    uint first = head * push.head_dim + i;
    if (is_q) {
      float a = q[first], b = q[first + half_dim];
      q[first] = a * c - b * s;
      q[first + half_dim] = b * c + a * s;
    } else {
      float a = k_new[first], b = k_new[first + half_dim];
      uint base = position * kv_rows;
      k_cache[base + first] = a * c - b * s;
      k_cache[base + first + half_dim] = b * c + a * s;
    }
  } else if (id < q_pairs + k_pairs + kv_rows) {
    uint i = id - q_pairs - k_pairs;
    v_cache[position * kv_rows + i] = v_new[i];
  }
}
