// The routers' sum type and dot product (router.glsl, router_decode.glsl; after common.glsl):
// double where the including kernel defines ROUTER_F64, else f32.
//
// A logit is W[e] . (x * norm) times 1/rms plus the bias: the RMS factor is one scalar per token,
// applied to the sum once, so the dot product needs x and the norm, not the normalized input, and
// the sums of squares and of products can reduce together. In double each x * norm is exact (two
// f32 values), each product with the weight rounded at 2^-53, and the logit is rounded to f32 once,
// after the bias: no rounding of the normalized input to f32 enters the router. In f32 x * norm is
// rounded first, as the batched f32 router always did.
#ifdef ROUTER_F64
#define ROUTER_SUM double
#define ROUTER_VEC4 dvec4
#define ROUTER_VEC2 dvec2
#define ROUTER_DOT(a, b) dot(dvec4(a), dvec4(b))
#else
#define ROUTER_SUM float
#define ROUTER_VEC4 vec4
#define ROUTER_VEC2 vec2
#define ROUTER_DOT(a, b) dot(a, b)
#endif

// x * norm, 4 values, as a logit's sum takes them: exact in double, rounded in f32.
ROUTER_VEC4 router_xn(vec4 x, vec4 norm) { return ROUTER_VEC4(x) * ROUTER_VEC4(norm); }

// The dot product of the 8 weights at `index` (raw words from load_raw8) with x * norm (router_xn
// of 8 values, as lo and hi).
ROUTER_SUM router_dot8_xn(uvec2 weight, uvec4 raw0, uvec4 raw1, uint index, ROUTER_VEC4 xn_lo, ROUTER_VEC4 xn_hi) {
  vec4 w_lo, w_hi;
  decode_raw8(weight, raw0, raw1, index, w_lo, w_hi);
  return dot(ROUTER_VEC4(w_lo), xn_lo) + dot(ROUTER_VEC4(w_hi), xn_hi);
}
// The same from x and the norm's weights (8 values each, as lo and hi vec4s).
ROUTER_SUM router_dot8(uvec2 weight, uvec4 raw0, uvec4 raw1, uint index, vec4 x_lo, vec4 x_hi, vec4 n_lo, vec4 n_hi) {
  return router_dot8_xn(weight, raw0, raw1, index, router_xn(x_lo, n_lo), router_xn(x_hi, n_hi));
}

// 1/rms of H values from their sum of squares: in double as the CPU engine computes it, or in f32.
ROUTER_SUM router_rms_factor(ROUTER_SUM squares, uint H, float eps) {
#ifdef ROUTER_F64
  return 1.0LF / sqrt(squares / double(H) + double(eps));
#else
  return 1.0 / sqrt(squares / float(H) + eps);
#endif
}
// The experts' input, 4 values of x: in the f64 form as the CPU engine's rms_norm, (x * 1/rms
// rounded to f32) * norm; in f32 (x * norm) * 1/rms.
vec4 router_normed(vec4 x, vec4 norm, ROUTER_SUM rms_factor) {
#ifdef ROUTER_F64
  return (x * float(rms_factor)) * norm;
#else
  return (x * norm) * rms_factor;
#endif
}
