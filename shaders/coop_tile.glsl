// The cooperative-matrix GEMM tile shared by gemm_coop.comp and expert_gemm_coop.comp
// (VK_NV_cooperative_matrix; written so the KHR form is a rename of types and calls): a
// COOP_TILE_M x COOP_TILE_N block of C = A W^T (A rows x W rows; the includer defines the two,
// COOP_THREADS, its workgroup size, and COOP_W_PARTS), COOP_TILE_K deep per step, from f16 tiles in
// shared memory, f32 accumulators. COOP_THREADS invocations = subgroups of 32, each owning a 32 x
// COOP_SUB_N block of C (32 x 32 unless the includer says 16) as (32/M) x (COOP_SUB_N/N) matrices of
// the device's M x N x K shape. With COOP_DIRECT_W (expert_direct.glsl) W has no tile here: the
// includer writes each step's B operands into coop_w_frag itself, and the stages hold A alone.
//
// Precision (PRECISION): the tensor cores multiply f16 values exactly but add the products into
// their f32 accumulator with truncation, so a long sum drifts by up to an f32 ulp per step toward
// zero (K * 2^-24 relative over K = 2880); and an f32 A or a Q8_0 weight (d * q: up to 19
// significant bits) rounded to f16 keeps 11 bits.
//   COOP_PRECISE (the default): A as f16 hi + lo (split_halves: within an f32 ulp of A; lo scaled
//     by COOP_LO_SCALE so that it stays out of f16's subnormals), W as hi + lo where its decoded
//     value is not exact in f16 (ggml's block types; BF16, F16 and MXFP4 values in f16's range
//     are), each step's products summed into fresh accumulators (hi x hi in one, the scaled lo
//     products in another), and their sum then added to the running f32 sums with the addition's
//     rounding kept (TwoSum into comp, which starts the next step's lo products, and after the
//     last step joins the sums): the partial sums are promoted every COOP_TILE_K of depth, as
//     DeepSeek-V3's FP8 GEMMs promote theirs, and the 45 f32 additions of a 2880-deep product
//     lose nothing beyond each step's own rounding. What is left is the tensor cores' truncation
//     within a step (VulkanKernels.PreciseGemmKeepsItsPartialSumsRoundings).
//   COOP_PROMOTED: COOP_PRECISE with plain f32 additions of the partial sums (faster prefill; on
//     the synthesized 20b's Q8_0 GGUF a router near-tie goes the other way from cpu-f64 with it).
//   COOP_SPLIT: A as hi + lo, W rounded to f16, one accumulator over the whole depth.
//   Q8_0 weights in the dense tiles (COOP_SCALED_W, from COOP_PROMOTED, where the launcher knows
//     the device's accumulator layout: SPEC_COOP_ACC_MAP) go in as their quants, exact in f16, in
//     one W part: each 32-deep block (one Q8_0 block of every W row) sums A's hi and lo products
//     in fresh accumulators, which are then multiplied element by element by their column's d and
//     added to acc as a step's are, so that d * q, 19 significant bits, needs no second W part.
//   COOP_FAST: A rounded to f16 (its hi part), W rounded, one accumulator.
//
// Loads: invocation t decodes 32 values (one Q8_0/MXFP4 block) of W row t/2 (depth (t%2)*32 ..
// +32) per step (and of row t/2 + COOP_THREADS/2 where kWBlocks is 2), and brings COOP_TILE_K / (COOP_THREADS / COOP_TILE_M) values of A row
// t / (COOP_THREADS / COOP_TILE_M) (hi and lo). The kernels issue the next step's global loads
// into registers before this step's products (raw bytes), so memory latency hides behind the
// matrix units; decode them into packed halves after the products (pack_w32), before the barrier
// that frees the stage, so that arithmetic issues while the tensor cores finish; and store 8
// halves at a time. The operand tiles are double-buffered where COOP_STAGES is 2 (step s in
// stage s % 2), so a step needs one barrier: the stores of step s + 1 go to the stage no subgroup
// reads in step s, and the barrier of step s + 1 waits for the products of step s before step
// s + 2 overwrites its stage; with one stage (what fits NVIDIA's 48 KiB) a second barrier follows
// the products. The result goes through a shared f32 tile, laid over the operand stages once the
// last products are done, so the epilogue (bias, accumulate, SwiGLU, scattered rows) is plain code.
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require

// Shapes this tile is written for: one 32 x COOP_SUB_N block per subgroup of 32 (COOP_SUB_N 16 only
// with COOP_DIRECT_W, whose lanes decode their own W), one or two W blocks per invocation a step
// where W has a tile (so 2 COOP_TILE_N invocations, or COOP_TILE_N: kWBlocks), whole uvec4s of A per
// invocation (or slots: COOP_A_STRIDED).
#ifndef COOP_SUB_N
#define COOP_SUB_N 32
#endif
#if COOP_THREADS * COOP_SUB_N != COOP_TILE_M * COOP_TILE_N
#error "coop_tile.glsl: COOP_THREADS must be COOP_TILE_M * COOP_TILE_N / COOP_SUB_N"
#endif
#if !defined(COOP_DIRECT_W) && COOP_THREADS != 2 * COOP_TILE_N && COOP_THREADS != COOP_TILE_N
#error "coop_tile.glsl: the W tile's blocks need COOP_THREADS of 2 * COOP_TILE_N or COOP_TILE_N"
#endif
#if COOP_SUB_N != 32 && !defined(COOP_DIRECT_W)
#error "coop_tile.glsl: subgroup blocks narrower than 32 columns only with COOP_DIRECT_W"
#endif
#if COOP_TILE_M % 32 != 0 || COOP_TILE_N % 32 != 0 || COOP_TILE_K != 64
#error "coop_tile.glsl: unsupported tile shape"
#endif
// load_a_halves and store_a_halves: whole uvec4s of one A row per invocation; an includer that
// defines COOP_A_STRIDED takes A in slots instead (load_a_slots and store_a_slots), which fit any
// workgroup size.
#ifndef COOP_A_STRIDED
#if COOP_THREADS % COOP_TILE_M != 0 || (COOP_TILE_K / 8) % (COOP_THREADS / COOP_TILE_M) != 0
#error "coop_tile.glsl: A's quads do not divide among the invocations"
#endif
#endif
// Rows of the f32 C tile laid over the operand stages: the whole tile, or (an includer's
// COOP_C_ROWS) as many rows at a time as fit (store_coop_sums_rows).
#ifndef COOP_C_ROWS
#define COOP_C_ROWS COOP_TILE_M
#endif

layout(constant_id = SPEC_COOP_PRECISION) const uint PRECISION = COOP_PRECISE;
const bool SPLIT_A = PRECISION != COOP_FAST;
const bool kPromote = PRECISION >= COOP_PROMOTED;
const bool kCompensate = PRECISION == COOP_PRECISE;
// W as hi + lo: ggml's block types (Q8_0 and the ids after it) in the dense tile from COOP_PROMOTED
// (nested selects: glslang 12 miscompiles && between specialization constants).
layout(constant_id = SPEC_COOP_ACC_MAP) const uint kAccMap = 0u;
#ifdef COOP_SCALED_W
const bool kScaledW = ENCODING == ENC_Q8_0 ? (PRECISION >= COOP_PROMOTED ? kAccMap != 0u : false) : false;
#else
const bool kScaledW = false;
#endif
const bool kSplitW = COOP_W_PARTS == 2 ? (PRECISION >= COOP_PROMOTED ? (ENCODING == ENC_Q8_0 ? !kScaledW : ENCODING > ENC_Q8_0) : false) : false;
layout(constant_id = SPEC_COOP_M) const uint lM = 16u;
layout(constant_id = SPEC_COOP_N) const uint lN = 16u;
layout(constant_id = SPEC_COOP_K) const uint lK = 16u;

// Shared memory in uvec4s (8 halves, or 4 floats of the C tile): COOP_STAGES stages of [a_hi | a_lo | w (| w_lo)],
// sized by COOP_SHARED_BYTES (kernel_abi.h), the formula the launcher checks against the device.
const uint kRowQuads = COOP_TILE_K / 8u + 1u;  // per operand row: 144 bytes, skewed banks
const uint kATileQuads = COOP_TILE_M * kRowQuads;
const uint kStageQuads = COOP_SHARED_BYTES(COOP_TILE_M, COOP_TILE_N, COOP_W_PARTS, 1) / 16;  // [A hi | A lo | W (| W lo)]
const uint kWTileQuads = COOP_TILE_N * kRowQuads;
const uint kStrideCQuads = COOP_TILE_N / 4u + 1u;  // per C row: the row's floats and 4 more, skewed banks
#if COOP_STAGES != 1 && COOP_STAGES != 2
#error "coop_tile.glsl: COOP_STAGES must be 1 or 2"
#endif
// The f32 C tile (COOP_C_ROWS rows of kStrideCQuads, whole subgroup blocks) is laid over the operand
// stages; an includer whose stages are smaller (COOP_C_BEYOND_STAGES: A alone) takes shared memory
// for the larger of the two.
#if COOP_C_ROWS % 32 != 0
#error "coop_tile.glsl: COOP_C_ROWS must be whole 32-row blocks of subgroups"
#endif
#define COOP_C_BYTES COOP_C_TILE_BYTES(COOP_C_ROWS, COOP_TILE_N)
#ifdef COOP_C_BEYOND_STAGES
#if defined(COOP_SCALED_W)
#error "coop_tile.glsl: COOP_C_BEYOND_STAGES is for tiles without W in shared memory"
#endif
shared uvec4 coop_shared[max(COOP_SHARED_BYTES(COOP_TILE_M, COOP_TILE_N, COOP_W_PARTS, COOP_STAGES), COOP_C_BYTES) / 16];
#else
#if COOP_C_BYTES > COOP_SHARED_BYTES(COOP_TILE_M, COOP_TILE_N, COOP_W_PARTS, COOP_STAGES)
#error "coop_tile.glsl: the C tile does not fit over the operand stages"
#endif
#endif
#if defined(COOP_C_BEYOND_STAGES)
#elif defined(COOP_SCALED_W)
shared uvec4 coop_shared[(COOP_SHARED_BYTES(COOP_TILE_M, COOP_TILE_N, COOP_W_PARTS, COOP_STAGES) +
                          COOP_W_SCALE_BYTES(COOP_TILE_N, COOP_STAGES)) / 16];
#else
shared uvec4 coop_shared[COOP_SHARED_BYTES(COOP_TILE_M, COOP_TILE_N, COOP_W_PARTS, COOP_STAGES) / 16];
#endif

const uint kAThreadsPerRow = COOP_THREADS / COOP_TILE_M;
const uint kAQuads = COOP_TILE_K / 8u / kAThreadsPerRow;  // uvec4s of A (per part) per invocation per step
const uint kBlocksN = COOP_TILE_N / COOP_SUB_N;            // subgroup blocks of C across a row of subgroups
const uint kRowsPerSubgroup = 32u / lM, kColsPerSubgroup = COOP_SUB_N / lN;
fcoopmatNV<32, gl_ScopeSubgroup, lM, lN> acc[kRowsPerSubgroup][kColsPerSubgroup];
// COOP_PRECISE: what acc's last f32 addition rounded off (TwoSum), carried into the next step's
// sum (multiply_coop_tiles) or, after the last, added to acc.
fcoopmatNV<32, gl_ScopeSubgroup, lM, lN> comp[kRowsPerSubgroup][kColsPerSubgroup];

#ifdef COOP_DIRECT_W
// W's operands of a step, written element by element by the includer (expert_direct.glsl):
// subgroup column block j's depth slice s (lK = 16: the launcher takes this form for 16 x 16 x 16
// products only).
fcoopmatNV<16, gl_ScopeSubgroup, lK, lN> coop_w_frag[kColsPerSubgroup][COOP_TILE_K / 16u];
#endif

uint coop_load_a_row() { return gl_LocalInvocationIndex / kAThreadsPerRow; }
uint coop_load_a_depth() { return (gl_LocalInvocationIndex % kAThreadsPerRow) * (COOP_TILE_K / kAThreadsPerRow); }
// W blocks (32 values of one W row) an invocation decodes a step: block b's row is b * COOP_THREADS
// / 2 rows after the first's.
const uint kWBlocks = 2u * COOP_TILE_N / COOP_THREADS;
uint coop_load_w_row(uint b) { return gl_LocalInvocationIndex / 2u + b * (COOP_THREADS / 2u); }
uint coop_load_w_row() { return coop_load_w_row(0u); }
uint coop_load_w_depth() { return (gl_LocalInvocationIndex % 2u) * 32u; }

uint coop_a_hi_at(uint stage) { return stage * kStageQuads; }
uint coop_a_lo_at(uint stage) { return stage * kStageQuads + kATileQuads; }
uint coop_w_at(uint stage) { return stage * kStageQuads + 2u * kATileQuads; }
uint coop_w_lo_at(uint stage) { return coop_w_at(stage) + kWTileQuads; }
// COOP_SCALED_W: the stage's d of W row r's block b of the step is float b of row r's
// COOP_TILE_K / 32, after every stage.
uint coop_w_scale_at(uint stage) { return COOP_STAGES * kStageQuads + stage * (COOP_TILE_N * (COOP_TILE_K / 32u) / 4u); }

void clear_coop_sums() {
  [[unroll]] for (uint i = 0u; i < kRowsPerSubgroup; ++i)
    [[unroll]] for (uint j = 0u; j < kColsPerSubgroup; ++j) {
      acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, lM, lN>(0.0);
      if (kCompensate) comp[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, lM, lN>(0.0);
    }
}
uvec4 halves8(vec4 lo, vec4 hi) {
  return uvec4(packHalf2x16(lo.xy), packHalf2x16(lo.zw), packHalf2x16(hi.xy), packHalf2x16(hi.zw));
}
#ifndef COOP_A_STRIDED  // (kAQuads is 0 where a row's quads are fewer than its invocations)
// This invocation's halves of its A row (split_halves made them) into the stage's tile(s).
void store_a_halves(uint stage, uvec4 hi[kAQuads], uvec4 lo[kAQuads]) {
  uint at = coop_load_a_row() * kRowQuads + coop_load_a_depth() / 8u;
  [[unroll]] for (uint i = 0u; i < kAQuads; ++i) {
    coop_shared[coop_a_hi_at(stage) + at + i] = hi[i];
    if (SPLIT_A) coop_shared[coop_a_lo_at(stage) + at + i] = lo[i];
  }
}
// This invocation's halves of A row `row` (hi, and lo with SPLIT_A) of the step at depth k0.
void load_a_halves(uvec2 a_hi_address, uvec2 a_lo_address, uint row, uint depth, uint k0, out uvec4 hi[kAQuads],
                   out uvec4 lo[kAQuads]) {
  uint at = (row * depth + k0 + coop_load_a_depth()) / 8u;
  [[unroll]] for (uint i = 0u; i < kAQuads; ++i) {
    hi[i] = QuadsIn(a_hi_address).v[at + i];
    lo[i] = SPLIT_A ? QuadsIn(a_lo_address).v[at + i] : uvec4(0u);
  }
}
#endif
#ifdef COOP_A_STRIDED
// A's COOP_TILE_M rows x COOP_TILE_K / 8 quads a step in slots: slot s of invocation t is quad
// q = t + s * COOP_THREADS of the tile (row q / 8, quad q % 8), where that is < kAQuadsPerPart, so
// eight neighbouring invocations read one row's 128 bytes whatever the workgroup's size.
const uint kAQuadsPerPart = COOP_TILE_M * (COOP_TILE_K / 8u);
const uint kASlots = (kAQuadsPerPart + COOP_THREADS - 1u) / COOP_THREADS;
uint coop_a_slot_quad(uint s) { return gl_LocalInvocationIndex + s * COOP_THREADS; }
// The tile's row of slot s (past the tile where the slot is unused).
uint coop_a_slot_row(uint s) { return coop_a_slot_quad(s) / 8u; }
// Where slot s reads in memory for A row `a_row`: its quad of the first step.
uint coop_a_slot_source(uint s, uint a_row, uint depth) { return a_row * (depth / 8u) + coop_a_slot_quad(s) % 8u; }
// The slots' halves of the step at depth k0 (zero where a slot has no row: a_in false).
void load_a_slots(uvec2 a_hi_address, uvec2 a_lo_address, uint source[kASlots], bool a_in[kASlots], uint k0,
                  out uvec4 hi[kASlots], out uvec4 lo[kASlots]) {
  [[unroll]] for (uint s = 0u; s < kASlots; ++s) {
    hi[s] = a_in[s] ? QuadsIn(a_hi_address).v[source[s] + k0 / 8u] : uvec4(0u);
    lo[s] = a_in[s] && SPLIT_A ? QuadsIn(a_lo_address).v[source[s] + k0 / 8u] : uvec4(0u);
  }
}
void store_a_slots(uint stage, uvec4 hi[kASlots], uvec4 lo[kASlots]) {
  [[unroll]] for (uint s = 0u; s < kASlots; ++s) {
    uint q = coop_a_slot_quad(s);
    if (q < kAQuadsPerPart) {
      uint at = (q / 8u) * kRowQuads + q % 8u;
      coop_shared[coop_a_hi_at(stage) + at] = hi[s];
      if (SPLIT_A) coop_shared[coop_a_lo_at(stage) + at] = lo[s];
    }
  }
}
#endif
// This invocation's 32 weights (W row coop_load_w_row(), depth coop_load_w_depth()) as halves, to
// be stored by store_w_halves once the stage is free; with kSplitW as hi (each value rounded to
// f16's 11 significant bits, as split_halves rounds A: exact in f16 within its normal range) and
// lo = (v - hi) * COOP_LO_SCALE (at most 8 significant bits of Q8_0's d * q: exact in f16; the
// other block types' values rounded to f16 there, as A's lo is; scaled up so that it stays in
// f16's normal range where hi does: a Q8_0 weight of 1e-3 leaves a lo near 5e-7, an f16 subnormal
// with 2^-24 steps, and the products carry that step back out). round_to_f16_bits, not a round
// trip through packHalf2x16: NVIDIA's compiler folds unpackHalf2x16(packHalf2x16(v)) into v, which
// made lo zero.
void pack_w32(vec4 v[8], out uvec4 hi[4], out uvec4 lo[4]) {
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    if (kSplitW) {
      vec4 h0 = round_to_f16_bits(v[2u * i]), h1 = round_to_f16_bits(v[2u * i + 1u]);
      hi[i] = halves8(h0, h1);
      lo[i] = halves8((v[2u * i] - h0) * COOP_LO_SCALE, (v[2u * i + 1u] - h1) * COOP_LO_SCALE);
    } else {
      hi[i] = halves8(v[2u * i], v[2u * i + 1u]);
      lo[i] = uvec4(0u);
    }
  }
}
// pack_w32's halves of this invocation's block b into the stage's W tile(s).
void store_w_halves(uint stage, uint b, uvec4 hi[4], uvec4 lo[4]) {
  uint at = coop_load_w_row(b) * kRowQuads + coop_load_w_depth() / 8u;
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    coop_shared[coop_w_at(stage) + at + i] = hi[i];
    if (kSplitW) coop_shared[coop_w_lo_at(stage) + at + i] = lo[i];
  }
}
void store_w_halves(uint stage, uvec4 hi[4], uvec4 lo[4]) { store_w_halves(stage, 0u, hi, lo); }
// COOP_SCALED_W: this invocation's block's d (its 32 weights are the quants) into the stage.
void store_w_scale(uint stage, float d) {
  uint at = coop_load_w_row() * (COOP_TILE_K / 32u) + coop_load_w_depth() / 32u;
  coop_shared[coop_w_scale_at(stage) + at / 4u][at % 4u] = floatBitsToUint(d);
}
float coop_w_scale(uint stage, uint col, uint block) {
  uint at = col * (COOP_TILE_K / 32u) + block;
  return uintBitsToFloat(coop_shared[coop_w_scale_at(stage) + at / 4u][at % 4u]);
}
// The stage the next step stores into, after this step's products: with one stage, a barrier
// first so no subgroup still reads what the next stores overwrite.
uint coop_next_stage(uint stage) {
  if (COOP_STAGES == 1) {
    barrier();
    return 0u;
  }
  return stage ^ 1u;
}
// Subgroup s owns C rows sub_m .. +32 and columns sub_n .. +COOP_SUB_N.
uint coop_sub_m() { return (gl_SubgroupID / kBlocksN) * 32u; }
uint coop_sub_n() { return (gl_SubgroupID % kBlocksN) * COOP_SUB_N; }
// acc += step, by TwoSum into acc and comp (COOP_PRECISE) or by one f32 addition (COOP_PROMOTED).
void add_coop_step(uint i, uint j, fcoopmatNV<32, gl_ScopeSubgroup, lM, lN> step) {
  if (kCompensate) {  // TwoSum: s + e == acc + step exactly
    precise fcoopmatNV<32, gl_ScopeSubgroup, lM, lN> s = acc[i][j] + step;
    precise fcoopmatNV<32, gl_ScopeSubgroup, lM, lN> step_in_s = s - acc[i][j];
    precise fcoopmatNV<32, gl_ScopeSubgroup, lM, lN> e = (acc[i][j] - (s - step_in_s)) + (step - step_in_s);
    comp[i][j] = e;
    acc[i][j] = s;
  } else {
    acc[i][j] = acc[i][j] + step;
  }
}
// A subgroup whose 32 rows are all past the tile's `rows` (the last tile of an expert's rows, or of
// a product's) skips its products: its sums are never stored.
// From COOP_PROMOTED the products go into fresh accumulators per segment of the step, added to acc
// (the lo ones scaled back) at its end: the whole 64-deep step, or with kScaledW each 32-deep block
// (one Q8_0 block of every W row), whose sums are first multiplied element by element by their
// column's d (coop_w_scale; the column by COOP_ACC_COL of the device's map). Promoting after every
// product of the device's depth instead cost 10% of pp512 on an H200 and changed no layer's error
// (a2909b5); with TwoSum there, 32%, and the Q8_0 GGUF's router near-tie still went the other way.
// The dense GEMMs may promote more often (VulkanTuning::dense_promote, SPEC_COOP_PROMOTE: 16 or 32;
// nested selects, as above).
layout(constant_id = SPEC_COOP_PROMOTE) const uint kPromoteAsked = 0u;
const uint kTileSegmentK = kScaledW ? 32u : COOP_TILE_K;
const uint kSegmentK = kPromoteAsked == 0u ? kTileSegmentK : (kPromoteAsked < kTileSegmentK ? kPromoteAsked : kTileSegmentK);
void multiply_coop_tiles(uint stage, uint rows) {
  uint sub_m = coop_sub_m(), sub_n = coop_sub_n();
  if (sub_m >= rows) return;
  uint lane = gl_SubgroupInvocationID;
  [[unroll]] for (uint k0 = 0u; k0 < COOP_TILE_K; k0 += kSegmentK) {
    fcoopmatNV<32, gl_ScopeSubgroup, lM, lN> part[kRowsPerSubgroup][kColsPerSubgroup];
    fcoopmatNV<32, gl_ScopeSubgroup, lM, lN> lo_part[kRowsPerSubgroup][kColsPerSubgroup];
    // COOP_PRECISE: the rounding the previous addition left (comp) starts the segment's lo
    // products, scaled as they are (a power of two: exact), so that it joins acc with this sum and
    // no separate accumulator is live beside the segment's two during the products; with kScaledW
    // it joins the sums after their d instead (within an ulp of acc's last addition, one rounding
    // of the block's own size).
    if (kPromote)
      [[unroll]] for (uint i = 0u; i < kRowsPerSubgroup; ++i)
        [[unroll]] for (uint j = 0u; j < kColsPerSubgroup; ++j) {
          part[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, lM, lN>(0.0);
          lo_part[i][j] = kCompensate && !kScaledW ? comp[i][j] * COOP_LO_SCALE : fcoopmatNV<32, gl_ScopeSubgroup, lM, lN>(0.0);
        }
    [[unroll]] for (uint k = k0; k < k0 + kSegmentK; k += lK) {
      fcoopmatNV<16, gl_ScopeSubgroup, lM, lK> a[kRowsPerSubgroup];
      fcoopmatNV<16, gl_ScopeSubgroup, lM, lK> a2[kRowsPerSubgroup];
      [[unroll]] for (uint i = 0u; i < kRowsPerSubgroup; ++i) {
        uint row = (sub_m + i * lM) * kRowQuads + k / 8u;
        coopMatLoadNV(a[i], coop_shared, coop_a_hi_at(stage) + row, kRowQuads, false);
        if (SPLIT_A) coopMatLoadNV(a2[i], coop_shared, coop_a_lo_at(stage) + row, kRowQuads, false);
      }
      [[unroll]] for (uint j = 0u; j < kColsPerSubgroup; ++j) {
        fcoopmatNV<16, gl_ScopeSubgroup, lK, lN> b, b2;
#ifdef COOP_DIRECT_W
        b = coop_w_frag[j][k / 16u];
#else
        // W rows are B's columns: column-major B from the row-major W tile.
        uint w_row = (sub_n + j * lN) * kRowQuads + k / 8u;
        coopMatLoadNV(b, coop_shared, coop_w_at(stage) + w_row, kRowQuads, true);
        if (kSplitW) coopMatLoadNV(b2, coop_shared, coop_w_lo_at(stage) + w_row, kRowQuads, true);
#endif
        [[unroll]] for (uint i = 0u; i < kRowsPerSubgroup; ++i) {
          if (kPromote) {
            part[i][j] = coopMatMulAddNV(a[i], b, part[i][j]);
            lo_part[i][j] = coopMatMulAddNV(a2[i], b, lo_part[i][j]);
            if (kSplitW) lo_part[i][j] = coopMatMulAddNV(a[i], b2, lo_part[i][j]);
          } else {
            acc[i][j] = coopMatMulAddNV(a[i], b, acc[i][j]);
            if (SPLIT_A) acc[i][j] = coopMatMulAddNV(a2[i], b, acc[i][j]);
          }
        }
      }
    }
    if (kPromote)
      [[unroll]] for (uint j = 0u; j < kColsPerSubgroup; ++j) {
        float d[COOP_ACC_ELEMENTS];
        if (kScaledW)
          [[unroll]] for (uint e = 0u; e < COOP_ACC_ELEMENTS; ++e)
            d[e] = coop_w_scale(stage, sub_n + j * lN + COOP_ACC_COL(kAccMap, lane, e), k0 / 32u);
        [[unroll]] for (uint i = 0u; i < kRowsPerSubgroup; ++i) {
          precise fcoopmatNV<32, gl_ScopeSubgroup, lM, lN> step = part[i][j] + lo_part[i][j] * (1.0 / COOP_LO_SCALE);
          if (kScaledW) {
            // comp[i][j]'s elements through a plain variable (expert_direct.glsl says why).
            fcoopmatNV<32, gl_ScopeSubgroup, lM, lN> carried = comp[i][j];
            [[unroll]] for (uint e = 0u; e < COOP_ACC_ELEMENTS; ++e)
              step[e] = kCompensate ? step[e] * d[e] + carried[e] : step[e] * d[e];
          }
          add_coop_step(i, j, step);
        }
      }
  }
}
// The sums of C rows row0 .. row0 + COOP_C_ROWS into the C tile (over the operand stages; its row 0
// is row0); call with every invocation after a barrier that follows the last products (and the
// epilogue of the rows before), then barrier() before coop_sum.
void store_coop_sums_rows(uint row0) {
  uint sub_m = coop_sub_m(), sub_n = coop_sub_n();
  if (sub_m < row0 || sub_m >= row0 + COOP_C_ROWS) return;
  [[unroll]] for (uint i = 0u; i < kRowsPerSubgroup; ++i)
    [[unroll]] for (uint j = 0u; j < kColsPerSubgroup; ++j) {
      if (kCompensate) acc[i][j] = acc[i][j] + comp[i][j];
      coopMatStoreNV(acc[i][j], coop_shared, (sub_m - row0 + i * lM) * kStrideCQuads + (sub_n + j * lN) / 4u,
                     kStrideCQuads, false);
    }
}
void store_coop_sums() { store_coop_sums_rows(0u); }
// C[row][col] of the tile (row < COOP_TILE_M, col < COOP_TILE_N).
float coop_sum(uint row, uint col) { return uintBitsToFloat(coop_shared[row * kStrideCQuads + col / 4u][col % 4u]); }
