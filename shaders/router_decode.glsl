// What router_decode.comp and router_decode_f64.comp share (ROUTER_F64 defined: the f64 form).
// The MoE router of one token (a decode step), fused with the RMSNorm before it: logits[e] =
// W[e] . (x * norm) / rms(x) + bias[e], and xn = RMSNorm(x) * norm (the experts' input, written by
// workgroup 0). The decode expert kernels rank the logits (expert_ranking.glsl).
//
// One workgroup per expert. The step is a chain of latencies, not of bandwidth (32 rows of 2880 are
// 184 KB), so every load a lane needs, x, norm and its chunks of the expert's row, is issued at
// once at the start, and the sums come from registers: the sum of squares and the dot product over
// the lane's chunks, then one reduction of both (router_sums.glsl: 1/rms applies to the sum, so the
// products need not wait for the norm's factor). The batched router (router.glsl) stages x in
// shared memory first and loads the rows after the norm, two dependent trips to memory: in decode,
// spread over 8 workgroups, it took 18.8 us on an H200 (vulkan_kernel_bench), as long as the QKV
// product; this kernel 13.4 us.
//
// Sums (router_sums.glsl): router_decode.comp in f32; router_decode_f64.comp, where the device has
// shaderFloat64, in double, with 1/rms as the CPU engine's rms_norm computes it (the mean square in
// double). Both reduce the squares and the products together, one barrier; the experts' input
// that workgroup 0 writes is the CPU engine's in the f64 form, (x * 1/rms rounded to f32) * norm.
#include "common.glsl"
#include "router_sums.glsl"
layout(local_size_x = ROUTER_DECODE_WORKGROUP_SIZE) in;
layout(push_constant) uniform Push { RouterArgs args; };

// Chunks of 8 values per lane: the widest row the launcher accepts over the workgroup.
const uint kLaneChunks = (kMaxRouterHidden / 8u + ROUTER_DECODE_WORKGROUP_SIZE - 1u) / ROUTER_DECODE_WORKGROUP_SIZE;
// One slot per subgroup (subgroups of 4 lanes at least) for each of the two sums.
shared ROUTER_SUM square_sums[ROUTER_DECODE_WORKGROUP_SIZE / 4u];
shared ROUTER_SUM dot_sums[ROUTER_DECODE_WORKGROUP_SIZE / 4u];

void main() {
  uint e = gl_WorkGroupID.x, H = args.hidden, chunks = H / 8u;
  vec4 x_lo[kLaneChunks], x_hi[kLaneChunks], n_lo[kLaneChunks], n_hi[kLaneChunks];
  uvec4 raw[kLaneChunks][2];
  [[unroll]] for (uint i = 0u; i < kLaneChunks; ++i) {
    uint c = gl_LocalInvocationIndex + i * ROUTER_DECODE_WORKGROUP_SIZE;
    x_lo[i] = x_hi[i] = n_lo[i] = n_hi[i] = vec4(0.0);
    raw[i][0] = raw[i][1] = uvec4(0u);
    if (c < chunks) {
      load_raw8(args.weight, args.scales, e * H + 8u * c, raw[i][0], raw[i][1]);
      x_lo[i] = Vec4sIn(args.x).v[2u * c];
      x_hi[i] = Vec4sIn(args.x).v[2u * c + 1u];
      n_lo[i] = Vec4sIn(args.norm).v[2u * c];
      n_hi[i] = Vec4sIn(args.norm).v[2u * c + 1u];
    }
  }
  ROUTER_SUM squares = ROUTER_SUM(0.0), acc = ROUTER_SUM(0.0);
  [[unroll]] for (uint i = 0u; i < kLaneChunks; ++i) {
    uint c = gl_LocalInvocationIndex + i * ROUTER_DECODE_WORKGROUP_SIZE;
    squares += ROUTER_DOT(x_lo[i], x_lo[i]) + ROUTER_DOT(x_hi[i], x_hi[i]);
    if (c < chunks) acc += router_dot8(args.weight, raw[i][0], raw[i][1], e * H + 8u * c, x_lo[i], x_hi[i], n_lo[i], n_hi[i]);
  }
  // Each subgroup's two totals in their slots, one barrier, every invocation adding the slots in
  // subgroup order.
  squares = subgroupAdd(squares);
  acc = subgroupAdd(acc);
  if (subgroupElect()) {
    square_sums[gl_SubgroupID] = squares;
    dot_sums[gl_SubgroupID] = acc;
  }
  barrier();
  ROUTER_SUM square_total = ROUTER_SUM(0.0), dot_total = ROUTER_SUM(0.0);
  for (uint s = 0u; s < gl_NumSubgroups; ++s) {
    square_total += square_sums[s];
    dot_total += dot_sums[s];
  }
  ROUTER_SUM rms_factor = router_rms_factor(square_total, H, args.eps);
  if (gl_LocalInvocationIndex == 0u)
    Floats(args.logits).v[e] = float(dot_total * rms_factor + ROUTER_SUM(FloatsIn(args.bias).v[e]));
  if (e == 0u)
    [[unroll]] for (uint i = 0u; i < kLaneChunks; ++i) {
      uint c = gl_LocalInvocationIndex + i * ROUTER_DECODE_WORKGROUP_SIZE;
      if (c >= chunks) continue;
      Vec4s(args.xn).v[2u * c] = router_normed(x_lo[i], n_lo[i], rms_factor);
      Vec4s(args.xn).v[2u * c + 1u] = router_normed(x_hi[i], n_hi[i], rms_factor);
    }
}
