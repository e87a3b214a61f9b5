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
#define ROUTER_DOT(a, b) dot(dvec4(a), dvec4(b))
#define ROUTER_DOT3(w, x, n) dot(dvec4(w), dvec4(x) * dvec4(n))
#else
#define ROUTER_SUM float
#define ROUTER_DOT(a, b) dot(a, b)
#define ROUTER_DOT3(w, x, n) dot(w, (x) * (n))
#endif

// The dot product of the 8 weights at `index` (raw words from load_raw8) with x * norm (8 values
// each, as lo and hi vec4s).
ROUTER_SUM router_dot8(uvec2 weight, uvec4 raw0, uvec4 raw1, uint index, vec4 x_lo, vec4 x_hi, vec4 n_lo, vec4 n_hi) {
  vec4 w_lo, w_hi;
  decode_raw8(weight, raw0, raw1, index, w_lo, w_hi);
  return ROUTER_DOT3(w_lo, x_lo, n_lo) + ROUTER_DOT3(w_hi, x_hi, n_hi);
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
