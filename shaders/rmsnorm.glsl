// What rmsnorm.comp and rmsnorm_f64.comp share (RMSNORM_F64 defined: the f64 form).
// y[r] = (x[first_row + r] * inv_rms) * weight (f32), inv_rms = 1 / sqrt(mean(x^2) + eps), one
// workgroup per row. rmsnorm_f64.comp sums the squares in double and rounds 1/rms to f32 once, as
// the CPU engine's rms_norm, so its output is the CPU engine's bit for bit; rmsnorm.comp sums in
// f32 (the device's approximate square root and division on top: a factor off by a few f32 ulps,
// the same for every value of the row).
#include "common.glsl"
layout(local_size_x = REDUCE_WORKGROUP_SIZE) in;
layout(push_constant) uniform Push { RmsNormArgs args; };
#ifdef RMSNORM_F64
shared double row_partials[REDUCE_WORKGROUP_SIZE / 4u];  // one per subgroup (subgroups of 4 at least)
#endif

void main() {
  uint r = gl_WorkGroupID.x;
  uint base = (args.first_row + r) * args.dim;
  FloatsIn x = FloatsIn(args.x);
#ifdef RMSNORM_F64
  double sum_squares = 0.0LF;
  for (uint i = gl_LocalInvocationIndex; i < args.dim; i += REDUCE_WORKGROUP_SIZE)
    sum_squares += double(x.v[base + i]) * double(x.v[base + i]);
  sum_squares = subgroupAdd(sum_squares);
  if (subgroupElect()) row_partials[gl_SubgroupID] = sum_squares;
  barrier();
  double total = 0.0LF;
  for (uint s = 0u; s < gl_NumSubgroups; ++s) total += row_partials[s];
  float inv_rms = float(1.0LF / sqrt(total / double(args.dim) + double(args.eps)));
#else
  float sum_squares = 0.0;
  for (uint i = gl_LocalInvocationIndex; i < args.dim; i += REDUCE_WORKGROUP_SIZE) sum_squares += x.v[base + i] * x.v[base + i];
  float inv_rms = 1.0 / sqrt(workgroup_sum(sum_squares) / float(args.dim) + args.eps);
#endif
  for (uint i = gl_LocalInvocationIndex; i < args.dim; i += REDUCE_WORKGROUP_SIZE)
    Floats(args.y).v[r * args.dim + i] = (x.v[base + i] * inv_rms) * FloatsIn(args.weight).v[i];
}
