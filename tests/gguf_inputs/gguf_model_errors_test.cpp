// GGUF files that are valid containers but not valid gpt-oss models: one crafted file per check
// of the model reader (gguf_model.cpp), the tokenizer reader (gguf_tokenizer.cpp) and the split
// set reader (gguf_split.cpp), each with the error it must give (field and message).
//
// Every file is a small valid gpt-oss GGUF, written by our GGUF writer and then rewritten by the
// same writer with exactly one key or tensor changed.
#include <gtest/gtest.h>

#include <functional>

#include "convert/canonical_model.h"
#include "convert/gguf/gguf_model.h"
#include "convert/synthesize.h"
#include "formats/core/checked_math.h"
#include "formats/core/error.h"
#include "formats/gguf/gguf_file.h"
#include "formats/gguf/gguf_split.h"
#include "formats/gguf/gguf_writer.h"
#include "tests/test_support.h"

namespace gptoss::test {
namespace {
namespace fs = std::filesystem;

constexpr uint32_t kVocab = 300;  // tokens: 256 bytes, "ab", 4 specials, then [PAD] fillers

// A 2-layer gpt-oss with the synthesizer's config shape, a 300-row vocabulary and zero weights.
CanonicalModel tiny_model() {
  CanonicalModel model;
  model.config = synth_config(SynthPreset{"tiny", 2, 64, 64, 2, 1, 64, 4, 2, 201088, 8, 1});
  model.config.vocab_size = kVocab;
  model.config.bos_token_id.reset();
  model.config.eos_token_id.reset();
  model.config.pad_token_id.reset();
  for (const auto& spec : canonical_tensor_specs(model.config)) {
    const DType dtype = is_mxfp4_role(spec.role) ? DType::U8 : DType::BF16;
    const uint64_t bytes = *dtype_byte_size(dtype, *checked_product(spec.shape));
    model.tensors.push_back({spec, dtype, std::make_shared<OwnedSource>(std::vector<uint8_t>(bytes)), "tiny"});
  }
  finalize_canonical_tensors(model.config, model.tensors, "tiny");
  auto tok = std::make_shared<TokenizerData>();
  for (int b = 0; b < 256; ++b) {
    tok->tokens.emplace_back(1, static_cast<char>(b));
    tok->types.push_back(TokenType::Normal);
  }
  tok->tokens.push_back("ab");
  tok->types.push_back(TokenType::Normal);
  tok->merges = {{"a", "b"}};
  for (const char* special : {"<|startoftext|>", "<|endoftext|>", "<|return|>", "<|end|>"}) {
    tok->tokens.push_back(special);
    tok->types.push_back(TokenType::Control);
  }
  tok->bos_id = 257;
  tok->eos_id = 259;
  tok->pad_id = 258;
  model.tokenizer = tok;
  return model;
}

// The valid file every test starts from, written once per binary.
const fs::path& valid_gguf() {
  static TempDir dir;
  static const fs::path path = [] {
    write_gguf_model(tiny_model(), dir / "tiny.gguf", {});
    return dir / "tiny.gguf";
  }();
  return path;
}

// One change to a GGUF: `kv` may write a key its own way (or drop it) and returns true when it
// did; `tensors` edits the tensor list (an entry whose type or ne changes needs new data:
// zero_data()). Extra keys go after the others.
struct Edit {
  std::function<bool(const GgufKv&, GgufMetadata&)> kv;
  std::function<void(std::vector<GgufTensorEntry>&)> tensors;
  std::function<void(GgufMetadata&)> extra;
};

void zero_data(GgufTensorEntry& e) {
  const uint64_t bytes = gguf_tensor_bytes(e);
  e.data = owned_bytes(std::vector<uint8_t>(bytes));
}

GgufTensorEntry* entry(std::vector<GgufTensorEntry>& entries, const std::string& name) {
  for (auto& e : entries)
    if (e.name == name) return &e;
  ADD_FAILURE() << "no tensor " << name;
  return nullptr;
}

void rewrite(const fs::path& from, const fs::path& to, const Edit& edit) {
  const GgufFile src = GgufFile::open(from);
  GgufMetadata md;
  for (const auto& kv : src.kvs())
    if (!edit.kv || !edit.kv(kv, md)) md.add_value(kv.key, kv.value);
  if (edit.extra) edit.extra(md);
  std::vector<GgufTensorEntry> entries;
  for (const auto& t : src.tensors()) {
    GgufTensorEntry e;
    e.name = t.name;
    e.ggml_type = t.ggml_type;
    e.ne = t.ne;
    e.data = std::make_shared<MappedSource>(src.mapped(), src.data(t));
    entries.push_back(std::move(e));
  }
  if (edit.tensors) edit.tensors(entries);
  write_gguf(to, md, entries);
}

// Edits of one key: replace its value with `write`, or drop it (write = nullptr).
Edit replace_key(const std::string& key, std::function<void(GgufMetadata&)> write) {
  return {[key, write](const GgufKv& kv, GgufMetadata& md) {
            if (kv.key != key) return false;
            if (write) write(md);
            return true;
          },
          nullptr, nullptr};
}
Edit drop_key(const std::string& key) { return replace_key(key, nullptr); }
Edit edit_tensors(std::function<void(std::vector<GgufTensorEntry>&)> f) { return {nullptr, std::move(f), nullptr}; }

// Loads the edited file and expects a FormatError naming it, `field` and `message`.
void expect_model_error(const Edit& edit, const std::string& field, const std::string& message) {
  TempDir dir;
  rewrite(valid_gguf(), dir / "bad.gguf", edit);
  try {
    load_gguf_model(dir / "bad.gguf");
    ADD_FAILURE() << "no error; expected " << field << ": " << message;
  } catch (const FormatError& e) {
    EXPECT_NE(e.file().find("bad.gguf"), std::string::npos) << e.what();
    EXPECT_NE(e.field().find(field), std::string::npos) << e.what();
    EXPECT_NE(e.message().find(message), std::string::npos) << e.what();
  }
}

TEST(GgufModelErrors, TheUneditedFileLoads) {
  TempDir dir;
  rewrite(valid_gguf(), dir / "same.gguf", {});
  const CanonicalModel m = load_gguf_model(dir / "same.gguf");
  EXPECT_EQ(m.config.num_layers, 2u);
  EXPECT_EQ(m.config.vocab_size, kVocab);
  ASSERT_TRUE(m.tokenizer);
  EXPECT_EQ(m.tokenizer->size(), kVocab);
  EXPECT_EQ(m.tokenizer->eos_id, 259u);
  EXPECT_EQ(file_sha256(dir / "same.gguf"), file_sha256(valid_gguf()));  // the rewrite itself changes nothing
}

// --- gguf_model.cpp: metadata -----------------------------------------------------------------

TEST(GgufModelErrors, WrongArchitecture) {
  expect_model_error(replace_key("general.architecture", [](GgufMetadata& md) { md.add_string("general.architecture", "llama"); }),
                     "general.architecture", "expected \"gpt-oss\", found \"llama\"");
}
TEST(GgufModelErrors, MissingArchitecture) {
  expect_model_error(drop_key("general.architecture"), "general.architecture", "required key is missing");
}
TEST(GgufModelErrors, MissingRequiredKey) {
  expect_model_error(drop_key("gpt-oss.expert_count"), "gpt-oss.expert_count", "required key is missing");
}
TEST(GgufModelErrors, RequiredKeyOfTheWrongType) {
  expect_model_error(replace_key("gpt-oss.block_count", [](GgufMetadata& md) { md.add_i32("gpt-oss.block_count", 2); }),
                     "gpt-oss.block_count", "UINT32");
}
TEST(GgufModelErrors, MissingRmsEpsilon) {
  expect_model_error(drop_key("gpt-oss.attention.layer_norm_rms_epsilon"), "gpt-oss.attention.layer_norm_rms_epsilon",
                     "required key is missing");
}
TEST(GgufModelErrors, TooManyBlocks) {
  expect_model_error(replace_key("gpt-oss.block_count", [](GgufMetadata& md) { md.add_u32("gpt-oss.block_count", 5000); }),
                     "gpt-oss.block_count", "5000 blocks is more than the limit of 1024");
}
TEST(GgufModelErrors, ValueLengthUnlikeKeyLength) {
  expect_model_error(
      replace_key("gpt-oss.attention.value_length", [](GgufMetadata& md) { md.add_u32("gpt-oss.attention.value_length", 32); }),
      "gpt-oss.attention.value_length", "differs from key_length");
}
TEST(GgufModelErrors, RopeScalingThatIsNotYarn) {
  expect_model_error(
      replace_key("gpt-oss.rope.scaling.type", [](GgufMetadata& md) { md.add_string("gpt-oss.rope.scaling.type", "linear"); }),
      "gpt-oss.rope.scaling.type", "gpt-oss uses YaRN, found \"linear\"");
}
TEST(GgufModelErrors, ConfigThatFailsValidation) {
  // 2 heads over 3 kv heads: not a GQA grouping.
  expect_model_error(
      replace_key("gpt-oss.attention.head_count_kv", [](GgufMetadata& md) { md.add_u32("gpt-oss.attention.head_count_kv", 3); }),
      "config", "num_attention_heads must be a multiple of num_key_value_heads");
}

// --- gguf_model.cpp: tensors ------------------------------------------------------------------

TEST(GgufModelErrors, MissingTokenEmbedding) {
  expect_model_error(edit_tensors([](auto& es) { std::erase_if(es, [](const auto& e) { return e.name == "token_embd.weight"; }); }),
                     "token_embd.weight", "tensor missing from the file");
}
TEST(GgufModelErrors, MissingLayerTensor) {
  expect_model_error(edit_tensors([](auto& es) { std::erase_if(es, [](const auto& e) { return e.name == "blk.1.attn_q.weight"; }); }),
                     "blk.1.attn_q.weight", "tensor missing from the file");
}
TEST(GgufModelErrors, MissingUpExperts) {
  expect_model_error(
      edit_tensors([](auto& es) { std::erase_if(es, [](const auto& e) { return e.name == "blk.0.ffn_up_exps.weight"; }); }),
      "blk.0.ffn_up_exps.weight", "tensor missing from the file");
}
TEST(GgufModelErrors, WrongNe) {
  expect_model_error(edit_tensors([](auto& es) {
                       GgufTensorEntry* e = entry(es, "blk.0.attn_k.weight");
                       e->ne = {64, 32};  // [hidden, kv rows] needs [64, 64]
                       zero_data(*e);
                     }),
                     "blk.0.attn_k.weight", "has ne [64, 32], the metadata needs [64, 64]");
}
TEST(GgufModelErrors, TokenEmbeddingThatIsNot2D) {
  expect_model_error(edit_tensors([](auto& es) {
                       GgufTensorEntry* e = entry(es, "token_embd.weight");
                       e->ne = {64 * kVocab};
                       zero_data(*e);
                     }),
                     "token_embd.weight", "must be a 2-D [hidden, vocab] tensor");
}
TEST(GgufModelErrors, DenseTypeNotAllowed) {
  expect_model_error(edit_tensors([](auto& es) {
                       GgufTensorEntry* e = entry(es, "blk.0.attn_q.weight");
                       e->ggml_type = 24;  // I8
                       zero_data(*e);
                     }),
                     "blk.0.attn_q.weight", "type I8 is not supported for dense tensors");
}
// Experts may be in any type the codecs decode (canonical_model.h); not in one they only size, and
// gate and up in one type.
TEST(GgufModelErrors, ExpertsInATypeTheCodecsDoNotDecode) {
  expect_model_error(edit_tensors([](auto& es) {
                       GgufTensorEntry* e = entry(es, "blk.1.ffn_down_exps.weight");
                       e->ggml_type = 9;  // Q8_1
                       zero_data(*e);
                     }),
                     "blk.1.ffn_down_exps.weight", "type Q8_1 is not supported for experts");
}
TEST(GgufModelErrors, GateAndUpExpertsOfDifferentTypes) {
  expect_model_error(edit_tensors([](auto& es) {
                       GgufTensorEntry* e = entry(es, "blk.0.ffn_up_exps.weight");
                       e->ggml_type = 8;  // Q8_0 beside an MXFP4 gate
                       zero_data(*e);
                     }),
                     "blk.0.ffn_up_exps.weight",
                     "is Q8_0 but blk.0.ffn_gate_exps.weight is MXFP4: gate and up experts must have one type");
}
TEST(GgufModelErrors, ExpertBiasInQ8_0) {
  expect_model_error(edit_tensors([](auto& es) {
                       for (const char* name : {"blk.0.ffn_gate_exps.bias", "blk.0.ffn_up_exps.bias"}) {
                         GgufTensorEntry* e = entry(es, name);
                         e->ggml_type = 8;
                         zero_data(*e);
                       }
                     }),
                     "blk.0.ffn_gate_exps.bias", "expert biases must be F32, F16 or BF16, both the same");
}
TEST(GgufModelErrors, GateAndUpBiasOfDifferentTypes) {
  expect_model_error(edit_tensors([](auto& es) {
                       GgufTensorEntry* e = entry(es, "blk.1.ffn_up_exps.bias");
                       e->ggml_type = 1;  // F16 beside an F32 gate bias
                       zero_data(*e);
                     }),
                     "blk.1.ffn_gate_exps.bias", "expert biases must be F32, F16 or BF16, both the same");
}

// --- gguf_tokenizer.cpp -----------------------------------------------------------------------

TEST(GgufTokenizerErrors, ModelThatIsNotGpt2) {
  expect_model_error(replace_key("tokenizer.ggml.model", [](GgufMetadata& md) { md.add_string("tokenizer.ggml.model", "llama"); }),
                     "tokenizer.ggml.model", "only byte-level BPE (\"gpt2\") tokenizers are supported, found \"llama\"");
}
TEST(GgufTokenizerErrors, TokensThatAreNotStrings) {
  expect_model_error(replace_key("tokenizer.ggml.tokens",
                                 [](GgufMetadata& md) { md.add_i32_array("tokenizer.ggml.tokens", std::vector<int32_t>(kVocab)); }),
                     "tokenizer.ggml.tokens", "must be an array of STRING");
}
TEST(GgufTokenizerErrors, TokenTypeOfTheWrongElementType) {
  expect_model_error(replace_key("tokenizer.ggml.token_type",
                                 [](GgufMetadata& md) {
                                   std::vector<uint8_t> ones(4 * kVocab);
                                   for (size_t i = 0; i < ones.size(); i += 4) ones[i] = 1;
                                   md.add_array("tokenizer.ggml.token_type", GgufType::U32, ones);
                                 }),
                     "tokenizer.ggml.token_type", "must be an INT32 array with one entry per token (300)");
}
TEST(GgufTokenizerErrors, TokenTypeOfTheWrongCount) {
  expect_model_error(replace_key("tokenizer.ggml.token_type",
                                 [](GgufMetadata& md) {
                                   md.add_i32_array("tokenizer.ggml.token_type", std::vector<int32_t>(kVocab - 1, 1));
                                 }),
                     "tokenizer.ggml.token_type", "must be an INT32 array with one entry per token (300)");
}
TEST(GgufTokenizerErrors, UnknownTokenType) {
  expect_model_error(replace_key("tokenizer.ggml.token_type",
                                 [](GgufMetadata& md) {
                                   std::vector<int32_t> types(kVocab, 1);
                                   types[42] = 7;
                                   md.add_i32_array("tokenizer.ggml.token_type", types);
                                 }),
                     "tokenizer.ggml.token_type", "token 42 has unknown type 7");
}
TEST(GgufTokenizerErrors, NormalTokenThatIsNotGpt2ByteText) {
  const GgufFile valid = GgufFile::open(valid_gguf());
  const GgufValue& v = valid.require("tokenizer.ggml.tokens", GgufType::Array);
  std::vector<std::string> tokens(v.strings.begin(), v.strings.end());
  tokens[100] = "a b";  // a raw space: GPT-2 text writes the space byte as "Ġ"
  expect_model_error(
      replace_key("tokenizer.ggml.tokens", [tokens](GgufMetadata& md) { md.add_string_array("tokenizer.ggml.tokens", tokens); }),
      "tokenizer.ggml.tokens", "token 100 \"a b\" is not GPT-2 byte-level text");
}
TEST(GgufTokenizerErrors, MergeWithoutASpace) {
  expect_model_error(replace_key("tokenizer.ggml.merges",
                                 [](GgufMetadata& md) { md.add_string_array("tokenizer.ggml.merges", {"ab"}); }),
                     "tokenizer.ggml.merges", "merge 0 \"ab\" is not \"a b\" byte-level text");
}
TEST(GgufTokenizerErrors, MergeOfTextThatIsNotGpt2Bytes) {
  expect_model_error(replace_key("tokenizer.ggml.merges",
                                 [](GgufMetadata& md) { md.add_string_array("tokenizer.ggml.merges", {"a b", "\xe6\x97\xa5 b"}); }),
                     "tokenizer.ggml.merges", "merge 1");
}
TEST(GgufTokenizerErrors, SpecialIdOutsideTheVocabulary) {
  expect_model_error(replace_key("tokenizer.ggml.eos_token_id",
                                 [](GgufMetadata& md) { md.add_u32("tokenizer.ggml.eos_token_id", kVocab); }),
                     "tokenizer.ggml.eos_token_id", "token id 300 is outside the vocabulary");
}
TEST(GgufTokenizerErrors, MoreTokensThanEmbeddingRows) {
  expect_model_error(edit_tensors([](auto& es) {
                       for (const char* name : {"token_embd.weight", "output.weight"}) {
                         GgufTensorEntry* e = entry(es, name);
                         e->ne = {64, kVocab - 10};
                         zero_data(*e);
                       }
                     }),
                     "tokenizer.ggml.tokens", "300 tokens but token_embd has 290 rows");
}

// --- gguf_split.cpp ---------------------------------------------------------------------------

// Three shards of three F32 tensors of 64 elements, m-0000{1,2,3}-of-00003.gguf.
std::vector<fs::path> write_split_set(const TempDir& dir) {
  GgufMetadata md;
  md.add_string("general.architecture", "test");
  std::vector<GgufTensorEntry> tensors;
  for (int i = 0; i < 3; ++i) {
    GgufTensorEntry e;
    e.name = "t" + std::to_string(i);
    e.ggml_type = 0;
    e.ne = {64};
    zero_data(e);
    tensors.push_back(std::move(e));
  }
  std::vector<fs::path> paths;
  for (const auto& name : write_gguf_split(dir / "m.gguf", md, tensors, 256)) paths.push_back(dir / name);
  return paths;
}

// Rewrites `shard` in place with `edit`, then opens the set from `open` and expects the error.
void expect_split_error(const Edit& edit, size_t shard, size_t open, const std::string& field, const std::string& message) {
  TempDir dir;
  const auto paths = write_split_set(dir);
  const fs::path edited = dir / "edited.gguf";
  rewrite(paths[shard], edited, edit);
  fs::rename(edited, paths[shard]);
  try {
    GgufModelFiles::open(paths[open]);
    ADD_FAILURE() << "no error; expected " << field << ": " << message;
  } catch (const FormatError& e) {
    EXPECT_NE(e.field().find(field), std::string::npos) << e.what();
    EXPECT_NE(e.message().find(message), std::string::npos) << e.what();
  }
}

Edit set_u16(const std::string& key, uint16_t value) {
  return replace_key(key, [key, value](GgufMetadata& md) { md.add_u16(key, value); });
}

TEST(GgufSplitErrors, SplitCountZero) { expect_split_error(set_u16("split.count", 0), 0, 0, "split.count", "split.count is 0"); }
TEST(GgufSplitErrors, SplitNoNotBelowCount) {
  expect_split_error(set_u16("split.no", 3), 2, 2, "split.no", "split.no 3 is not below split.count 3");
}
TEST(GgufSplitErrors, SplitNoMissing) { expect_split_error(drop_key("split.no"), 1, 1, "split.no", "split file without split.no"); }
TEST(GgufSplitErrors, FileNameUnlikeItsKeys) {
  // The second file says it is shard 3 of 3: its name says 2 of 3.
  expect_split_error(set_u16("split.no", 2), 1, 1, "split.no", "file name m-00002-of-00003.gguf disagrees with its split.no");
}
TEST(GgufSplitErrors, ShardOutOfPlaceInTheSet) {
  // Opened from shard 1, shard 2 says it is shard 1 (its name is not checked when another opens it).
  expect_split_error(set_u16("split.no", 0), 1, 0, "split.no", "expected shard 1 of 3, found shard 0 of 3");
}
TEST(GgufSplitErrors, ShardOfAnotherCount) {
  expect_split_error(set_u16("split.count", 4), 2, 0, "split.no", "expected shard 2 of 3, found shard 2 of 4");
}
TEST(GgufSplitErrors, SplitTensorsCountUnlikeTheShards) {
  expect_split_error(replace_key("split.tensors.count", [](GgufMetadata& md) { md.add_i32("split.tensors.count", 5); }), 0, 2,
                     "split.tensors.count", "says 5 tensors, the shards hold 3");
}
TEST(GgufSplitErrors, TensorRepeatedAcrossShards) {
  expect_split_error(edit_tensors([](auto& es) { es[0].name = "t0"; }), 2, 0, "t0", "tensor also appears in an earlier shard");
}
TEST(GgufSplitErrors, NameWithoutTheShardPattern) {
  TempDir dir;
  const auto paths = write_split_set(dir);
  fs::rename(paths[0], dir / "renamed.gguf");
  try {
    GgufModelFiles::open(dir / "renamed.gguf");
    ADD_FAILURE() << "no error";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.field(), "split.count");
    EXPECT_NE(e.message().find("does not end in -NNNNN-of-NNNNN.gguf"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gptoss::test
