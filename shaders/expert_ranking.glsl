// The experts a token uses, from its router logits: the k largest in descending order, ties to the
// lower expert (the CPU engine's partial sort), by ranking every expert in parallel, and the
// softmax over those k. The router ranks in prefill (router.comp writes chosen and gate_weights);
// in decode the router only writes the logits and each workgroup of the expert kernels ranks them
// itself (load_ranked_logits): no router workgroup waits for the others, and the expert kernels
// read the logits where they read the choices before, one load each way.
shared float logits[kMaxExperts];
shared uint ranked[kMaxExpertsPerToken];

// Every invocation of the workgroup calls it (`invocations` of them) after writing logits[0 ..
// experts): ranked[0 .. min(k, experts)) are the chosen experts, largest first. NaN logits rank none.
void rank_experts(uint experts, uint k, uint invocations) {
  if (gl_LocalInvocationIndex < kMaxExpertsPerToken) ranked[gl_LocalInvocationIndex] = 0u;
  barrier();  // also orders the caller's logits
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
}

// The weight of choice s (after rank_experts): e^(l_s - l_0) / sum over the k choices, summed in
// rank order (the same arithmetic wherever it is computed).
float ranked_weight(uint s, uint k) {
  float top = logits[ranked[0]], sum = 0.0;
  for (uint i = 0u; i < k; ++i) sum += exp(logits[ranked[i]] - top);
  return exp(logits[ranked[s]] - top) / sum;
}

// Decode's expert kernels: the logits [experts] the router wrote, ranked (every invocation calls).
void load_ranked_logits(uvec2 logits_address, uint experts, uint k, uint invocations) {
  for (uint e = gl_LocalInvocationIndex; e < experts; e += invocations) logits[e] = FloatsIn(logits_address).v[e];
  rank_experts(experts, k, invocations);
}
