#pragma once
// The GPT-OSS Metal model.bin container (shared/specs/modelbin.md): constants, the fixed-size
// headers and the byte layout every offset follows from. Reader and writer both use
// compute_modelbin_layout(), so they cannot disagree about where a tensor lives.
//
// The format fixes the tensor set and order (it has no tensor directory), so the layout names
// the tensors; what the bytes mean (QKV permutation, prescale, +14 on scales) is the business
// of convert/modelbin.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace gptoss::modelbin {

inline constexpr std::array<uint8_t, 12> kMagic = {'G', 'P', 'T', '-', 'O', 'S', 'S', ' ', 'v', '1', '.', '0'};
// The writer pads to 16 KiB (Apple's page size) after the tokenizer and before every MoE block;
// a compatible reader uses this constant, never the host's page size.
inline constexpr uint64_t kPageAlignment = 16384;
inline constexpr uint64_t kTensorAlignment = 16;

using Uuid = std::array<uint8_t, 16>;  // RFC-4122 byte order, as Python's UUID.bytes

extern const Uuid kGptOssModelUuid;       // df52dc86-1789-4ed0-a295-66f10508145b
extern const Uuid kAppleGpuLayoutUuid;    // 229177a8-5775-4268-bfd8-d588b351c56d
extern const Uuid kTiktokenTokenizerUuid; // 7401aded-2a95-40cb-b782-9ccebaafe72b
bool is_zero_uuid(const Uuid& uuid);
std::string uuid_to_string(const Uuid& uuid);

// Fixed offsets of the header area.
inline constexpr uint64_t kFileHeaderOffset = 0x00;
inline constexpr uint64_t kModelUuidOffset = 0x10;
inline constexpr uint64_t kModelHeaderOffset = 0x20;
inline constexpr uint64_t kModelHeaderSize = 68;
inline constexpr uint64_t kLayoutUuidOffset = 0x64;
inline constexpr uint64_t kTokenizerUuidOffset = 0x74;
inline constexpr uint64_t kTokenizerHeaderOffset = 0x84;
inline constexpr uint64_t kTokenizerHeaderSize = 16;
inline constexpr uint64_t kSpecialTableOffset = 0x94;

// 17 fields of 4 bytes at 0x20, in file order.
struct ModelHeader {
  uint32_t context_length = 0;
  uint32_t num_blocks = 0;
  uint32_t num_experts = 0;
  uint32_t num_active_experts = 0;
  uint32_t embedding_dim = 0;
  uint32_t mlp_dim = 0;
  float swiglu_limit = 0;
  uint32_t head_dim = 0;
  uint32_t num_heads = 0;
  uint32_t num_kv_heads = 0;
  uint32_t attention_window = 0;
  float rope_theta = 0;
  float interpolation_scale = 0;
  float yarn_offset = 0;
  float yarn_scale = 0;
  float yarn_multiplier = 0;
  float rmsnorm_epsilon = 0;
};

// 4 x u32 at 0x84.
struct TokenizerHeader {
  uint32_t num_special_tokens = 0;
  uint32_t num_text_tokens = 0;
  uint32_t regex_size = 0;   // including the terminating NUL
  uint32_t tokens_size = 0;  // sum of (2 + length) over the text tokens
};

struct Region {
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t end() const { return offset + size; }
};

// The nine dense tensors of one block, in file order.
struct DenseBlockLayout {
  Region attn_norm, qkv_weight, qkv_bias, sinks, out_weight, out_bias, mlp_norm, gate_weight, gate_bias;
};

// The six tensors of one expert, as offsets inside the expert.
struct ExpertLayout {
  Region mlp1_blocks, mlp1_scales, mlp1_bias, mlp2_blocks, mlp2_scales, mlp2_bias;
  uint64_t size = 0;  // per_expert_size
};

struct ModelBinLayout {
  uint64_t regex_offset = 0;
  uint64_t tokens_offset = 0;
  uint64_t tokenizer_end = 0;
  uint64_t vocabulary_size = 0;  // num_special_tokens + num_text_tokens: rows of the (un)embedding
  uint64_t qkv_rows = 0;         // head_dim * (num_heads + 2 * num_kv_heads)
  Region embedding;
  std::vector<DenseBlockLayout> blocks;
  Region final_norm, unembedding;
  ExpertLayout expert;
  std::vector<uint64_t> moe_block_offsets;  // start of each block's MoE region (16 KiB aligned)
  uint64_t moe_block_size = 0;              // num_experts * expert.size
  uint64_t file_size = 0;                   // end of the last MoE block: no padding after it

  // Every tensor in the order the writer emits it (dense, then block by block, expert by expert),
  // with a name for messages such as "block 3 qkv weight" or "block 1 expert 7 mlp2 scales".
  struct NamedRegion {
    std::string name;
    Region region;
  };
  std::vector<NamedRegion> write_order() const;
};

// Computes every offset with checked arithmetic. Throws FormatError naming `file` and the header
// field that makes the layout impossible (zero or non-multiple-of-32 dims, 64-bit overflow).
ModelBinLayout compute_modelbin_layout(const ModelHeader& model, const TokenizerHeader& tokenizer,
                                       const std::string& file);
// The same, failing as soon as any region would end past `size_limit` (the file size when
// reading): a header claiming 2^32 blocks is rejected before it costs time or memory.
ModelBinLayout compute_modelbin_layout_within(const ModelHeader& model, const TokenizerHeader& tokenizer,
                                              const std::string& file, uint64_t size_limit);

// The 68 header bytes in file order (little-endian) and back.
std::array<uint8_t, kModelHeaderSize> encode_model_header(const ModelHeader& header);

}  // namespace gptoss::modelbin
