// What the decode matrix-vector kernels (matvec.comp, matvec_route.comp) share: rows of W [rows,
// cols] in its stored encoding (ENCODING) dotted with one staged vector x'.
//
// Each subgroup owns ROWS_PER_SUBGROUP rows; its lanes read 8 values (16 bytes of BF16) at a time at
// consecutive addresses, LOADS_PER_ROW such reads per row in flight, one subgroupAdd per row. Both
// are specialization constants (GPTOSS_VK_MATVEC): few rows per subgroup make more workgroups for
// the small projections (qkv: 5120 rows), which are latency-bound where the unembedding is not.
//
// Order of work, for latency: each lane issues its first weight loads (matvec_first_loads), then
// the workgroup stages x (times `norm`) in shared memory and sums its squares (matvec_stage), and
// only then are the loads used (matvec_dot). The RMS factor is one scalar, applied to each row's
// sum at the end. Shared memory holds the 8 values of chunk c as two vec4s in two arrays, so
// consecutive lanes read consecutive 16-byte slots (no bank conflicts), where reading x from global
// memory cost every lane its own cache lines.
layout(local_size_x = MATVEC_WORKGROUP_SIZE) in;

shared vec4 staged_lo[kMaxMatvecCols / 8u], staged_hi[kMaxMatvecCols / 8u];

layout(constant_id = SPEC_MATVEC_ROWS) const uint ROWS_PER_SUBGROUP = MATVEC_DEFAULT_ROWS;
layout(constant_id = SPEC_MATVEC_BATCH) const uint LOADS_PER_ROW = MATVEC_DEFAULT_BATCH;
uvec4 raw[LOADS_PER_ROW][ROWS_PER_SUBGROUP][2];  // [pass][row][load_raw8's two words]
float row_sums[ROWS_PER_SUBGROUP];  // module scope: glslang matches no parameter sized by a specialization constant

// The first row of this subgroup (clamped to the matrix: a subgroup past it computes its last row
// again and writes nothing).
uint matvec_first_row() {
  uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  return (group * gl_NumSubgroups + gl_SubgroupID) * ROWS_PER_SUBGROUP;
}

void matvec_load_pass(uvec2 weight, uvec2 scales, uint rows, uint cols, uint first_row, uint base) {
  uint chunks = cols / 8u;
  [[unroll]] for (uint u = 0u; u < LOADS_PER_ROW; ++u) {
    uint c = min(base + u * gl_SubgroupSize + gl_SubgroupInvocationID, chunks - 1u);
    [[unroll]] for (uint r = 0u; r < ROWS_PER_SUBGROUP; ++r)
      load_raw8(weight, scales, min(first_row + r, rows - 1u) * cols + 8u * c, raw[u][r][0], raw[u][r][1]);
  }
}

// Stages x (times norm, when normed) for every subgroup of the workgroup; returns the RMS factor
// of x (1 when not normed). Every invocation calls it (barriers).
float matvec_stage(uvec2 x, uvec2 norm, uint cols, bool normed, float eps) {
  float sum_squares = 0.0;
  for (uint c = gl_LocalInvocationIndex; c < cols / 8u; c += MATVEC_WORKGROUP_SIZE) {
    vec4 lo = Vec4sIn(x).v[2u * c], hi = Vec4sIn(x).v[2u * c + 1u];
    sum_squares += dot(lo, lo) + dot(hi, hi);
    if (normed) {
      lo *= Vec4sIn(norm).v[2u * c];
      hi *= Vec4sIn(norm).v[2u * c + 1u];
    }
    staged_lo[c] = lo;
    staged_hi[c] = hi;
  }
  if (normed) return 1.0 / sqrt(workgroup_sum(sum_squares) / float(cols) + eps);  // its barriers order the staging
  barrier();
  return 1.0;
}

// row_sums[r] = this lane's share of W[first_row + r] . staged x', the first pass's loads issued
// (matvec_load_pass(..., 0)) before the staging.
void matvec_dot(uvec2 weight, uvec2 scales, uint rows, uint cols, uint first_row) {
  uint chunks = cols / 8u;
  [[unroll]] for (uint r = 0u; r < ROWS_PER_SUBGROUP; ++r) row_sums[r] = 0.0;
  for (uint base = 0u; base < chunks; base += LOADS_PER_ROW * gl_SubgroupSize) {
    if (base > 0u) matvec_load_pass(weight, scales, rows, cols, first_row, base);
    [[unroll]] for (uint u = 0u; u < LOADS_PER_ROW; ++u) {
      uint c = base + u * gl_SubgroupSize + gl_SubgroupInvocationID;
      if (c >= chunks) break;
      vec4 xlo = staged_lo[c], xhi = staged_hi[c], lo, hi;
      [[unroll]] for (uint r = 0u; r < ROWS_PER_SUBGROUP; ++r) {
        decode_raw8(raw[u][r][0], raw[u][r][1], min(first_row + r, rows - 1u) * cols + 8u * c, lo, hi);
        row_sums[r] += dot(lo, xlo) + dot(hi, xhi);
      }
    }
  }
}
