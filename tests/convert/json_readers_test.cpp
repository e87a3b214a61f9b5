// Every JSON file the toolkit reads names the file and the field path when a value has the wrong
// JSON type: config.json (both layouts, through the checkpoint loader too), generation_config.json,
// tokenizer.json, tokenizer_config.json, model.safetensors.index.json and a safetensors header.
// Nothing but FormatError leaves a reader.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

#include "convert/gptoss_config.h"
#include "convert/hf_tokenizer_files.h"
#include "convert/safetensors_model.h"
#include "convert/tokenizer_json.h"
#include "formats/core/error.h"
#include "formats/core/mapped_file.h"
#include "formats/safetensors/safetensors_checkpoint.h"
#include "formats/safetensors/safetensors_file.h"
#include "tests/test_support.h"

namespace gptoss {
namespace {
namespace fs = std::filesystem;
using json = nlohmann::json;

FormatError error_of(const std::function<void()>& read) {
  try {
    read();
  } catch (const FormatError& e) {
    return e;
  }
  ADD_FAILURE() << "no FormatError";
  return FormatError("", "", std::nullopt, "");
}


json read_json(const fs::path& path) { return json::parse(std::ifstream(path)); }

// Preset a's hf/ folder with its own JSON files and the weights linked, not copied.
struct HfFolder {
  test::TempDir dir;
  fs::path hf = dir / "hf";
  HfFolder() {
    fs::create_directories(hf);
    const fs::path from = test::preset_a_checkpoint() / "hf";
    fs::create_symlink(from / "model.safetensors", hf / "model.safetensors");
    fs::copy_file(from / "config.json", hf / "config.json");
    fs::copy_file(from / "generation_config.json", hf / "generation_config.json");
  }
  void edit(const std::string& name, const std::function<void(json&)>& change) const {
    json j = read_json(hf / name);
    change(j);
    test::write_file_text(hf / name, j.dump(2));
  }
};

TEST(JsonReaders, CheckpointConfigWithANumberForRopeTypeNamesFileAndField) {
  // The fuzzer's finding (fuzz/regressions/config_json/rope-type-number) through the loader that
  // gptoss-verify and gptoss-convert use; it used to escape as nlohmann's type_error 302.
  HfFolder folder;
  folder.edit("config.json", [](json& j) { j["rope_scaling"]["rope_type"] = 0; });
  const FormatError e = error_of([&] { (void)load_safetensors_model(folder.hf); });
  EXPECT_EQ(std::string(e.what()),
            (folder.hf / "config.json").string() + ": rope_scaling.rope_type: expected a string, found the number 0");
}

TEST(JsonReaders, ConfigFieldsOfEveryKindNameTheirPath) {
  const json hf = config_to_hf_json(GptOssConfig{.num_layers = 2, .hidden_size = 64, .intermediate_size = 64,
                                                 .num_heads = 2, .num_kv_heads = 1, .head_dim = 32, .num_experts = 2,
                                                 .experts_per_token = 1, .vocab_size = 300, .sliding_window = 8,
                                                 .sliding_layers = {true, false}});
  const struct {
    std::function<void(json&)> change;
    std::string field, message;
  } cases[] = {
      {[](json& j) { j["rope_scaling"]["factor"] = "32"; }, "rope_scaling.factor",
       "expected a number, found the string \"32\""},
      {[](json& j) { j["rope_scaling"]["truncate"] = 1; }, "rope_scaling.truncate", "expected true or false, found the number 1"},
      {[](json& j) { j["rope_scaling"] = "yarn"; }, "rope_scaling", "expected an object, found the string \"yarn\""},
      {[](json& j) { j.erase("rope_scaling"); j["rope_parameters"] = {{"rope_type", 3}}; }, "rope_parameters.rope_type",
       "expected a string, found the number 3"},
      {[](json& j) { j["layer_types"][1] = 7; }, "layer_types[1]", "expected a string, found the number 7"},
      {[](json& j) { j["layer_types"] = "full_attention"; }, "layer_types",
       "expected an array of layer types, found the string \"full_attention\""},
      {[](json& j) { j["eos_token_id"] = json::array({"x", 5}); }, "eos_token_id[0]",
       "expected a non-negative integer below 2^32, found the string \"x\""},
      {[](json& j) { j["pad_token_id"] = -1; }, "pad_token_id", "expected a non-negative integer below 2^32, found the number -1"},
      {[](json& j) { j["num_hidden_layers"] = 2.0; }, "num_hidden_layers",
       "expected a non-negative integer below 2^32, found the number 2.0"},
      {[](json& j) { j.erase("vocab_size"); }, "vocab_size", "required field is missing"},
      {[](json& j) { j["model_type"] = 5; }, "model_type", "expected a string, found the number 5"},
      {[](json& j) { j["model_type"] = "llama"; }, "model_type", "expected \"gpt_oss\", found \"llama\""},
  };
  for (const auto& c : cases) {
    json j = hf;
    c.change(j);
    const FormatError e = error_of([&] { (void)config_from_hf_json(j, "x/config.json"); });
    EXPECT_EQ(e.file(), "x/config.json") << j.dump();
    EXPECT_EQ(e.field(), c.field) << e.what();
    EXPECT_EQ(e.message(), c.message) << e.what();
  }
  // generation_config.json's form: the array's first id counts.
  json j = hf;
  j["eos_token_id"] = json::array({5, "ignored"});
  EXPECT_EQ(config_from_hf_json(j, "x").eos_token_id, 5u);
  const FormatError e = error_of([] { (void)config_from_hf_json(json::array(), "x/config.json"); });
  EXPECT_STREQ(e.what(), "x/config.json: expected a JSON object (config.json), found an array");
}

TEST(JsonReaders, OriginalLayoutConfig) {
  json j = json::parse(R"({"num_hidden_layers": 2, "num_experts": 2, "experts_per_token": 1, "vocab_size": 300,
    "hidden_size": 64, "intermediate_size": 64, "head_dim": 32, "num_attention_heads": 2,
    "num_key_value_heads": 1, "sliding_window": 8, "initial_context_length": 4096, "rope_theta": "150000"})");
  EXPECT_STREQ(error_of([&] { (void)config_from_original_json(j, "original/config.json"); }).what(),
               "original/config.json: rope_theta: expected a number, found the string \"150000\"");
  j["rope_theta"] = 150000;
  j["rope_ntk_alpha"] = true;
  EXPECT_STREQ(error_of([&] { (void)config_from_original_json(j, "original/config.json"); }).what(),
               "original/config.json: rope_ntk_alpha: expected a number, found true");
}

TEST(JsonReaders, LoadConfigFileNamesThePath) {
  test::TempDir dir;
  test::write_file_text(dir / "config.json", R"({"num_hidden_layers": "4"})");
  EXPECT_EQ(std::string(error_of([&] { (void)load_config_file((dir / "config.json").string()); }).what()),
            (dir / "config.json").string() + ": num_hidden_layers: expected a non-negative integer below 2^32, found the string \"4\"");
}

TEST(JsonReaders, GenerationConfig) {
  HfFolder folder;
  folder.edit("config.json", [](json& j) { j.erase("bos_token_id"); });  // else the config's wins
  folder.edit("generation_config.json", [](json& j) { j["bos_token_id"] = "199998"; });
  EXPECT_EQ(std::string(error_of([&] { (void)load_safetensors_model(folder.hf); }).what()),
            (folder.hf / "generation_config.json").string() +
                ": bos_token_id: expected a non-negative integer below 2^32, found the string \"199998\"");
  folder.edit("generation_config.json", [](json& j) { j["bos_token_id"] = 7; });
  EXPECT_EQ(load_safetensors_model(folder.hf).config.bos_token_id, 7u);
  // Earlier versions wrote "null" for a model without special ids: read as nothing set.
  test::write_file_text(folder.hf / "generation_config.json", "null\n");
  EXPECT_FALSE(load_safetensors_model(folder.hf).config.bos_token_id);
  test::write_file_text(folder.hf / "generation_config.json", "[]");
  EXPECT_STREQ(error_of([&] { (void)load_safetensors_model(folder.hf); }).message().c_str(),
               "expected an object, found an array");
}

TEST(JsonReaders, GenerationConfigWithoutIdsIsWrittenAsAnEmptyObject) {
  test::TempDir dir;
  CanonicalModel model = load_safetensors_model(test::preset_a_checkpoint() / "hf");
  model.tokenizer.reset();
  model.config.bos_token_id.reset();
  model.config.eos_token_id.reset();
  model.config.pad_token_id.reset();
  (void)write_safetensors_model(model, dir / "out", {});
  std::ifstream in(dir / "out" / "generation_config.json");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "{}\n");
  EXPECT_FALSE(load_safetensors_model(dir / "out").config.eos_token_id);
}

// A byte-level tokenizer.json of three tokens with `extra` members before "model".
std::string tiny_tokenizer(const std::string& extra, const std::string& model_type = R"("BPE")") {
  return "{" + extra + R"("model":{"type":)" + model_type + R"(,"vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]}})";
}

TEST(JsonReaders, TokenizerJsonOutsideTheVocabulary) {
  const struct {
    std::string text, field, message;
  } cases[] = {
      {tiny_tokenizer(R"("added_tokens":[{"id":3,"content":"<|x|>","special":"yes"}],)"), "added_tokens[0].special",
       "expected true or false, found the string \"yes\""},
      {tiny_tokenizer(R"("added_tokens":[{"id":3,"content":7}],)"), "added_tokens[0].content",
       "expected a string, found the number 7"},
      {tiny_tokenizer(R"("added_tokens":[{"content":"x"}],)"), "added_tokens[0].id", "required field is missing"},
      {tiny_tokenizer(R"("added_tokens":[{"id":16777216,"content":"x"}],)"), "added_tokens[0].id",
       "expected a non-negative integer below 2^24, found the number 16777216"},
      {tiny_tokenizer(R"("added_tokens":{"id":3},)"), "added_tokens", "expected an array, found an object"},
      {tiny_tokenizer("", "7"), "model.type", "expected a string, found the number 7"},
      {tiny_tokenizer(R"("pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":5}}]},)"),
       "pre_tokenizer.pretokenizers[0].pattern.Regex", "expected a string, found the number 5"},
      {tiny_tokenizer(R"("pre_tokenizer":{"type":["Split"]},)"), "pre_tokenizer.type", "expected a string, found an array"},
  };
  for (const auto& c : cases) {
    const FormatError e = error_of([&] { (void)tokenizer_from_json_text(c.text, "t/tokenizer.json"); });
    EXPECT_EQ(e.file(), "t/tokenizer.json");
    EXPECT_EQ(e.field(), c.field) << e.what();
    EXPECT_EQ(e.message(), c.message) << e.what();
  }
}

TEST(JsonReaders, TokenizerJsonVocabularyAndMergesSayWhichEntry) {
  const auto vocab_error = error_of([] {
    (void)tokenizer_from_json_text(R"({"model":{"type":"BPE","vocab":{"a":0,"b":true}}})", "t/tokenizer.json");
  });
  EXPECT_STREQ(vocab_error.what(),
               "t/tokenizer.json: model.vocab.b: expected a non-negative integer below 2^24, found true");
  const auto merge_error = error_of([] {
    (void)tokenizer_from_json_text(R"({"model":{"type":"BPE","vocab":{"a":0,"b":1},"merges":["a b", 7]}})",
                                   "t/tokenizer.json");
  });
  EXPECT_STREQ(merge_error.what(),
               "t/tokenizer.json: model.merges: merge 1 must be \"a b\" or [\"a\", \"b\"], found the number 7");
}

TEST(JsonReaders, TokenizerConfigChatTemplate) {
  test::TempDir dir;
  test::write_file_text(dir / "tokenizer.json", tiny_tokenizer(""));
  test::write_file_text(dir / "tokenizer_config.json", R"({"chat_template": 5})");
  EXPECT_EQ(std::string(error_of([&] { (void)load_hf_tokenizer_files(dir.path()); }).what()),
            (dir / "tokenizer_config.json").string() + ": chat_template: expected a string, found the number 5");
  // transformers' list of named templates is not one we use: left out, not an error.
  test::write_file_text(dir / "tokenizer_config.json", R"({"chat_template": [{"name": "default", "template": "x"}]})");
  EXPECT_FALSE(load_hf_tokenizer_files(dir.path())->chat_template);
  test::write_file_text(dir / "tokenizer_config.json", R"({"chat_template": "{{ x }}"})");
  EXPECT_EQ(load_hf_tokenizer_files(dir.path())->chat_template, "{{ x }}");
}

TEST(JsonReaders, SafetensorsIndex) {
  test::TempDir dir;
  test::write_file_text(dir / "model.safetensors.index.json", R"({"weight_map": {"a.weight": 1}})");
  EXPECT_EQ(std::string(error_of([&] { (void)SafetensorsCheckpoint::open(dir.path()); }).what()),
            (dir / "model.safetensors.index.json").string() + ": weight_map.a.weight: expected a string, found the number 1");
  test::write_file_text(dir / "model.safetensors.index.json", R"({"metadata": {}})");
  EXPECT_EQ(std::string(error_of([&] { (void)SafetensorsCheckpoint::open(dir.path()); }).what()),
            (dir / "model.safetensors.index.json").string() + ": weight_map: required field is missing");
}

TEST(JsonReaders, SafetensorsHeader) {
  std::string header = R"({"w":{"dtype":5,"shape":[1],"data_offsets":[0,1]}})";
  header.resize((header.size() + 7) / 8 * 8, ' ');
  std::vector<uint8_t> bytes(8 + header.size() + 1, 0);  // the header, then one byte of data
  store_u64(bytes.data(), header.size());
  std::copy(header.begin(), header.end(), bytes.begin() + 8);
  const FormatError e = error_of([&] { (void)SafetensorsFile::parse(MappedFile::from_bytes(bytes, "m.safetensors")); });
  EXPECT_STREQ(e.what(), "m.safetensors: tensor \"w\".dtype at byte 8: expected a string, found the number 5");
}

}  // namespace
}  // namespace gptoss
