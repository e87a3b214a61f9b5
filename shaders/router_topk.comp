#version 450
// The router's choice for one token: the k largest logits in descending order (ties go to the
// lowest expert index, as the CPU engine's partial sort), and the softmax over those k only.
// One invocation: E is at most a few hundred and k a few, so this is cheap and exact in order.
layout(local_size_x = 1) in;
layout(std430, binding = 0) readonly buffer Logits { float logits[]; };
layout(std430, binding = 1) writeonly buffer Chosen { uint chosen[]; };
layout(std430, binding = 2) writeonly buffer Weights { float weights[]; };
layout(push_constant) uniform Push { uint experts; uint k; } push;

const uint kMaxK = 32u;
void main() {
  uint picked[kMaxK];
  uint k = min(push.k, kMaxK);
  for (uint s = 0u; s < k; ++s) {
    int best = -1;
    for (uint e = 0u; e < push.experts; ++e) {
      bool taken = false;
      for (uint p = 0u; p < s; ++p) taken = taken || picked[p] == e;
      if (!taken && (best < 0 || logits[e] > logits[uint(best)])) best = int(e);
    }
    picked[s] = uint(best);
    chosen[s] = uint(best);
  }
  float max_logit = logits[picked[0]];
  float w[kMaxK];
  float sum = 0.0;
  for (uint s = 0u; s < k; ++s) {
    w[s] = exp(logits[picked[s]] - max_logit);
    sum += w[s];
  }
  for (uint s = 0u; s < k; ++s) weights[s] = w[s] / sum;
}
