#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "convert/gptoss_config.h"
#include "convert/synthesize.h"
#include "formats/core/error.h"

namespace gptoss {
namespace {
using json = nlohmann::json;

json hub_config() {
  return json::parse(R"({
    "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "hidden_size": 2880, "intermediate_size": 2880,
    "num_hidden_layers": 24, "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64,
    "num_local_experts": 32, "num_experts_per_tok": 4, "vocab_size": 201088, "rms_norm_eps": 1e-05,
    "rope_theta": 150000, "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
    "original_max_position_embeddings": 4096, "truncate": false}, "max_position_embeddings": 131072,
    "sliding_window": 128, "swiglu_limit": 7.0, "eos_token_id": 200002, "pad_token_id": 199999})");
}

TEST(Config, HubFormReadsTheRealValues) {
  const auto c = config_from_hf_json(hub_config(), "config.json");
  EXPECT_EQ(c.num_layers, 24u);
  EXPECT_EQ(c.q_rows(), 4096u);
  EXPECT_EQ(c.heads_per_kv(), 8u);
  EXPECT_FALSE(c.yarn_truncate);
  ASSERT_EQ(c.sliding_layers.size(), 24u);
  EXPECT_TRUE(c.is_sliding(0));  // layer_types absent: even layers slide
  EXPECT_FALSE(c.is_sliding(1));
  EXPECT_EQ(c.eos_token_id, 200002u);
}

TEST(Config, RopeParametersFormIsTheSameConfig) {
  json j = hub_config();
  json rope = j["rope_scaling"];
  rope["rope_theta"] = 150000.0;
  j.erase("rope_scaling");
  j.erase("rope_theta");
  j["rope_parameters"] = rope;
  j["layer_types"] = json::array();
  for (int i = 0; i < 24; ++i) j["layer_types"].push_back(i % 2 ? "full_attention" : "sliding_attention");
  EXPECT_EQ(config_from_hf_json(j, "a"), config_from_hf_json(hub_config(), "b"));
}

TEST(Config, MissingTruncateMeansTrueLikeTransformers) {
  json j = hub_config();
  j["rope_scaling"].erase("truncate");
  EXPECT_TRUE(config_from_hf_json(j, "c").yarn_truncate);
}

TEST(Config, GqaMappingIsDivisionNotModulo) {
  const auto c = config_from_hf_json(hub_config(), "config.json");
  EXPECT_EQ(c.kv_head_for(0), 0u);
  EXPECT_EQ(c.kv_head_for(7), 0u);  // h % kv would give 7
  EXPECT_EQ(c.kv_head_for(8), 1u);
  EXPECT_EQ(c.kv_head_for(63), 7u);
}

TEST(Config, YarnNumbersOfTheRealModel) {
  const auto y = compute_yarn(config_from_hf_json(hub_config(), "config.json"));
  EXPECT_NEAR(y.low, 8.092779115512402, 1e-12);
  EXPECT_NEAR(y.high, 17.39802450158856, 1e-12);
  EXPECT_NEAR(y.concentration, 1.3465735902799727, 1e-15);
  ASSERT_EQ(y.inv_freq.size(), 32u);
  // transformers' fp32 values (spec 4.5).
  const float expected[] = {1, 0.689044297f, 0.47478205f, 0.327145875f, 0.225418001f, 0.155322984f, 0.107024424f,
                            0.0737445652f, 0.0508132726f, 0.0317056961f, 0.0193349998f, 0.0115920492f, 0.00679495931f,
                            0.00386035908f, 0.00209379266f, 0.00105260219f, 0.000456483918f, 0.000129318694f,
                            3.83088118e-05f, 2.63964685e-05f, 1.8188337e-05f, 1.25325696e-05f, 8.63549576e-06f,
                            5.95023948e-06f, 4.09997847e-06f, 2.82506676e-06f, 1.94659629e-06f, 1.34129095e-06f,
                            9.24208962e-07f, 6.36820914e-07f, 4.38797855e-07f, 3.0235114e-07f};
  for (int i = 0; i < 32; ++i) EXPECT_NEAR(y.inv_freq[i], expected[i], expected[i] * 1e-6) << i;
}

TEST(Config, OriginalFormMatchesHubForm) {
  const json orig = json::parse(R"({"num_hidden_layers": 24, "num_experts": 32, "experts_per_token": 4,
    "vocab_size": 201088, "hidden_size": 2880, "intermediate_size": 2880, "swiglu_limit": 7.0, "head_dim": 64,
    "num_attention_heads": 64, "num_key_value_heads": 8, "sliding_window": 128, "initial_context_length": 4096,
    "rope_theta": 150000, "rope_scaling_factor": 32.0, "rope_ntk_alpha": 1.0, "rope_ntk_beta": 32.0})");
  auto a = config_from_original_json(orig, "original/config.json");
  auto b = config_from_hf_json(hub_config(), "config.json");
  b.eos_token_id.reset();
  b.pad_token_id.reset();
  EXPECT_EQ(a, b);
  EXPECT_EQ(config_from_original_json(config_to_original_json(a), "x"), a);
  auto back = config_from_hf_json(config_to_hf_json(b), "y");
  EXPECT_EQ(back, b);
}

TEST(Config, ValidationNamesEveryProblem) {
  json j = hub_config();
  j["head_dim"] = 63;
  j["num_key_value_heads"] = 7;
  j["hidden_size"] = 2881;
  try {
    config_from_hf_json(j, "bad/config.json");
    FAIL();
  } catch (const FormatError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("bad/config.json"), std::string::npos);
    EXPECT_NE(msg.find("head_dim must be even"), std::string::npos) << msg;
    EXPECT_NE(msg.find("multiple of num_key_value_heads"), std::string::npos) << msg;
    EXPECT_NE(msg.find("hidden_size must be a positive multiple of 32"), std::string::npos) << msg;
  }
  j = hub_config();
  j["num_hidden_layers"] = "24";
  EXPECT_THROW(config_from_hf_json(j, "x"), FormatError);
  j = hub_config();
  j.erase("vocab_size");
  EXPECT_THROW(config_from_hf_json(j, "x"), FormatError);
}

TEST(Config, PresetShapes) {
  EXPECT_EQ(synth_config(synth_preset("20b")).num_experts, 32u);
  EXPECT_EQ(synth_config(synth_preset("120b")).num_layers, 36u);
  EXPECT_THROW(synth_preset("7b"), std::invalid_argument);
}

}  // namespace
}  // namespace gptoss
