// The tokenizer files of the checkpoints we write: from a GGUF and from a model.bin the folder
// gets a tokenizer.json that reads back as the source tokenizer and tokenizes the goldens as
// Hugging Face `tokenizers` does; from an HF checkpoint the files are copied byte for byte; the
// chat template survives HF -> GGUF -> HF in both of its HF forms.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "convert/hf_tokenizer_files.h"
#include "convert/model_io.h"
#include "convert/tokenizer_json.h"
#include "convert/tokenizer_json_writer.h"
#include "formats/gguf/gguf_file.h"
#include "runtime/tokenizer/tokenizer.h"
#include "tests/test_support.h"
#include "verify/sha256.h"

namespace gptoss::test {
namespace {
namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr const char* kPublishedTokenizerSha = "0614fe83cadab421296e664e1f48f4261fa8fef6e03e63bb75c20f38e37d07d3";

json read_json(const fs::path& path) {
  std::ifstream in(path);
  return json::parse(in);
}

// The published tokenizer.json, parsed once per binary.
const TokenizerData& published_tokenizer(const fs::path& path) {
  static const std::shared_ptr<TokenizerData> data = load_tokenizer_json(path);
  return *data;
}

// Every golden of refs-a.json `tokenize` and `tokenize_special` (Hugging Face `tokenizers`, special
// tokens written in the text recognised) encodes to the golden ids with `written`.
void expect_golden_encodings(const TokenizerData& written, const fs::path& goldens) {
  const Tokenizer tokenizer(written);
  const json refs = read_json(goldens / "a" / "refs-a.json");
  size_t checked = 0;
  for (const char* set : {"tokenize", "tokenize_special"})
    for (const auto& g : refs[set]) {
      const auto ids = tokenizer.encode(g["text"].get<std::string>(), /*allow_special=*/true);
      EXPECT_EQ(ids, g["ids"].get<std::vector<uint32_t>>()) << set << ": " << g["text"];
      ++checked;
    }
  EXPECT_EQ(checked, 28u);
}

// The same ids for the same bytes, the same special ids and merges, id by id up to `ids`.
void expect_same_tokenizer_up_to(const TokenizerData& got, const TokenizerData& want, uint32_t ids) {
  ASSERT_EQ(got.size(), ids);
  for (uint32_t id = 0; id < ids; ++id) {
    ASSERT_EQ(got.tokens[id], want.tokens[id]) << "id " << id;
    ASSERT_EQ(got.types[id], want.types[id]) << "id " << id;
  }
  EXPECT_EQ(got.merges, want.merges);
  EXPECT_EQ(got.pretokenizer_regex, want.pretokenizer_regex);
  EXPECT_EQ(got.bos_id, want.bos_id);
  EXPECT_EQ(got.eos_id, want.eos_id);
  EXPECT_EQ(got.pad_id, want.pad_id);
}

TEST(HfTokenizerFiles, GeneratedFilesAreThePublishedOnes) {
  TOKENIZER_OR_SKIP();
  const TokenizerData& published = published_tokenizer(*tokenizer_json);
  // Byte for byte: the layout of Hugging Face's serializer is reproduced exactly.
  const std::string text = tokenizer_json_text(published);
  EXPECT_EQ(sha256_hex({reinterpret_cast<const uint8_t*>(text.data()), text.size()}), kPublishedTokenizerSha);
  // tokenizer_config.json: the same JSON as the one published beside it (key order, numbers).
  const fs::path published_config = tokenizer_json->parent_path() / "tokenizer_config.json";
  if (fs::exists(published_config)) {
    EXPECT_EQ(json::parse(tokenizer_config_json_text(published, true)), read_json(published_config));
  }
}

TEST(HfTokenizerFiles, GgufToHfWritesTheSourceTokenizer) {
  GOLDENS_OR_SKIP();
  TOKENIZER_OR_SKIP();
  TempDir out;
  const CanonicalModel gguf = load_model(*goldens / "a" / "model-q8_0.gguf");
  ASSERT_TRUE(gguf.tokenizer);
  ASSERT_EQ(gguf.tokenizer->size(), 201088u);  // with llama.cpp's [PAD{id}] fillers
  write_model(gguf, out / "hf", {});
  // The fillers are not tokens: what comes out is the published file itself.
  EXPECT_EQ(file_sha256(out / "hf" / "tokenizer.json"), kPublishedTokenizerSha);
  const auto written = load_tokenizer_json(out / "hf" / "tokenizer.json");
  expect_same_tokenizer_up_to(*written, published_tokenizer(*tokenizer_json), 199998 + 21);
  expect_golden_encodings(*written, *goldens);
  const json config = read_json(out / "hf" / "tokenizer_config.json");
  EXPECT_EQ(config["bos_token"], "<|startoftext|>");
  EXPECT_EQ(config["eos_token"], "<|return|>");
  EXPECT_EQ(config["pad_token"], "<|endoftext|>");
  EXPECT_EQ(config["added_tokens_decoder"].size(), 21u);
  EXPECT_FALSE(config.contains("chat_template"));  // the golden GGUF has none
}

TEST(HfTokenizerFiles, ModelBinToHfKeepsTheTokensTheFileHolds) {
  GOLDENS_OR_SKIP();
  TOKENIZER_OR_SKIP();
  TempDir out;
  const CanonicalModel bin = load_model(*goldens / "a" / "model.bin");
  write_model(bin, out / "hf", {});
  const auto written = load_tokenizer_json(out / "hf" / "tokenizer.json");
  // The 16 specials model.bin holds (ids 199998..200013), named as o200k_harmony names them;
  // the five ids above (reserved, <|endofprompt|>) have no embedding row, so no token either.
  const TokenizerData& published = published_tokenizer(*tokenizer_json);
  expect_same_tokenizer_up_to(*written, published, 200014);
  expect_golden_encodings(*written, *goldens);
  const json config = read_json(out / "hf" / "tokenizer_config.json");
  json expected = read_json(tokenizer_json->parent_path() / "tokenizer_config.json");
  for (int id = 200014; id <= 200018; ++id) expected["added_tokens_decoder"].erase(std::to_string(id));
  EXPECT_EQ(config, expected);
  EXPECT_EQ(read_json(out / "hf" / "config.json")["vocab_size"], 200014);
}

TEST(HfTokenizerFiles, HfToHfCopiesTheTokenizerFilesByteForByte) {
  TOKENIZER_OR_SKIP();
  TempDir dir;
  const fs::path src = dir / "src";
  fs::create_directories(src);
  for (const char* name : {"model.safetensors", "config.json"})
    fs::create_symlink(preset_a_checkpoint() / "hf" / name, src / name);
  fs::create_symlink(*tokenizer_json, src / "tokenizer.json");
  // Keys we do not model (a custom one here) survive because the files are copied.
  write_file_text(src / "tokenizer_config.json", R"({"tokenizer_class": "PreTrainedTokenizerFast", "custom": [1, 2]})");
  write_file_text(src / "chat_template.jinja", "{{ messages[0].content }}\n");
  write_model(load_model(src), dir / "out", {});
  for (const char* name : {"tokenizer.json", "tokenizer_config.json", "chat_template.jinja"})
    EXPECT_EQ(file_sha256(dir / "out" / name), file_sha256(src / name)) << name;
}

TEST(HfTokenizerFiles, UnknownPreTokenizerIsANoteNotAWrongFile) {
  TokenizerData tok;
  tok.tokens = {"a", "b"};
  tok.types = {TokenType::Normal, TokenType::Normal};
  TempDir dir;
  std::vector<std::string> notes;
  write_hf_tokenizer_files(tok, dir.path(), notes);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("pre-tokenizer regex is unknown"), std::string::npos) << notes[0];
  EXPECT_FALSE(fs::exists(dir / "tokenizer.json"));
  EXPECT_FALSE(fs::exists(dir / "tokenizer_config.json"));
}

// ---------------------------------------------------------------------------------------------
// The chat template: HF checkpoint -> GGUF tokenizer.chat_template -> HF, in both HF forms.

// A template with what escaping could break: newlines, quotes, backslashes, non-ASCII, jinja.
const std::string kTemplate =
    "{#- harmony, abridged -#}\n{%- for m in messages %}<|start|>{{ m[\"role\"] }}<|message|>{{ m.content }}<|end|>\n"
    "{%- endfor %}{{ '<|start|>assistant' }} \\n tab\there é 日本 \U0001F600";

// A small byte-level tokenizer (every byte, one merge, harmony specials): reading 27 MB of real
// tokenizer three times would only make these tests slow.
TokenizerData tiny_tokenizer() {
  TokenizerData tok;
  for (int b = 0; b < 256; ++b) {
    tok.tokens.emplace_back(1, static_cast<char>(b));
    tok.types.push_back(TokenType::Normal);
  }
  tok.tokens.push_back("ab");
  tok.types.push_back(TokenType::Normal);
  tok.merges = {{"a", "b"}};
  for (const char* special : {"<|start|>", "<|message|>", "<|end|>", "<|return|>"}) {
    tok.tokens.push_back(special);
    tok.types.push_back(TokenType::Control);
  }
  tok.pretokenizer_regex = "\\s+|\\S+";
  return tok;
}

// preset-a weights with the tiny tokenizer and the template in `form`.
fs::path checkpoint_with_template(const TempDir& dir, const std::string& form) {
  const fs::path ck = dir / "ck";
  fs::create_directories(ck);
  for (const char* name : {"model.safetensors", "config.json"})
    fs::create_symlink(preset_a_checkpoint() / "hf" / name, ck / name);
  write_file_text(ck / "tokenizer.json", tokenizer_json_text(tiny_tokenizer()));
  if (form == "tokenizer_config.json") write_file_text(ck / "tokenizer_config.json", json{{"chat_template", kTemplate}}.dump(2));
  else write_file_text(ck / "chat_template.jinja", kTemplate);
  return ck;
}

class ChatTemplate : public ::testing::TestWithParam<std::string> {};

TEST_P(ChatTemplate, SurvivesHfToGgufToHf) {
  TempDir dir;
  const fs::path ck = checkpoint_with_template(dir, GetParam());
  const CanonicalModel hf = load_model(ck);
  ASSERT_TRUE(hf.tokenizer);
  ASSERT_EQ(hf.tokenizer->chat_template, kTemplate);

  write_model(hf, dir / "a.gguf", {});
  const GgufFile gguf = GgufFile::open(dir / "a.gguf");
  EXPECT_EQ(gguf.require("tokenizer.chat_template", GgufType::String).string, kTemplate);

  // Back to HF: the template goes into tokenizer_config.json, as transformers reads it.
  write_model(load_model(dir / "a.gguf"), dir / "back", {});
  EXPECT_EQ(read_json(dir / "back" / "tokenizer_config.json")["chat_template"], kTemplate);
  EXPECT_FALSE(fs::exists(dir / "back" / "chat_template.jinja"));
  const CanonicalModel back = load_model(dir / "back");
  ASSERT_TRUE(back.tokenizer);
  EXPECT_EQ(back.tokenizer->chat_template, kTemplate);
  EXPECT_EQ(back.tokenizer->tokens, std::vector<std::string>(hf.tokenizer->tokens));
}

INSTANTIATE_TEST_SUITE_P(HfForms, ChatTemplate, ::testing::Values("tokenizer_config.json", "chat_template.jinja"),
                         [](const auto& test_param) { return test_param.param == "chat_template.jinja" ? "Jinja" : "TokenizerConfig"; });

TEST(ChatTemplateFiles, JinjaWinsOverTokenizerConfigAsInTransformers) {
  TempDir dir;
  const fs::path ck = checkpoint_with_template(dir, "chat_template.jinja");
  write_file_text(ck / "tokenizer_config.json", json{{"chat_template", "older"}}.dump());
  EXPECT_EQ(load_hf_tokenizer_files(ck)->chat_template, kTemplate);
}

}  // namespace
}  // namespace gptoss::test
