// What the two routers (router.comp, and matvec_route.comp's last workgroup in decode) share once
// the logits are in shared memory: the k largest in descending order, ties to the lower expert
// (the CPU engine's partial sort), by ranking every expert in parallel, and the softmax over those
// k. NaN logits rank none.
shared float logits[kMaxExperts];
shared uint ranked[kMaxExpertsPerToken];

// Every invocation of the workgroup calls it (`invocations` of them) after writing logits[0 ..
// experts); token t's k choices go to chosen[t * k ..] and their weights to gate_weights[t * k ..].
void select_experts(uint t, uint experts, uint k_wanted, uvec2 chosen, uvec2 gate_weights, uint invocations) {
  if (gl_LocalInvocationIndex < kMaxExpertsPerToken) ranked[gl_LocalInvocationIndex] = 0u;
  barrier();  // also orders the caller's logits
  uint k = min(k_wanted, experts);
  for (uint e = gl_LocalInvocationIndex; e < experts; e += invocations) {
    float value = logits[e];
    uint rank = 0u;
    for (uint o = 0u; o < experts; ++o) {
      float other = logits[o];
      if (other > value || (other == value && o < e)) ++rank;
    }
    if (rank < k) ranked[rank] = e;
  }
  barrier();
  if (gl_LocalInvocationIndex == 0u) {
    float top = logits[ranked[0]];
    float w[kMaxExpertsPerToken];
    float sum = 0.0;
    for (uint s = 0u; s < k; ++s) {
      Words(chosen).v[t * k + s] = ranked[s];
      w[s] = exp(logits[ranked[s]] - top);
      sum += w[s];
    }
    for (uint s = 0u; s < k; ++s) Floats(gate_weights).v[t * k + s] = w[s] / sum;
  }
}
