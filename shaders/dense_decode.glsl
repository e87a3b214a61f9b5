// Decoding of dense tensors in their stored encoding, from a buffer declared as `uint words[]`.
// Every weight stays on the device as the file stores it; the kernels decode element by element
// (f32 accumulation), so nothing is dequantized on the host.
//
// Encodings (the host's DenseEncoding): 0 F32, 1 F16, 2 BF16, 3 Q8_0 (ggml: f16 scale + 32 int8,
// 34 bytes per 32 elements; blocks start at even byte offsets, so the scale never straddles words).
#define ENC_F32 0u
#define ENC_F16 1u
#define ENC_BF16 2u
#define ENC_Q8_0 3u

// DEFINE_DENSE_LOADER(fn, words) defines `float fn(uint encoding, uint index)` over the buffer
// array `words` (GLSL cannot pass buffers to functions, so each buffer gets its own loader).
#define DEFINE_DENSE_LOADER(fn, words)                                              \
  uint fn##_byte(uint offset) { return (words[offset >> 2] >> ((offset & 3u) * 8u)) & 0xFFu; } \
  float fn##_half(uint offset) {                                                    \
    uint word = words[offset >> 2];                                                 \
    return unpackHalf2x16((offset & 2u) != 0u ? (word >> 16) : (word & 0xFFFFu)).x; \
  }                                                                                 \
  float fn(uint encoding, uint index) {                                             \
    if (encoding == ENC_F32) return uintBitsToFloat(words[index]);                  \
    if (encoding == ENC_BF16) {                                                     \
      uint word = words[index >> 1];                                                \
      return uintBitsToFloat((index & 1u) != 0u ? (word & 0xFFFF0000u) : (word << 16)); \
    }                                                                               \
    if (encoding == ENC_F16) return fn##_half(index * 2u);                          \
    uint block = index >> 5;                                                        \
    uint q = fn##_byte(block * 34u + 2u + (index & 31u));                           \
    return fn##_half(block * 34u) * float(int(q << 24) >> 24);                      \
  }
