// The expert GEMM with W decoded by each lane straight into its B operands (expert_gemm_coop_direct.comp;
// included after coop_tile.glsl, with COOP_DIRECT_W, and before expert_coop.glsl, whose
// expert_gemm_coop takes the steps): each lane loads the MXFP4 bytes of the W elements its operands
// hold where the device's layout puts them (SPEC_COOP_B_MAP, Kernels::operand_layout) and writes the
// decoded values into them, so a step stores and reads back only A. The same f16 values in the same
// products as the tiles that decode W into shared memory: the same sums
// (VulkanKernels.WideAndShortExpertTilesGiveTheSameBits).

layout(constant_id = SPEC_COOP_B_MAP) const uint kBMap = 0u;
// A lane's W rows: subgroup column block j's rows lane / 4 + 8 slot (r = 2 j + slot), each a step's
// two MXFP4 blocks (the 16 bytes of each) and the word of their scales.
const uint kDirectRows = 2u * kColsPerSubgroup;

// Row r's two blocks of the step as its operands' elements: B element e of depth slice s holds the
// block's value 16 (s % 2) + 2 (lane % 4) + b0 + 8 b1 (b0, b1 the map's column bits of e), whose
// byte is byte lane % 4 of the block's word 2 (s % 2) + b1 (low nibble: even values).
void decode_w_direct(uvec4 q[kDirectRows][2], uint scale_word[kDirectRows], uint first_block[kDirectRows],
                     bool w_in[kDirectRows]) {
  uint shift = 8u * (gl_SubgroupInvocationID % 4u);
  [[unroll]] for (uint r = 0u; r < kDirectRows; ++r) {
    uint j = r / 2u, slot = r % 2u;
    [[unroll]] for (uint half_step = 0u; half_step < 2u; ++half_step) {
      uint block = first_block[r] + half_step;
      float scale = w_in[r] ? mxfp4_scale_value((scale_word[r] >> ((block & 3u) * 8u)) & 0xFFu) : 0.0;
      uvec4 w = q[r][half_step];
      // Byte lane % 4 of each word, in word order: fp4x8 gives word 0's low and high nibble, then
      // word 1's (lo), then words 2 and 3 (hi).
      uint bytes = ((w.x >> shift) & 0xFFu) | (((w.y >> shift) & 0xFFu) << 8) | (((w.z >> shift) & 0xFFu) << 16) |
                   ((w.w >> shift) << 24);
      vec4 lo, hi;
      fp4x8(bytes, lo, hi);
      // Elements of a plain matrix variable, values picked by selects: an element of an array of
      // matrices, or an array indexed by the map's bits, may put the array in local memory (NVIDIA's
      // driver put a form of the prefill attention's score matrices there: d34465e, not merged).
      [[unroll]] for (uint s2 = 0u; s2 < 2u; ++s2) {
        fcoopmatNV<16, gl_ScopeSubgroup, lK, lN> frag = coop_w_frag[j][2u * half_step + s2];
        vec4 quad = s2 == 0u ? lo : hi;  // values 4 s2 .. 4 s2 + 3 of the eight
        [[unroll]] for (uint e = 0u; e < COOP_ACC_ELEMENTS; ++e)
          if (COOP_ACC_SLOT(kBMap, e) == slot) {
            uint b0 = (kBMap >> (3u * e)) & 1u, b1 = (kBMap >> (3u * e + 1u)) & 1u;
            float value = b1 == 0u ? (b0 == 0u ? quad.x : quad.y) : (b0 == 0u ? quad.z : quad.w);
            frag[e] = float16_t(value * scale);
          }
        coop_w_frag[j][2u * half_step + s2] = frag;
      }
    }
  }
}
