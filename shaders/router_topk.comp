#version 450
// The router's choice for one token: the k largest logits in descending order (ties go to the
// lowest expert index, as the CPU engine's partial sort), and the softmax over those k only.
// Each invocation ranks its experts (how many beat it in that order) in parallel; the expert of
// rank r < k is chosen[r]. Then one invocation takes the softmax in rank order.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Logits { float logits[]; };
layout(std430, binding = 1) buffer Chosen { uint chosen[]; };
layout(std430, binding = 2) writeonly buffer Weights { float weights[]; };
layout(push_constant) uniform Push { uint experts; uint k; } push;

const uint kMaxK = 32u;
const uint kMaxShared = 1024u;
shared float shared_logits[kMaxShared];
shared uint shared_chosen[kMaxK];

void main() {
  uint t = gl_LocalInvocationIndex;
  uint experts = min(push.experts, kMaxShared);
  uint k = min(min(push.k, kMaxK), experts);
  for (uint e = t; e < experts; e += 256u) shared_logits[e] = logits[e];
  if (t < kMaxK) shared_chosen[t] = 0u;  // NaN logits rank no expert; expert 0 then, never garbage
  barrier();
  for (uint e = t; e < experts; e += 256u) {
    float value = shared_logits[e];
    uint rank = 0u;
    for (uint o = 0u; o < experts; ++o) {
      float other = shared_logits[o];
      if (other > value || (other == value && o < e)) ++rank;
    }
    if (rank < k) shared_chosen[rank] = e;
  }
  barrier();
  if (t == 0u) {
    float w[kMaxK];
    float max_logit = shared_logits[shared_chosen[0]];
    float sum = 0.0;
    for (uint s = 0u; s < k; ++s) {
      chosen[s] = shared_chosen[s];
      w[s] = exp(shared_logits[shared_chosen[s]] - max_logit);
      sum += w[s];
    }
    for (uint s = 0u; s < k; ++s) weights[s] = w[s] / sum;
  }
}
