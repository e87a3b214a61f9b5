// config.json: both readers (Hugging Face and OpenAI original layout) on any JSON the input
// parses as; a config they accept must give YaRN frequencies that are numbers and survive a write/read round trip.
#include <cmath>

#include <nlohmann/json.hpp>

#include "convert/gptoss_config.h"
#include "formats/core/error.h"
#include "fuzz/harness_support.h"

namespace {
using namespace gptoss;

void check_accepted(const GptOssConfig& config) {
  const YarnParams yarn = compute_yarn(config);
  fuzz::require(yarn.inv_freq.size() == config.head_dim / 2, "inv_freq has the wrong length");
  // No check on low <= high: like transformers, an extreme rope_theta (just above 1) clamps low
  // above high, and the ramp still stays in [0, 1].
  for (float f : yarn.inv_freq) fuzz::require(!std::isnan(f), "inv_freq has a NaN");
  const GptOssConfig again = config_from_hf_json(nlohmann::json::parse(config_to_hf_json(config).dump()), "round-trip");
  fuzz::require(again == config, "config_to_hf_json / config_from_hf_json round trip changed the config");
}
}  // namespace

extern "C" int gptoss_fuzz_config_json(const uint8_t* data, size_t size) {
  const nlohmann::json json = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return 0;
  try {
    check_accepted(config_from_hf_json(json, "fuzz/config.json"));
  } catch (const FormatError& e) {
    fuzz::note_rejected(e);
  }
  try {
    check_accepted(config_from_original_json(json, "fuzz/original/config.json"));
  } catch (const FormatError& e) {
    fuzz::note_rejected(e);
  }
  return 0;
}
