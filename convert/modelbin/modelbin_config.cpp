#include "convert/modelbin/modelbin_config.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <functional>
#include <numbers>
#include <optional>
#include <stdexcept>
#include <utility>

#include "formats/core/error.h"

namespace gptoss {
namespace {

struct YarnHeaderValues {
  float offset, scale;
};

// OpenAI's formulas, evaluated in the same order as create-local-model.py / gpt_oss/torch.
double yarn_correction(double head_dim, double original_context, double beta, double theta) {
  return head_dim / 2 * std::log(original_context / (beta * 2 * std::numbers::pi)) / std::log(theta);
}

YarnHeaderValues yarn_header_values(double head_dim, double original_context, double beta_fast, double beta_slow,
                                    double theta, bool truncate) {
  double low = yarn_correction(head_dim, original_context, beta_fast, theta);
  double high = yarn_correction(head_dim, original_context, beta_slow, theta);
  if (truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  return {static_cast<float>(-low / (high - low)), static_cast<float>(1 / (high - low))};
}

float yarn_multiplier(double factor) { return static_cast<float>(0.1 * std::log(factor) + 1); }

bool same_bits(float a, float b) { return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b); }

// The shortest decimal that reads back as this f32, as a double (1e-05 rather than 9.99999974e-06).
double shortest_decimal(float v) {
  char text[64];
  auto [end, ec] = std::to_chars(text, text + sizeof text, v);
  double out = v;
  if (ec == std::errc()) std::from_chars(text, end, out);
  return out;
}

// The value with the fewest decimals (0..9) near `raw` that `forward` maps to `stored` exactly.
std::optional<double> snap(double raw, const std::function<bool(double)>& reproduces) {
  for (int decimals = 0; decimals <= 9; ++decimals) {
    const double p = std::pow(10.0, decimals);
    const double candidate = std::round(raw * p) / p;
    if (reproduces(candidate)) return candidate;
  }
  return std::nullopt;
}

// The YaRN bounds the header stores: low = -offset/scale, high = low + 1/scale.
std::pair<double, double> yarn_bounds(const modelbin::ModelHeader& h) {
  const double low = -static_cast<double>(h.yarn_offset) / h.yarn_scale;
  return {low, low + 1.0 / h.yarn_scale};
}

// Each beta through the inverse of the correction formula:
// low = D/2 ln(ctx / (2 pi beta)) / ln(theta)  =>  beta = ctx / (2 pi exp(low ln(theta) / (D/2))).
std::pair<double, double> raw_yarn_betas(const modelbin::ModelHeader& h, const GptOssConfig& c) {
  const auto [low, high] = yarn_bounds(h);
  auto beta_for = [&](double bound) {
    return c.rope_original_context / (2 * std::numbers::pi * std::exp(bound * std::log(c.rope_theta) / (c.head_dim / 2.0)));
  };
  return {beta_for(low), beta_for(high)};
}

// The betas with the fewest decimals (0..max_decimals) that reproduce the stored offset and scale
// bits. With 9 decimals almost any pair is reproduced (the reader wants a value to work with);
// kConsistentBetaDecimals is the claim a real config makes (gpt-oss: 32 and 1).
constexpr int kReaderBetaDecimals = 9;
constexpr int kConsistentBetaDecimals = 3;
std::optional<std::pair<double, double>> simple_yarn_betas(const modelbin::ModelHeader& h, const GptOssConfig& c,
                                                           int max_decimals) {
  const auto [raw_fast, raw_slow] = raw_yarn_betas(h, c);
  for (int decimals = 0; decimals <= max_decimals; ++decimals) {
    const double p = std::pow(10.0, decimals);
    const double fast = std::round(raw_fast * p) / p, slow = std::round(raw_slow * p) / p;
    const auto y = yarn_header_values(c.head_dim, c.rope_original_context, fast, slow, c.rope_theta, false);
    if (same_bits(y.offset, h.yarn_offset) && same_bits(y.scale, h.yarn_scale)) return std::pair{fast, slow};
  }
  return std::nullopt;
}

// A truncating config (transformers' default) stores integer bounds: floor(low), ceil(high).
bool integer_yarn_bounds(const modelbin::ModelHeader& h) {
  const auto [low, high] = yarn_bounds(h);
  const double l = std::round(low), u = std::round(high);
  return u > l && same_bits(static_cast<float>(-l / (u - l)), h.yarn_offset) &&
         same_bits(static_cast<float>(1 / (u - l)), h.yarn_scale);
}

// Shortest round-trip text (f32 header values print as stored: -0.8697008, not -0.869700789...).
template <typename Float>
std::string decimal(Float v) {
  char text[64];
  auto [end, ec] = std::to_chars(text, text + sizeof text, v);
  return ec == std::errc() ? std::string(text, end) : std::to_string(v);
}

}  // namespace

modelbin::ModelHeader modelbin_header_from_config(const GptOssConfig& c, std::vector<std::string>& notes) {
  if (c.head_dim != 64)
    throw std::invalid_argument("model.bin cannot hold head_dim " + std::to_string(c.head_dim) +
                                ": its writer folds the softmax scale 1/sqrt(64) into Q (x0.5) and K (x0.25) and the "
                                "Metal kernels assume head_dim 64");
  if (c.experts_per_token != 4)
    throw std::invalid_argument("model.bin cannot hold experts_per_token " + std::to_string(c.experts_per_token) +
                                ": OpenAI's writer and the Metal kernels fix 4 active experts");
  for (uint32_t l = 0; l < c.num_layers; ++l)
    if (c.is_sliding(l) != (l % 2 == 0))
      throw std::invalid_argument("model.bin cannot hold this attention pattern: the Metal runtime slides exactly the "
                                  "even layers, layer " + std::to_string(l) + " is " +
                                  (c.is_sliding(l) ? "sliding" : "full"));
  modelbin::ModelHeader h;
  const double context = static_cast<double>(c.rope_original_context) * c.rope_scaling_factor;
  if (context >= 4294967296.0) throw std::invalid_argument("model.bin: context length does not fit in 32 bits");
  h.context_length = static_cast<uint32_t>(context);  // Python int(): truncation
  h.num_blocks = c.num_layers;
  h.num_experts = c.num_experts;
  h.num_active_experts = 4;
  h.embedding_dim = c.hidden_size;
  h.mlp_dim = c.intermediate_size;
  h.swiglu_limit = static_cast<float>(c.swiglu_limit);
  h.head_dim = c.head_dim;
  h.num_heads = c.num_heads;
  h.num_kv_heads = c.num_kv_heads;
  h.attention_window = c.sliding_window;
  h.rope_theta = static_cast<float>(c.rope_theta);
  h.interpolation_scale = static_cast<float>(1.0 / c.rope_scaling_factor);
  const auto yarn = yarn_header_values(c.head_dim, c.rope_original_context, c.yarn_beta_fast, c.yarn_beta_slow,
                                       c.rope_theta, c.yarn_truncate);
  h.yarn_offset = yarn.offset;
  h.yarn_scale = yarn.scale;
  h.yarn_multiplier = yarn_multiplier(c.rope_scaling_factor);
  h.rmsnorm_epsilon = static_cast<float>(c.rms_norm_eps);
  if (c.yarn_truncate)
    notes.push_back("config asks for truncated YaRN bounds (floor/ceil); model.bin stores them as such, but reading "
                    "it back recovers untruncated betas only approximately");
  return h;
}

GptOssConfig config_from_modelbin_header(const modelbin::ModelHeader& h, uint64_t vocabulary_size,
                                         const std::string& file, std::vector<std::string>& notes) {
  GptOssConfig c;
  c.num_layers = h.num_blocks;
  c.num_experts = h.num_experts;
  c.experts_per_token = h.num_active_experts;
  c.hidden_size = h.embedding_dim;
  c.intermediate_size = h.mlp_dim;
  c.head_dim = h.head_dim;
  c.num_heads = h.num_heads;
  c.num_kv_heads = h.num_kv_heads;
  c.sliding_window = h.attention_window;
  if (c.num_layers > kMaxConfigLayers)
    throw_format_error(file, "model_header.num_blocks", modelbin::kModelHeaderOffset + 4,
                       std::to_string(c.num_layers) + " blocks is more than the limit of " + std::to_string(kMaxConfigLayers));
  c.sliding_layers.resize(c.num_layers);
  for (uint32_t l = 0; l < c.num_layers; ++l) c.sliding_layers[l] = l % 2 == 0;  // fixed by the runtime
  if (vocabulary_size > UINT32_MAX)
    throw_format_error(file, "tokenizer_header", modelbin::kTokenizerHeaderOffset, "vocabulary does not fit in 32 bits");
  c.vocab_size = static_cast<uint32_t>(vocabulary_size);
  c.swiglu_limit = shortest_decimal(h.swiglu_limit);
  c.rms_norm_eps = shortest_decimal(h.rmsnorm_epsilon);
  c.rope_theta = shortest_decimal(h.rope_theta);
  c.yarn_truncate = false;

  auto bad = [&](const char* field, uint64_t offset, const std::string& message) {
    throw_format_error(file, std::string("model_header.") + field, modelbin::kModelHeaderOffset + offset, message);
  };
  if (!(h.interpolation_scale > 0 && h.interpolation_scale <= 1))
    bad("interpolation_scale", 48, "must be in (0, 1] (1 / YaRN factor), found " + std::to_string(h.interpolation_scale));
  if (!(h.rope_theta > 1)) bad("rope_theta", 44, "must be > 1, found " + std::to_string(h.rope_theta));
  if (!(h.yarn_scale > 0) || !std::isfinite(h.yarn_offset))
    bad("yarn_scale", 56, "must be > 0 with a finite yarn_offset (1/(high-low), -low/(high-low))");

  // factor = 1 / interpolation_scale, snapped to the simplest value that stores the same f32.
  const double raw_factor = 1.0 / static_cast<double>(h.interpolation_scale);
  c.rope_scaling_factor = snap(raw_factor, [&](double f) {
                            return same_bits(static_cast<float>(1.0 / f), h.interpolation_scale);
                          }).value_or(raw_factor);
  // original context = context_length / factor, an integer that int(original * factor) maps back.
  const double raw_original = std::round(h.context_length / c.rope_scaling_factor);
  c.rope_original_context = static_cast<uint32_t>(std::max(1.0, raw_original));
  c.max_position_embeddings = h.context_length;
  // A tiny interpolation_scale makes the product overflow uint32 (undefined as a cast): compare in double.
  const double product = static_cast<double>(c.rope_original_context) * c.rope_scaling_factor;
  if (!(product < 4294967296.0) || static_cast<uint32_t>(product) != h.context_length)
    notes.push_back("model.bin context_length " + std::to_string(h.context_length) +
                    " is not an integer original context times the YaRN factor " + std::to_string(c.rope_scaling_factor) +
                    "; using original context " + std::to_string(c.rope_original_context));

  const auto [raw_fast, raw_slow] = raw_yarn_betas(h, c);
  if (const auto betas = simple_yarn_betas(h, c, kReaderBetaDecimals)) {
    c.yarn_beta_fast = betas->first;
    c.yarn_beta_slow = betas->second;
  } else {
    c.yarn_beta_fast = raw_fast;
    c.yarn_beta_slow = raw_slow;
    notes.push_back("model.bin yarn_offset/yarn_scale (" + std::to_string(h.yarn_offset) + ", " +
                    std::to_string(h.yarn_scale) + ") are not reproduced exactly by any simple beta_fast/beta_slow; "
                    "using the inverse of the YaRN formula: beta_fast " + std::to_string(raw_fast) + ", beta_slow " +
                    std::to_string(raw_slow));
  }
  if (!same_bits(yarn_multiplier(c.rope_scaling_factor), h.yarn_multiplier))
    notes.push_back("model.bin yarn_multiplier " + std::to_string(h.yarn_multiplier) + " differs from 0.1 ln(factor) + 1 = " +
                    std::to_string(yarn_multiplier(c.rope_scaling_factor)) +
                    "; the canonical config derives it from the factor, so the stored value is not kept");
  c.validate(file);
  return c;
}

std::vector<ModelBinHeaderInconsistency> modelbin_header_inconsistencies(const modelbin::ModelHeader& h,
                                                                         const GptOssConfig& c) {
  std::vector<ModelBinHeaderInconsistency> out;
  auto field = [&](const char* name, uint64_t offset, std::string found, std::string expected) {
    out.push_back({std::string("model_header.") + name, modelbin::kModelHeaderOffset + offset, std::move(found),
                   std::move(expected)});
  };
  const double product = static_cast<double>(c.rope_original_context) * c.rope_scaling_factor;
  if (!(product < 4294967296.0) || static_cast<uint32_t>(product) != h.context_length)
    field("context_length", 0, std::to_string(h.context_length),
          "int(original context x factor) for an integer original context, e.g. " +
              std::to_string(c.rope_original_context) + " x " + decimal(c.rope_scaling_factor) + " = " +
              (product < 4294967296.0 ? std::to_string(static_cast<uint64_t>(product)) : decimal(product)));
  if (!simple_yarn_betas(h, c, kConsistentBetaDecimals) && !integer_yarn_bounds(h)) {
    const auto [raw_fast, raw_slow] = raw_yarn_betas(h, c);
    const double fast = std::round(raw_fast * 1000) / 1000, slow = std::round(raw_slow * 1000) / 1000;
    const auto y = yarn_header_values(c.head_dim, c.rope_original_context, fast, slow, c.rope_theta, false);
    field("yarn_offset, yarn_scale", 52, "yarn_offset " + decimal(h.yarn_offset) + ", yarn_scale " + decimal(h.yarn_scale) +
          " (beta_fast " + decimal(raw_fast) + ", beta_slow " + decimal(raw_slow) + ")",
          "a pair some beta_fast/beta_slow with at most 3 decimals give exactly; betas " + decimal(fast) + "/" +
              decimal(slow) + " give yarn_offset " + decimal(y.offset) + ", yarn_scale " + decimal(y.scale));
  }
  const float multiplier = yarn_multiplier(c.rope_scaling_factor);
  if (!same_bits(multiplier, h.yarn_multiplier))
    field("yarn_multiplier", 60, decimal(h.yarn_multiplier),
          "0.1 ln(factor) + 1 = " + decimal(multiplier) + " for factor " + decimal(c.rope_scaling_factor));
  return out;
}

}  // namespace gptoss
