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

// The config.json of openai/gpt-oss-20b and gpt-oss-120b on the Hugging Face hub, as published
// (the keys the math needs; the two differ only in layers and experts).
json published_config(uint32_t layers, uint32_t experts) {
  json j = json::parse(R"({
    "architectures": ["GptOssForCausalLM"], "attention_bias": true, "attention_dropout": 0.0,
    "eos_token_id": 200002, "experts_per_token": 4, "head_dim": 64, "hidden_act": "silu", "hidden_size": 2880,
    "initial_context_length": 4096, "initializer_range": 0.02, "intermediate_size": 2880,
    "max_position_embeddings": 131072, "model_type": "gpt_oss", "num_attention_heads": 64, "num_experts_per_tok": 4,
    "num_key_value_heads": 8, "output_router_logits": false, "pad_token_id": 199999, "rms_norm_eps": 1e-05,
    "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0, "original_max_position_embeddings": 4096,
                     "rope_type": "yarn", "truncate": false},
    "rope_theta": 150000, "router_aux_loss_coef": 0.9, "sliding_window": 128, "swiglu_limit": 7.0,
    "tie_word_embeddings": false, "use_cache": true, "vocab_size": 201088})");
  j["num_hidden_layers"] = layers;
  j["num_local_experts"] = experts;
  j["layer_types"] = json::array();
  for (uint32_t i = 0; i < layers; ++i) j["layer_types"].push_back(i % 2 ? "full_attention" : "sliding_attention");
  return j;
}

class PresetConfig : public ::testing::TestWithParam<std::tuple<const char*, uint32_t, uint32_t>> {};

TEST_P(PresetConfig, EveryFieldIsThePublishedModels) {
  const auto [name, layers, experts] = GetParam();
  const GptOssConfig c = synth_config(synth_preset(name));
  EXPECT_EQ(c.num_layers, layers);
  EXPECT_EQ(c.num_experts, experts);
  EXPECT_EQ(c.hidden_size, 2880u);
  EXPECT_EQ(c.intermediate_size, 2880u);
  EXPECT_EQ(c.experts_per_token, 4u);
  EXPECT_EQ(c.num_heads, 64u);
  EXPECT_EQ(c.num_kv_heads, 8u);
  EXPECT_EQ(c.head_dim, 64u);
  EXPECT_EQ(c.vocab_size, 201088u);
  EXPECT_EQ(c.sliding_window, 128u);
  ASSERT_EQ(c.sliding_layers.size(), layers);
  for (uint32_t l = 0; l < layers; ++l) EXPECT_EQ(c.is_sliding(l), l % 2 == 0) << l;
  EXPECT_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_EQ(c.rope_theta, 150000.0);
  EXPECT_EQ(c.rope_scaling_factor, 32.0);
  EXPECT_EQ(c.rope_original_context, 4096u);
  EXPECT_EQ(c.yarn_beta_fast, 32.0);
  EXPECT_EQ(c.yarn_beta_slow, 1.0);
  EXPECT_FALSE(c.yarn_truncate);
  EXPECT_EQ(c.max_position_embeddings, 131072u);
  EXPECT_EQ(c.swiglu_limit, 7.0);
  EXPECT_EQ(c.bos_token_id, 199998u);  // generation_config.json's
  EXPECT_EQ(c.eos_token_id, 200002u);
  EXPECT_EQ(c.pad_token_id, 199999u);
  // The whole struct equals what the published config.json reads as (bos lives in
  // generation_config.json, which the reader takes from beside it).
  GptOssConfig published = config_from_hf_json(published_config(layers, experts), "config.json");
  published.bos_token_id = 199998;
  EXPECT_EQ(c, published);
}

INSTANTIATE_TEST_SUITE_P(Presets, PresetConfig,
                         ::testing::Values(std::make_tuple("20b", 24u, 32u), std::make_tuple("120b", 36u, 128u)),
                         [](const auto& test_param) { return "gpt_oss_" + std::string(std::get<0>(test_param.param)); });

TEST(Config, UnknownPresetIsRefused) { EXPECT_THROW(synth_preset("7b"), std::invalid_argument); }

TEST(Config, NonDefaultLayerTypesAreReadAndKept) {
  json j = hub_config();
  j["num_hidden_layers"] = 4;
  j["layer_types"] = {"full_attention", "sliding_attention", "sliding_attention", "full_attention"};
  const auto c = config_from_hf_json(j, "config.json");
  EXPECT_EQ(c.sliding_layers, (std::vector<bool>{false, true, true, false}));
  EXPECT_FALSE(c.is_sliding(0));
  EXPECT_TRUE(c.is_sliding(2));
  // The HF config says it back exactly ...
  const auto back = config_to_hf_json(c);
  EXPECT_EQ(back["layer_types"].dump(), j["layer_types"].dump());  // ordered_json vs json: compare the text (clang: == is ambiguous)
  EXPECT_EQ(config_from_hf_json(back, "back"), c);
  // ... the OpenAI config cannot (it has no such key) and refuses rather than lose it.
  try {
    config_to_original_json(c);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("layer 0 differs"), std::string::npos) << e.what();
  }
}

TEST(Config, BadLayerTypesAreNamed) {
  json j = hub_config();
  j["layer_types"] = json::array();
  for (int i = 0; i < 24; ++i) j["layer_types"].push_back(i == 5 ? "local_attention" : "full_attention");
  try {
    config_from_hf_json(j, "config.json");
    FAIL() << "no error";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.field(), "layer_types");
    EXPECT_NE(e.message().find("unknown layer type \"local_attention\""), std::string::npos) << e.what();
  }
  j["layer_types"] = {"full_attention", "sliding_attention"};  // 2 entries for 24 layers
  try {
    config_from_hf_json(j, "config.json");
    FAIL() << "no error";
  } catch (const FormatError& e) {
    EXPECT_NE(e.message().find("layer_types must have one entry per layer"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gptoss
