#include <bit>
#include <cstdio>
#include <limits>

#include "formats/core/checked_math.h"
#include "formats/core/error.h"
#include "formats/core/mapped_file.h"
#include "formats/modelbin/modelbin_format.h"

namespace gptoss::modelbin {

const Uuid kGptOssModelUuid = {0xDF, 0x52, 0xDC, 0x86, 0x17, 0x89, 0x4E, 0xD0,
                               0xA2, 0x95, 0x66, 0xF1, 0x05, 0x08, 0x14, 0x5B};
const Uuid kAppleGpuLayoutUuid = {0x22, 0x91, 0x77, 0xA8, 0x57, 0x75, 0x42, 0x68,
                                  0xBF, 0xD8, 0xD5, 0x88, 0xB3, 0x51, 0xC5, 0x6D};
const Uuid kTiktokenTokenizerUuid = {0x74, 0x01, 0xAD, 0xED, 0x2A, 0x95, 0x40, 0xCB,
                                     0xB7, 0x82, 0x9C, 0xCE, 0xBA, 0xAF, 0xE7, 0x2B};

bool is_zero_uuid(const Uuid& uuid) {
  for (uint8_t b : uuid)
    if (b) return false;
  return true;
}

std::string uuid_to_string(const Uuid& u) {
  char text[37];
  std::snprintf(text, sizeof text, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
                u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
  return text;
}

std::array<uint8_t, kModelHeaderSize> encode_model_header(const ModelHeader& h) {
  const uint32_t words[17] = {h.context_length,
                              h.num_blocks,
                              h.num_experts,
                              h.num_active_experts,
                              h.embedding_dim,
                              h.mlp_dim,
                              std::bit_cast<uint32_t>(h.swiglu_limit),
                              h.head_dim,
                              h.num_heads,
                              h.num_kv_heads,
                              h.attention_window,
                              std::bit_cast<uint32_t>(h.rope_theta),
                              std::bit_cast<uint32_t>(h.interpolation_scale),
                              std::bit_cast<uint32_t>(h.yarn_offset),
                              std::bit_cast<uint32_t>(h.yarn_scale),
                              std::bit_cast<uint32_t>(h.yarn_multiplier),
                              std::bit_cast<uint32_t>(h.rmsnorm_epsilon)};
  std::array<uint8_t, kModelHeaderSize> out{};
  for (size_t i = 0; i < 17; ++i) store_u32(out.data() + 4 * i, words[i]);
  return out;
}

namespace {

// Appends tensors at 16-byte aligned offsets, with every sum checked against overflow and a limit
// (the file size when reading), so a hostile header cannot make us loop or allocate for long.
class LayoutCursor {
 public:
  LayoutCursor(uint64_t start, uint64_t limit, const std::string& file) : pos_(start), limit_(limit), file_(file) {}
  Region next(uint64_t size, const char* what) {
    Region r{align(kTensorAlignment, what), size};
    const auto end = checked_add(r.offset, size);
    if (!end || *end > limit_) overflow(what);
    pos_ = *end;
    return r;
  }
  uint64_t align(uint64_t alignment, const char* what) {
    const auto a = checked_align_up(pos_, alignment);
    if (!a || *a > limit_) overflow(what);
    pos_ = *a;
    return pos_;
  }
  void skip(uint64_t size, const char* what) {
    const auto end = checked_add(pos_, size);
    if (!end || *end > limit_) overflow(what);
    pos_ = *end;
  }
  uint64_t position() const { return pos_; }

 private:
  [[noreturn]] void overflow(const char* what) const {
    throw_format_error(file_, "model_header", kModelHeaderOffset,
                       std::string("the header's dimensions put the ") + what + " past " +
                           (limit_ == std::numeric_limits<uint64_t>::max() ? std::string("2^64 bytes")
                                                                            : "the end of the file (" +
                                                                                  std::to_string(limit_) + " bytes)"));
  }
  uint64_t pos_;
  uint64_t limit_;
  const std::string& file_;
};

uint64_t product(std::initializer_list<uint64_t> dims, const std::string& file, const char* what) {
  const auto n = checked_product(std::span<const uint64_t>(dims.begin(), dims.size()));
  if (!n) throw_format_error(file, "model_header", kModelHeaderOffset, std::string("size of ") + what + " overflows 64 bits");
  return *n;
}

}  // namespace

ModelBinLayout compute_modelbin_layout(const ModelHeader& m, const TokenizerHeader& t, const std::string& file) {
  return compute_modelbin_layout_within(m, t, file, std::numeric_limits<uint64_t>::max());
}

ModelBinLayout compute_modelbin_layout_within(const ModelHeader& m, const TokenizerHeader& t, const std::string& file,
                                              uint64_t size_limit) {
  auto need = [&](bool ok, const char* field, uint64_t field_offset, const std::string& message) {
    if (!ok) throw_format_error(file, std::string("model_header.") + field, kModelHeaderOffset + field_offset, message);
  };
  need(m.num_blocks > 0, "num_blocks", 4, "must be > 0");
  need(m.num_experts > 0, "num_experts", 8, "must be > 0");
  need(m.embedding_dim > 0 && m.embedding_dim % 32 == 0, "embedding_dim", 16,
       "must be a positive multiple of 32 (MXFP4 blocks), found " + std::to_string(m.embedding_dim));
  need(m.mlp_dim > 0 && m.mlp_dim % 32 == 0, "mlp_dim", 20,
       "must be a positive multiple of 32 (MXFP4 blocks), found " + std::to_string(m.mlp_dim));
  need(m.head_dim > 0, "head_dim", 28, "must be > 0");
  need(m.num_heads > 0, "num_heads", 32, "must be > 0");
  need(m.num_kv_heads > 0, "num_kv_heads", 36, "must be > 0");
  if (t.num_special_tokens + static_cast<uint64_t>(t.num_text_tokens) == 0)
    throw_format_error(file, "tokenizer_header", kTokenizerHeaderOffset, "the vocabulary is empty");

  ModelBinLayout L;
  const uint64_t H = m.embedding_dim, I = m.mlp_dim, E = m.num_experts, bf16 = 2;
  L.vocabulary_size = static_cast<uint64_t>(t.num_special_tokens) + t.num_text_tokens;
  L.qkv_rows = product({m.head_dim, static_cast<uint64_t>(m.num_heads) + 2ull * m.num_kv_heads}, file, "QKV");
  const uint64_t attn_dim = product({m.head_dim, m.num_heads}, file, "attention output");

  LayoutCursor c(kSpecialTableOffset, size_limit, file);
  c.skip(product({t.num_special_tokens, 16}, file, "special token table"), "special-token UUID table");
  L.regex_offset = c.position();
  c.skip(t.regex_size, "regex");
  L.tokens_offset = c.position();
  c.skip(t.tokens_size, "text tokens");
  L.tokenizer_end = c.position();

  c.align(kPageAlignment, "dense weights");
  L.embedding = c.next(product({L.vocabulary_size, H, bf16}, file, "embedding"), "embedding");
  for (uint32_t n = 0; n < m.num_blocks; ++n) {
    DenseBlockLayout b;
    b.attn_norm = c.next(H * bf16, "attention norm");
    b.qkv_weight = c.next(product({L.qkv_rows, H, bf16}, file, "QKV weight"), "QKV weight");
    b.qkv_bias = c.next(L.qkv_rows * bf16, "QKV bias");
    b.sinks = c.next(static_cast<uint64_t>(m.num_heads) * bf16, "attention sinks");
    b.out_weight = c.next(product({H, attn_dim, bf16}, file, "attention output weight"), "attention output weight");
    b.out_bias = c.next(H * bf16, "attention output bias");
    b.mlp_norm = c.next(H * bf16, "MLP norm");
    b.gate_weight = c.next(product({E, H, bf16}, file, "router weight"), "router weight");
    b.gate_bias = c.next(E * bf16, "router bias");
    L.blocks.push_back(b);
  }
  L.final_norm = c.next(H * bf16, "final norm");
  L.unembedding = c.next(product({L.vocabulary_size, H, bf16}, file, "unembedding"), "unembedding");

  // One expert: offsets relative to the expert's start (which is 16-aligned), so the same
  // 16-byte rounding applies as for absolute offsets.
  LayoutCursor e(0, std::numeric_limits<uint64_t>::max(), file);
  auto& x = L.expert;
  x.mlp1_blocks = e.next(product({2 * I, H / 32, 16}, file, "mlp1 blocks"), "mlp1 blocks");
  x.mlp1_scales = e.next(product({2 * I, H / 32}, file, "mlp1 scales"), "mlp1 scales");
  x.mlp1_bias = e.next(2 * I * bf16, "mlp1 bias");
  x.mlp2_blocks = e.next(product({H, I / 32, 16}, file, "mlp2 blocks"), "mlp2 blocks");
  x.mlp2_scales = e.next(product({H, I / 32}, file, "mlp2 scales"), "mlp2 scales");
  x.mlp2_bias = e.next(H * bf16, "mlp2 bias");
  x.size = e.align(kTensorAlignment, "expert");
  L.moe_block_size = product({E, x.size}, file, "MoE block");

  for (uint32_t n = 0; n < m.num_blocks; ++n) {
    L.moe_block_offsets.push_back(c.align(kPageAlignment, "MoE weights"));
    c.skip(L.moe_block_size, "MoE weights");
  }
  L.file_size = c.position();
  return L;
}

std::vector<ModelBinLayout::NamedRegion> ModelBinLayout::write_order() const {
  std::vector<NamedRegion> out;
  out.push_back({"embedding", embedding});
  for (size_t n = 0; n < blocks.size(); ++n) {
    const auto& b = blocks[n];
    const std::string p = "block " + std::to_string(n) + " ";
    out.push_back({p + "attention norm", b.attn_norm});
    out.push_back({p + "QKV weight", b.qkv_weight});
    out.push_back({p + "QKV bias", b.qkv_bias});
    out.push_back({p + "attention sinks", b.sinks});
    out.push_back({p + "attention output weight", b.out_weight});
    out.push_back({p + "attention output bias", b.out_bias});
    out.push_back({p + "MLP norm", b.mlp_norm});
    out.push_back({p + "router weight", b.gate_weight});
    out.push_back({p + "router bias", b.gate_bias});
  }
  out.push_back({"final norm", final_norm});
  out.push_back({"unembedding", unembedding});
  const uint64_t experts = expert.size ? moe_block_size / expert.size : 0;
  for (size_t n = 0; n < moe_block_offsets.size(); ++n)
    for (uint64_t e = 0; e < experts; ++e) {
      const uint64_t base = moe_block_offsets[n] + e * expert.size;
      const std::string p = "block " + std::to_string(n) + " expert " + std::to_string(e) + " ";
      auto add = [&](const char* what, Region r) { out.push_back({p + what, {base + r.offset, r.size}}); };
      add("mlp1 blocks", expert.mlp1_blocks);
      add("mlp1 scales", expert.mlp1_scales);
      add("mlp1 bias", expert.mlp1_bias);
      add("mlp2 blocks", expert.mlp2_blocks);
      add("mlp2 scales", expert.mlp2_scales);
      add("mlp2 bias", expert.mlp2_bias);
    }
  return out;
}

}  // namespace gptoss::modelbin
