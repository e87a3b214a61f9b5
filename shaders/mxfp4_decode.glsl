// OpenAI MXFP4 experts read in place: blocks [E, rows, in/32, 16] bytes (low nibble = even
// element) and scales [E, rows, in/32] bytes (value 2^(s-127)), both bound as `uint words[]`.
const float kFp4Values[16] = float[16](0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
                                       -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0);

// Dot product of MXFP4 row `row` (blocks_per_row blocks of 32 values) with the f32 vector
// `vec_read(offset + k)`, for the blocks this invocation owns (first_block, step stride).
// DEFINE_MXFP4_ROW_DOT(fn, block_words, scale_words, vec) defines
// `float fn(uint row, uint blocks_per_row, uint vec_offset, uint first_block, uint stride)`.
#define DEFINE_MXFP4_ROW_DOT(fn, block_words, scale_words, vec)                      \
  float fn(uint row, uint blocks_per_row, uint vec_offset, uint first_block, uint stride) { \
    float sum = 0.0;                                                                 \
    for (uint b = first_block; b < blocks_per_row; b += stride) {                    \
      uint block = row * blocks_per_row + b;                                         \
      uint scale_byte = (scale_words[block >> 2] >> ((block & 3u) * 8u)) & 0xFFu;   \
      float partial = 0.0;                                                           \
      uint base = vec_offset + b * 32u;                                              \
      for (uint w = 0u; w < 4u; ++w) {                                               \
        uint word = block_words[block * 4u + w];                                     \
        for (uint i = 0u; i < 4u; ++i) {                                             \
          uint byte_value = (word >> (i * 8u)) & 0xFFu;                              \
          uint k = base + (w * 4u + i) * 2u;                                         \
          partial += kFp4Values[byte_value & 15u] * vec[k];                          \
          partial += kFp4Values[byte_value >> 4] * vec[k + 1u];                      \
        }                                                                            \
      }                                                                              \
      sum += ldexp(partial, int(scale_byte) - 127);                                  \
    }                                                                                \
    return sum;                                                                      \
  }
