// What router_decode.comp and router_decode_f64.comp share (ROUTER_F64 defined: the f64 form).
// The MoE router of one token (a decode step), fused with the RMSNorm before it: logits[e] =
// W[e] . xn + bias[e], xn = RMSNorm(x) * norm (the experts' input, written by workgroup 0). The
// decode expert kernels rank the logits (expert_ranking.glsl).
//
// One workgroup per expert. The step is a chain of latencies, not of bandwidth (32 rows of 2880 are
// 184 KB), so every load a lane needs, x, norm and its chunks of the expert's row, is issued at
// once at the start, and the sums come from registers: the sum of squares and the dot product over
// the lane's chunks, one subgroup sum and one workgroup barrier for each reduction. The batched
// router (router.glsl) stages x in shared memory first and loads the rows after the norm, two
// dependent trips to memory: in decode, spread over 8 workgroups, it took 18.8 us on an H200
// (vulkan_kernel_bench), as long as the QKV product; this kernel 13.4 us.
//
// Sums: router_decode.comp in f32 (the logit is (x * norm) . W times 1/rms: one reduction of both
// sums); router_decode_f64.comp, where the device has shaderFloat64, as the CPU engine computes
// them: the mean square in double and 1/rms rounded to f32 once, xn = (x * 1/rms) * norm in f32,
// each product exact in double, the logit's sum in double rounded to f32 once after the bias.
#include "common.glsl"
#include "router_sums.glsl"
layout(local_size_x = ROUTER_DECODE_WORKGROUP_SIZE) in;
layout(push_constant) uniform Push { RouterArgs args; };

// Chunks of 8 values per lane: the widest row the launcher accepts over the workgroup.
const uint kLaneChunks = (kMaxRouterHidden / 8u + ROUTER_DECODE_WORKGROUP_SIZE - 1u) / ROUTER_DECODE_WORKGROUP_SIZE;
// One slot per subgroup (subgroups of 4 lanes at least), a separate array per reduction so that
// neither waits for the other's readers.
shared ROUTER_SUM square_sums[ROUTER_DECODE_WORKGROUP_SIZE / 4u];
shared ROUTER_SUM dot_sums[ROUTER_DECODE_WORKGROUP_SIZE / 4u];

// The sum of every subgroup's value, in subgroup order: each invocation reads the same slots.
ROUTER_SUM workgroup_total(ROUTER_SUM value, bool squares) {
  value = subgroupAdd(value);
  if (subgroupElect()) {
    if (squares)
      square_sums[gl_SubgroupID] = value;
    else
      dot_sums[gl_SubgroupID] = value;
  }
  barrier();
  ROUTER_SUM total = ROUTER_SUM(0.0);
  for (uint s = 0u; s < gl_NumSubgroups; ++s) total += squares ? square_sums[s] : dot_sums[s];
  return total;
}

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
  ROUTER_SUM squares = ROUTER_SUM(0.0);
  [[unroll]] for (uint i = 0u; i < kLaneChunks; ++i)
    squares += ROUTER_DOT(x_lo[i], x_lo[i]) + ROUTER_DOT(x_hi[i], x_hi[i]);
#ifdef ROUTER_F64
  double total = workgroup_total(squares, true);
  float inv_rms = float(1.0LF / sqrt(total / double(H) + double(args.eps)));
  [[unroll]] for (uint i = 0u; i < kLaneChunks; ++i) {  // as the CPU engine's rms_norm: (x * 1/rms) * norm
    x_lo[i] = (x_lo[i] * inv_rms) * n_lo[i];
    x_hi[i] = (x_hi[i] * inv_rms) * n_hi[i];
  }
  const float kLogitScale = 1.0;  // xn is normalized already
#else
  [[unroll]] for (uint i = 0u; i < kLaneChunks; ++i) {
    x_lo[i] *= n_lo[i];
    x_hi[i] *= n_hi[i];
  }
#endif
  ROUTER_SUM acc = ROUTER_SUM(0.0);
  [[unroll]] for (uint i = 0u; i < kLaneChunks; ++i) {
    uint c = gl_LocalInvocationIndex + i * ROUTER_DECODE_WORKGROUP_SIZE;
    if (c < chunks) acc += router_dot8(args.weight, raw[i][0], raw[i][1], e * H + 8u * c, x_lo[i], x_hi[i]);
  }
#ifndef ROUTER_F64
  // One reduction of both sums: the dot product's subgroup sums beside the squares'.
  squares = subgroupAdd(squares);
  if (subgroupElect()) square_sums[gl_SubgroupID] = squares;
  float inv_rms = 0.0;
#endif
  ROUTER_SUM dot_total = workgroup_total(acc, false);
#ifndef ROUTER_F64
  float square_total = 0.0;
  for (uint s = 0u; s < gl_NumSubgroups; ++s) square_total += square_sums[s];
  inv_rms = 1.0 / sqrt(square_total / float(H) + args.eps);
  const float kLogitScale = inv_rms;  // the RMS factor, one scalar, applied to the logit
#endif
  if (gl_LocalInvocationIndex == 0u)
    Floats(args.logits).v[e] = float(dot_total * ROUTER_SUM(kLogitScale) + ROUTER_SUM(FloatsIn(args.bias).v[e]));
  if (e == 0u)
    [[unroll]] for (uint i = 0u; i < kLaneChunks; ++i) {
      uint c = gl_LocalInvocationIndex + i * ROUTER_DECODE_WORKGROUP_SIZE;
      if (c >= chunks) continue;
#ifdef ROUTER_F64
      Vec4s(args.xn).v[2u * c] = x_lo[i];
      Vec4s(args.xn).v[2u * c + 1u] = x_hi[i];
#else
      Vec4s(args.xn).v[2u * c] = x_lo[i] * inv_rms;
      Vec4s(args.xn).v[2u * c + 1u] = x_hi[i] * inv_rms;
#endif
    }
}
