// JsonValue, the one typed accessor every JSON reader uses: the exact message for each kind of
// mismatch (missing field, wrong type, out of range), the field path through objects and arrays,
// and the byte offset of JSON inside a binary file.
#include <gtest/gtest.h>

#include <functional>

#include <nlohmann/json.hpp>

#include "formats/core/error.h"
#include "formats/core/json_value.h"

namespace gptoss {
namespace {
using json = nlohmann::json;

// The FormatError `read` throws; a failed assertion when it throws nothing.
FormatError error_of(const std::function<void()>& read) {
  try {
    read();
  } catch (const FormatError& e) {
    return e;
  }
  ADD_FAILURE() << "no FormatError";
  return FormatError("", "", std::nullopt, "");
}

const json kConfig = json::parse(R"({
  "num_hidden_layers": 24, "rms_norm_eps": 1e-05, "model_type": "gpt_oss", "flag": true, "nothing": null,
  "negative": -1, "fraction": 2.5, "huge": 4294967296, "float_int": 24.0,
  "rope_scaling": {"rope_type": 0, "factor": 32.0},
  "layer_types": ["sliding_attention", 7],
  "long": "0123456789012345678901234567890123456789-and-more"})");

TEST(JsonValue, TheIssuesExampleWordForWord) {
  const JsonValue root(kConfig, "config.json");
  const FormatError e = error_of([&] { (void)root.at("rope_scaling").get<std::string>("rope_type"); });
  EXPECT_STREQ(e.what(), "config.json: rope_scaling.rope_type: expected a string, found the number 0");
  EXPECT_EQ(e.file(), "config.json");
  EXPECT_EQ(e.field(), "rope_scaling.rope_type");
  EXPECT_EQ(e.message(), "expected a string, found the number 0");
  EXPECT_FALSE(e.offset());
}

TEST(JsonValue, MissingFieldNamesItsPath) {
  const JsonValue root(kConfig, "dir/config.json");
  EXPECT_STREQ(error_of([&] { (void)root.get<uint32_t>("vocab_size"); }).what(),
               "dir/config.json: vocab_size: required field is missing");
  EXPECT_STREQ(error_of([&] { (void)root.at("rope_scaling").at("beta_fast"); }).what(),
               "dir/config.json: rope_scaling.beta_fast: required field is missing");
}

TEST(JsonValue, WrongTypeSaysWhatWasExpectedAndWhatWasFound) {
  const JsonValue root(kConfig, "c.json");
  const struct {
    std::function<void()> read;
    std::string message;
  } cases[] = {
      {[&] { (void)root.get<std::string>("num_hidden_layers"); },
       "c.json: num_hidden_layers: expected a string, found the number 24"},
      {[&] { (void)root.get<uint32_t>("model_type"); },
       "c.json: model_type: expected a non-negative integer below 2^32, found the string \"gpt_oss\""},
      {[&] { (void)root.get<double>("flag"); }, "c.json: flag: expected a number, found true"},
      {[&] { (void)root.get<bool>("rms_norm_eps"); }, "c.json: rms_norm_eps: expected true or false, found the number 1e-05"},
      {[&] { (void)root.get<bool>("nothing"); }, "c.json: nothing: expected true or false, found null"},
      {[&] { (void)root.get<double>("rope_scaling"); }, "c.json: rope_scaling: expected a number, found an object"},
      {[&] { (void)root.get<std::string>("layer_types"); }, "c.json: layer_types: expected a string, found an array"},
      {[&] { (void)root.at("flag").elements(); }, "c.json: flag: expected an array, found true"},
      {[&] { (void)root.at("model_type").find("x"); },
       "c.json: model_type: expected an object, found the string \"gpt_oss\""},
      {[&] { (void)root.at("fraction").size(); }, "c.json: fraction: expected an array or an object, found the number 2.5"},
  };
  for (const auto& c : cases) EXPECT_EQ(error_of(c.read).what(), c.message);
}

TEST(JsonValue, IntegersOutOfRangeOrNotIntegers) {
  const JsonValue root(kConfig, "c.json");
  const struct {
    std::function<void()> read;
    std::string message;
  } cases[] = {
      {[&] { (void)root.get<uint32_t>("negative"); },
       "c.json: negative: expected a non-negative integer below 2^32, found the number -1"},
      {[&] { (void)root.get<uint32_t>("huge"); },
       "c.json: huge: expected a non-negative integer below 2^32, found the number 4294967296"},
      {[&] { (void)root.get<uint32_t>("fraction"); },
       "c.json: fraction: expected a non-negative integer below 2^32, found the number 2.5"},
      {[&] { (void)root.get<uint32_t>("float_int"); },
       "c.json: float_int: expected a non-negative integer below 2^32, found the number 24.0"},
      {[&] { (void)root.at("num_hidden_layers").as_uint(16); },
       "c.json: num_hidden_layers: expected an integer from 0 to 16, found the number 24"},
      {[&] { (void)root.at("num_hidden_layers").as_uint((1u << 4) - 1); },
       "c.json: num_hidden_layers: expected a non-negative integer below 2^4, found the number 24"},
  };
  for (const auto& c : cases) EXPECT_EQ(error_of(c.read).what(), c.message);
  EXPECT_EQ(root.at("huge").as_uint(UINT64_MAX), 4294967296u);
  EXPECT_EQ(root.get<uint32_t>("num_hidden_layers"), 24u);
  // A document built in code holds signed integers; non-negative ones read the same.
  const json built = {{"n", 7}, {"m", -7}};
  EXPECT_EQ(JsonValue(built, "b").get<uint32_t>("n"), 7u);
  EXPECT_EQ(JsonValue::uint_within(built["n"], 7), 7u);
  EXPECT_EQ(JsonValue::uint_within(built["n"], 6), std::nullopt);
  EXPECT_EQ(JsonValue::uint_within(built["m"], UINT64_MAX), std::nullopt);
}

TEST(JsonValue, ArrayElementsAndNestedPaths) {
  const JsonValue root(kConfig, "c.json");
  const auto types = root.at("layer_types").elements();
  ASSERT_EQ(types.size(), 2u);
  EXPECT_EQ(types[0].as_string(), "sliding_attention");
  EXPECT_EQ(types[1].path(), "layer_types[1]");
  EXPECT_STREQ(error_of([&] { (void)types[1].as_string(); }).what(),
               "c.json: layer_types[1]: expected a string, found the number 7");
  const json deep = json::parse(R"({"added_tokens": [{"id": 1}, {"id": 2, "special": "yes"}]})");
  const auto added = JsonValue(deep, "tokenizer.json").at("added_tokens").elements();
  EXPECT_STREQ(error_of([&] { (void)added[1].get_or<bool>("special", false); }).what(),
               "tokenizer.json: added_tokens[1].special: expected true or false, found the string \"yes\"");
  const auto members = JsonValue(deep, "t").members();
  ASSERT_EQ(members.size(), 1u);
  EXPECT_EQ(members[0].key, "added_tokens");
  EXPECT_EQ(members[0].value.path(), "added_tokens");
}

TEST(JsonValue, NullCountsAsAbsentForFindAndFallbacks) {
  const JsonValue root(kConfig, "c.json");
  EXPECT_FALSE(root.find("nothing"));
  EXPECT_FALSE(root.has("nothing"));
  EXPECT_FALSE(root.has("absent"));
  EXPECT_TRUE(root.has("flag"));
  EXPECT_EQ(root.get_or<uint32_t>("nothing", 5u), 5u);
  EXPECT_EQ(root.get_or<uint32_t>("absent", 6u), 6u);
  EXPECT_EQ(root.get_or<double>("rms_norm_eps", 1.0), 1e-5);
  EXPECT_EQ(root.get_or<std::string>("model_type", "x"), "gpt_oss");
  EXPECT_TRUE(root.get_or<bool>("flag", false));
  // A present value of the wrong type is an error even where a fallback exists.
  EXPECT_STREQ(error_of([&] { (void)root.get_or<uint32_t>("model_type", 1u); }).what(),
               "c.json: model_type: expected a non-negative integer below 2^32, found the string \"gpt_oss\"");
  EXPECT_TRUE(root.at("nothing").is_null());  // at() returns a null member; reading it says "found null"
}

TEST(JsonValue, OffsetAndRenamedFieldsForJsonInsideABinaryFile) {
  const json header = json::parse(R"({"w": {"dtype": 5}})");
  const JsonValue entry = JsonValue(header, "model.safetensors", 8).at("w").named("tensor \"w\"");
  const FormatError e = error_of([&] { (void)entry.get<std::string>("dtype"); });
  EXPECT_STREQ(e.what(), "model.safetensors: tensor \"w\".dtype at byte 8: expected a string, found the number 5");
  EXPECT_EQ(e.offset(), 8u);
  EXPECT_STREQ(error_of([&] { entry.fail("custom"); }).what(), "model.safetensors: tensor \"w\" at byte 8: custom");
}

TEST(JsonValue, LongAndCutStringsAreQuotedSafely) {
  const JsonValue root(kConfig, "c.json");
  EXPECT_STREQ(error_of([&] { (void)root.get<double>("long"); }).what(),
               "c.json: long: expected a number, found the string \"0123456789012345678901234567890123456789...\"");
  // 39 ASCII bytes and then a 3-byte character: the cut lands inside it and prints as U+FFFD.
  const std::string cut = std::string(39, 'a') + "\xE4\xB8\x80" + "tail";
  EXPECT_EQ(json_quoted(cut), "\"" + std::string(39, 'a') + "\xEF\xBF\xBD...\"");
  EXPECT_EQ(json_quoted("a\"b\n"), R"("a\"b\n")");
  EXPECT_EQ(describe_json_value(json::array()), "an array");
  EXPECT_EQ(describe_json_value(json(false)), "false");
}

}  // namespace
}  // namespace gptoss
