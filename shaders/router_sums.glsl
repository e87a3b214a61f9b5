// The routers' sum type and dot product (router.glsl, router_decode.glsl; after common.glsl):
// double where the including kernel defines ROUTER_F64 (each product of two f32 values exact in
// double), else f32.
#ifdef ROUTER_F64
#define ROUTER_SUM double
#define ROUTER_DOT(a, b) dot(dvec4(a), dvec4(b))
#else
#define ROUTER_SUM float
#define ROUTER_DOT(a, b) dot(a, b)
#endif

// The dot product of the 8 weights at `index` (raw words from load_raw8) with x_lo, x_hi.
ROUTER_SUM router_dot8(uvec2 weight, uvec4 raw0, uvec4 raw1, uint index, vec4 x_lo, vec4 x_hi) {
  vec4 w_lo, w_hi;
  decode_raw8(weight, raw0, raw1, index, w_lo, w_hi);
  return ROUTER_DOT(w_lo, x_lo) + ROUTER_DOT(w_hi, x_hi);
}
