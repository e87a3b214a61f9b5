// Model-level findings: the tensor set (missing, extra, wrong encoding for a role), tokenizer
// special ids, and model.bin header fields no GPT-OSS config produces (YaRN, context length).
#include <gtest/gtest.h>

#include <bit>
#include <cstring>

#include "convert/modelbin/modelbin_config.h"
#include "formats/modelbin/modelbin_file.h"
#include "tests/verify/verify_test_support.h"
#include "verify/structural.h"

namespace gptoss {
namespace {
namespace fs = std::filesystem;
using test::find_finding;

TEST(VerifyModel, MissingTensorIsAModelFindingNamingIt) {
  test::HfCopy copy;
  copy.edit_header("model.layers.1.self_attn.k_proj.weight", "model.layers.1.self_attn.X_proj.weight");
  const auto result = verify_model(copy.hf, {});
  const auto* f = find_finding(result.report, "model", "k_proj");
  ASSERT_NE(f, nullptr) << result.report.to_table();
  EXPECT_EQ(f->severity, Severity::Error);
  EXPECT_EQ(f->item, "tensor \"model.layers.1.self_attn.k_proj.weight\"");
  EXPECT_EQ(f->message, "missing from the checkpoint");
  EXPECT_FALSE(f->expected.empty());
}

TEST(VerifyModel, ExtraTensorIsAWarningWithItsOffset) {
  test::HfCopy copy;
  // A second shard with one tensor no GPT-OSS role uses.
  std::string header = R"({"extra.weight":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]}})";
  header.resize((header.size() + 7) / 8 * 8, ' ');
  std::vector<uint8_t> file(8 + header.size() + 8, 0x3f);
  store_u64(file.data(), header.size());
  std::memcpy(file.data() + 8, header.data(), header.size());
  test::write_file_bytes(copy.hf / "extra.safetensors", file);
  const auto result = verify_model(copy.hf, {});
  const auto* f = find_finding(result.report, "extra", "extra.weight");
  ASSERT_NE(f, nullptr) << result.report.to_table();
  EXPECT_EQ(f->severity, Severity::Warning);
  EXPECT_EQ(f->file, (copy.hf / "extra.safetensors").string());
  EXPECT_EQ(f->offset, 8 + header.size());
  EXPECT_EQ(f->expected, "only the tensors of the config");
  EXPECT_EQ(result.report.count(Severity::Warning), 1u) << result.report.to_table();
}

TEST(VerifyModel, WrongEncodingForARoleIsAModelFinding) {
  test::HfCopy copy;
  copy.edit_header("\"model.layers.0.mlp.experts.gate_up_proj_blocks\":{\"dtype\":\"U8\"",
                   "\"model.layers.0.mlp.experts.gate_up_proj_blocks\":{\"dtype\":\"I8\"");
  const auto result = verify_model(copy.hf, {});
  const auto* f = find_finding(result.report, "model", "tensors");
  ASSERT_NE(f, nullptr) << result.report.to_table();
  EXPECT_NE(f->message.find("layers.0.mlp1.blocks must be U8 MXFP4 bytes, found I8"), std::string::npos) << f->message;
  EXPECT_NE(f->expected.find("an encoding its role allows"), std::string::npos) << f->expected;
}

TEST(VerifyModel, SpecialTokenIdOutsideTheTokenizerIsAnError) {
  CanonicalModel model = test::preset_a_model();
  auto tok = std::make_shared<TokenizerData>();
  tok->tokens = {"a", "b", "<|return|>", "<|start|>"};
  tok->types = {TokenType::Normal, TokenType::Normal, TokenType::Control, TokenType::Control};
  tok->eos_id = 2;
  tok->bos_id = 9;  // beyond the 4 tokens
  tok->pad_id = 1;  // a text token
  model.tokenizer = tok;
  Report report;
  check_model_consistency(model, "in-memory", report);
  const auto* bos = find_finding(report, "tokenizer", "bos_token_id");
  ASSERT_NE(bos, nullptr) << report.to_table();
  EXPECT_EQ(bos->message, "id 9 is beyond the tokenizer's 4 tokens");
  EXPECT_EQ(bos->expected, "a special token id < 4");
  const auto* pad = find_finding(report, "tokenizer", "pad_token_id");
  ASSERT_NE(pad, nullptr);
  EXPECT_EQ(pad->message, "id 1 (\"b\") is not a special token of the tokenizer");
  EXPECT_FALSE(test::has_finding(report, "tokenizer", "eos_token_id")) << report.to_table();
}

// --- model.bin header consistency ------------------------------------------------------------

struct HeaderCase {
  modelbin::ModelHeader header;
  std::vector<ModelBinHeaderInconsistency> found;
  std::vector<std::string> notes;  // the reader's
};

// The golden model.bin header with `edit` applied, and what the check says about it.
template <typename Edit>
HeaderCase golden_header_with(const fs::path& golden, Edit edit) {
  HeaderCase c{modelbin::ModelBinFile::open(golden).header(), {}, {}};
  edit(c.header);
  const auto config = config_from_modelbin_header(c.header, 200014, "golden", c.notes);
  c.found = modelbin_header_inconsistencies(c.header, config);
  return c;
}

float ulps_up(float v, int n) { return std::bit_cast<float>(std::bit_cast<uint32_t>(v) + static_cast<uint32_t>(n)); }

TEST(VerifyModelBinHeader, GoldenHeaderIsConsistent) {
  GOLDENS_OR_SKIP();
  EXPECT_TRUE(golden_header_with(*goldens / "a" / "model.bin", [](auto&) {}).found.empty());
}

TEST(VerifyModelBinHeader, EachInconsistentFieldIsNamedWithItsOffset) {
  GOLDENS_OR_SKIP();
  const fs::path golden = *goldens / "a" / "model.bin";
  struct Case {
    const char* what;
    void (*edit)(modelbin::ModelHeader&);
    const char* field;
    uint64_t offset;
  };
  const Case cases[] = {
      {"multiplier", [](modelbin::ModelHeader& h) { h.yarn_multiplier = 1.5f; }, "model_header.yarn_multiplier", 0x20 + 60},
      {"offset", [](modelbin::ModelHeader& h) { h.yarn_offset = ulps_up(h.yarn_offset, 3); }, "model_header.yarn_offset, yarn_scale", 0x20 + 52},
      {"scale", [](modelbin::ModelHeader& h) { h.yarn_scale = ulps_up(h.yarn_scale, 3); }, "model_header.yarn_offset, yarn_scale", 0x20 + 52},
      {"context", [](modelbin::ModelHeader& h) { h.context_length = 131073; }, "model_header.context_length", 0x20},
  };
  for (const auto& c : cases) {
    const auto result = golden_header_with(golden, c.edit);
    ASSERT_EQ(result.found.size(), 1u) << c.what;
    EXPECT_EQ(result.found[0].field, c.field) << c.what;
    EXPECT_EQ(result.found[0].offset, c.offset) << c.what;
  }
  const auto multiplier = golden_header_with(golden, cases[0].edit).found[0];
  EXPECT_EQ(multiplier.found, "1.5");
  EXPECT_EQ(multiplier.expected, "0.1 ln(factor) + 1 = 1.3465736 for factor 32");
  const auto context = golden_header_with(golden, cases[3].edit).found[0];
  EXPECT_EQ(context.expected, "int(original context x factor) for an integer original context, e.g. 4096 x 32 = 131072");
}

TEST(VerifyModelBinHeader, IntegerBoundsOfATruncatingConfigAreConsistent) {
  GOLDENS_OR_SKIP();
  // What the writer stores for a config with truncate = true (transformers' default).
  auto config = test::preset_a_model().config;
  config.yarn_truncate = true;
  std::vector<std::string> notes;
  const auto truncated = modelbin_header_from_config(config, notes);
  const auto result = golden_header_with(*goldens / "a" / "model.bin", [&](modelbin::ModelHeader& h) {
    h.yarn_offset = truncated.yarn_offset;
    h.yarn_scale = truncated.yarn_scale;
  });
  EXPECT_NE(truncated.yarn_offset, modelbin::ModelBinFile::open(*goldens / "a" / "model.bin").header().yarn_offset);
  EXPECT_TRUE(result.found.empty()) << result.found[0].field << ": " << result.found[0].found;
}

TEST(VerifyModelBinHeader, InconsistentMultiplierIsAVerifyWarningAtTheField) {
  GOLDENS_OR_SKIP();
  test::TempDir dir;
  auto bytes = test::read_file_bytes(*goldens / "a" / "model.bin");
  store_u32(bytes.data() + 0x20 + 60, std::bit_cast<uint32_t>(1.5f));
  test::write_file_bytes(dir / "model.bin", bytes);
  const auto result = verify_model(dir / "model.bin", {});
  const auto* f = find_finding(result.report, "config", "yarn_multiplier");
  ASSERT_NE(f, nullptr) << result.report.to_table();
  EXPECT_EQ(f->severity, Severity::Warning);
  EXPECT_EQ(f->offset, 0x20u + 60);
  EXPECT_EQ(f->message, "is 1.5");
  EXPECT_TRUE(result.report.has_problems());
}

}  // namespace
}  // namespace gptoss
