// What the decode expert kernels (expert_mlp1.comp, expert_mlp2.comp) share: EXPERT_ROWS
// consecutive MXFP4 rows of one expert dotted with one input vector of `depth` values. Experts in
// another encoding (ENCODING not ENC_MXFP4: a GGUF's Q8_0, Q4_1, ... experts, one matrix [experts *
// rows, depth]) take the same loop with each lane's 32 values loaded and decoded 8 at a time by
// load8 where they are used: correct, not tuned (the pair's loads ahead of the staging are MXFP4's).
//
// Why this shape: a decode expert product reads each weight byte once, so it is a race to keep
// enough loads in flight. Each lane takes blocks lane, lane + S, ... (S the subgroup size: a
// subgroup's 16-byte loads are consecutive), issues every load of its first EXPERT_BATCH blocks of
// every row before anything else, and only then stages the input in shared memory, so the
// weights' memory latency overlaps the staging. The input is read from shared memory, not from
// global memory: a lane needs the 32 inputs of its own block, and 32 lanes reading 128 bytes 128
// bytes apart from global memory cost 32 cache lines per load (the old kernels' bottleneck,
// 0.4-0.8 TB/s). In shared memory a block's 32 values take 9 vec4 slots instead of 8, so the eight
// lanes of one 128-bit access phase (consecutive blocks) fall on distinct banks.
//
// The including kernel defines EXPERT_ROWS (rows per subgroup) before including this file.
layout(local_size_x = EXPERT_WORKGROUP_SIZE) in;
layout(constant_id = SPEC_EXPERT_OUTPUTS) const uint EXPERT_OUTPUTS = 2u;
layout(constant_id = SPEC_EXPERT_BATCH) const uint EXPERT_BATCH = 3u;

const uint kStagedBlockQuads = 9u;
shared vec4 staged_input[(kMaxExpertDepth / 32u) * kStagedBlockQuads];

// expert_acc[r]: sums over this lane's blocks of rows first_row .. first_row + rows - 1 with the input's values
// input_offset .. input_offset + depth - 1 (rows <= EXPERT_ROWS; 0
// for a subgroup without work, which must still call: the staging has a barrier). Every
// invocation of the workgroup calls it with the same input; the caller reduces over the subgroup.
// (A module-scope array: glslang matches no function parameter sized by a specialization constant.)
float expert_acc[EXPERT_ROWS];
void expert_rows_dot(uvec2 blocks_address, uvec2 scales_address, uvec2 input_address, uint input_offset, uint depth,
                     uint first_row, uint rows) {
  uint blocks = depth / 32u, step = gl_SubgroupSize, lane = gl_SubgroupInvocationID;
  uvec4 q[EXPERT_BATCH][EXPERT_ROWS];
  uint scale_words[EXPERT_BATCH][EXPERT_ROWS];
  // The first batch's loads, before the staging (see above).
  [[unroll]] for (uint u = 0u; u < EXPERT_BATCH; ++u)
    [[unroll]] for (uint r = 0u; r < EXPERT_ROWS; ++r) {
      uint b = u * step + lane;
      bool here = b < blocks && r < rows;
      uint block = (first_row + r) * blocks + (here ? b : 0u);
      q[u][r] = here && ENCODING == ENC_MXFP4 ? QuadsIn(blocks_address).v[block] : uvec4(0u);
      scale_words[u][r] = here && ENCODING == ENC_MXFP4 ? WordsIn(scales_address).v[block >> 2] : 0u;
    }
  for (uint i = gl_LocalInvocationIndex; i < depth / 4u; i += EXPERT_WORKGROUP_SIZE)
    staged_input[(i / 8u) * kStagedBlockQuads + i % 8u] = Vec4sIn(input_address).v[input_offset / 4u + i];
  barrier();
  [[unroll]] for (uint r = 0u; r < EXPERT_ROWS; ++r) expert_acc[r] = 0.0;
  if (rows == 0u) return;
  for (uint base = 0u; base < blocks; base += EXPERT_BATCH * step) {
    if (base > 0u) {
      [[unroll]] for (uint u = 0u; u < EXPERT_BATCH; ++u)
        [[unroll]] for (uint r = 0u; r < EXPERT_ROWS; ++r) {
          uint b = base + u * step + lane;
          bool here = b < blocks && r < rows;
          uint block = (first_row + r) * blocks + (here ? b : 0u);
          q[u][r] = here && ENCODING == ENC_MXFP4 ? QuadsIn(blocks_address).v[block] : uvec4(0u);
          scale_words[u][r] = here && ENCODING == ENC_MXFP4 ? WordsIn(scales_address).v[block >> 2] : 0u;
        }
    }
    [[unroll]] for (uint u = 0u; u < EXPERT_BATCH; ++u) {
      uint b = base + u * step + lane;
      if (b >= blocks) break;
      // Word by word (8 inputs at a time) across the rows, not the block's 32 inputs at once:
      // 8 registers of input live instead of 32, so more workgroups fit an SM and more weight
      // loads are in flight; each row's sum keeps the same order.
      float block_sums[EXPERT_ROWS];
      [[unroll]] for (uint r = 0u; r < EXPERT_ROWS; ++r) block_sums[r] = 0.0;
      [[unroll]] for (uint w = 0u; w < 4u; ++w) {
        vec4 x_lo = staged_input[b * kStagedBlockQuads + 2u * w], x_hi = staged_input[b * kStagedBlockQuads + 2u * w + 1u];
        [[unroll]] for (uint r = 0u; r < EXPERT_ROWS; ++r) {
          if (r >= rows) break;
          vec4 lo, hi;
          if (ENCODING == ENC_MXFP4)
            fp4x8(q[u][r][w], lo, hi);
          else
            load8(blocks_address, scales_address, ((first_row + r) * blocks + b) * 32u + 8u * w, lo, hi);
          block_sums[r] += dot(lo, x_lo) + dot(hi, x_hi);
        }
      }
      [[unroll]] for (uint r = 0u; r < EXPERT_ROWS; ++r) {
        if (r >= rows) break;
        uint block = (first_row + r) * blocks + b;
        if (ENCODING == ENC_MXFP4)
          expert_acc[r] += block_sums[r] * mxfp4_scale_value((scale_words[u][r] >> ((block & 3u) * 8u)) & 0xFFu);
        else
          expert_acc[r] += block_sums[r];
      }
    }
  }
}
