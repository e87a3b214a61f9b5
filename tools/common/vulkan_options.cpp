#include "tools/common/vulkan_options.h"

#include <array>
#include <charconv>
#include <stdexcept>

namespace gptoss {
namespace {

using runtime::VulkanTuning;

// The kernel shapes, each once: key, field, what it sets.
struct ShapeKey {
  const char* key;
  uint32_t VulkanTuning::*field;
  const char* help;
};
constexpr std::array kShapeKeys = {
    ShapeKey{"attention_splits", &VulkanTuning::attention_splits, "decode attention: the most key ranges per KV head"},
    ShapeKey{"attention_heads", &VulkanTuning::attention_heads, "decode attention: the most query heads per workgroup"},
    ShapeKey{"attention_range", &VulkanTuning::attention_range, "decode attention: the fewest keys per range"},
    ShapeKey{"attention_key_lanes", &VulkanTuning::attention_key_lanes, "decode attention: lanes per key (1 or 2)"},
    ShapeKey{"matvec_rows", &VulkanTuning::matvec_rows, "decode matvec: rows per subgroup (with matvec_loads)"},
    ShapeKey{"matvec_loads", &VulkanTuning::matvec_loads, "decode matvec: loads per lane and row in flight"},
    ShapeKey{"mlp1_outputs", &VulkanTuning::mlp1_outputs, "decode mlp1: outputs per subgroup (all four mlp keys together)"},
    ShapeKey{"mlp1_batch", &VulkanTuning::mlp1_batch, "decode mlp1: blocks per lane in flight"},
    ShapeKey{"mlp2_outputs", &VulkanTuning::mlp2_outputs, "decode mlp2: outputs per subgroup"},
    ShapeKey{"mlp2_batch", &VulkanTuning::mlp2_batch, "decode mlp2: blocks per lane in flight"},
    ShapeKey{"dense_tile", &VulkanTuning::dense_tile, "prefill dense GEMM of F16/BF16 weights: weight rows per cooperative workgroup (64 or 128)"},
    ShapeKey{"dense_promote", &VulkanTuning::dense_promote, "prefill dense cooperative GEMMs: the most depth between promotions of the partial sums (16, 32 or 64; default: 64, a Q8_0 block's 32 for its quants)"},
    ShapeKey{"expert_tile", &VulkanTuning::expert_tile, "prefill expert GEMMs: weight rows per cooperative workgroup through a shared W tile (128 or 192 over 64 rows of an expert, 256 over 32; default: W decoded into the matrices where the device's layout is known, else by the rows per expert)"},
};

// The switches, each once: key, its values in the enum's order, and the field's access.
template <class Enum>
struct SwitchKey {
  const char* key;
  std::array<const char*, 4> values;  // null past the last
  Enum VulkanTuning::*field;
};
constexpr SwitchKey<VulkanTuning::IntegerDot> kIntDot{"int_dot", {"auto", "on", "off"}, &VulkanTuning::integer_dot};
constexpr SwitchKey<VulkanTuning::Profile> kProfile{"profile", {"off", "steps", "submits"}, &VulkanTuning::profile};
constexpr SwitchKey<VulkanTuning::GemmPrecision> kGemmPrecision{
    "gemm_precision", {"fast", "split", "promoted", "precise"}, &VulkanTuning::gemm_precision};
constexpr SwitchKey<VulkanTuning::AttentionPrecision> kAttentionPrecision{
    "attention_precision", {"fast", "precise"}, &VulkanTuning::attention_precision};
constexpr SwitchKey<VulkanTuning::CoopForm> kCoopForm{"coop_form", {"auto", "nv", "khr"}, &VulkanTuning::coop_form};

template <class Enum>
bool set_switch(const SwitchKey<Enum>& s, std::string_view key, std::string_view value, VulkanTuning& t) {
  if (key != s.key) return false;
  for (size_t i = 0; i < s.values.size() && s.values[i]; ++i)
    if (value == s.values[i]) {
      t.*s.field = static_cast<Enum>(i);
      return true;
    }
  std::string expected = s.values[0];
  for (size_t i = 1; i < s.values.size() && s.values[i]; ++i)
    expected += (i + 1 < s.values.size() && s.values[i + 1] ? ", " : " or ") + std::string(s.values[i]);
  throw std::invalid_argument("--tuning " + std::string(key) + "=" + std::string(value) + ": expected " + expected);
}

bool on_off(std::string_view key, std::string_view value) {
  if (value == "on") return true;
  if (value == "off") return false;
  throw std::invalid_argument("--tuning " + std::string(key) + "=" + std::string(value) + ": expected on or off");
}

template <class Enum>
std::string switch_text(const SwitchKey<Enum>& s, const VulkanTuning& t) {
  const auto value = static_cast<size_t>(t.*s.field);
  return std::string(s.key) + "=" + s.values[value];
}

}  // namespace

void apply_tuning(std::string_view text, VulkanTuning& t) {
  for (size_t at = 0; at < text.size();) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string_view item = text.substr(at, comma - at);
    at = comma + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      throw std::invalid_argument("--tuning " + std::string(item) + ": expected KEY=VALUE (keys: --help)");
    const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    if (set_switch(kIntDot, key, value, t) || set_switch(kProfile, key, value, t) ||
        set_switch(kGemmPrecision, key, value, t) || set_switch(kAttentionPrecision, key, value, t) ||
        set_switch(kCoopForm, key, value, t))
      continue;
    if (key == "coopmat") {
      t.cooperative_matrix = on_off(key, value);
      continue;
    }
    if (key == "attention_coop") {
      t.attention_coop = on_off(key, value);
      continue;
    }
    if (key == "scaled_q8") {
      t.scaled_q8_0 = on_off(key, value);
      continue;
    }
    if (key == "f64") {
      t.float64_sums = on_off(key, value);
      continue;
    }
    if (key == "pipeline_stats") {
      t.pipeline_statistics = on_off(key, value);
      continue;
    }
    bool known = false;
    for (const auto& s : kShapeKeys) {
      if (key != s.key) continue;
      uint32_t n = 0;
      const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (error != std::errc{} || end != value.data() + value.size() || value.empty())
        throw std::invalid_argument("--tuning " + std::string(item) + ": expected a number (0: the engine's choice)");
      t.*s.field = n;
      known = true;
    }
    if (!known) throw std::invalid_argument("--tuning: unknown key " + std::string(key) + " (keys: --help)");
  }
}

std::string tuning_text(const VulkanTuning& t) {
  const VulkanTuning defaults;
  std::string out;
  auto add = [&](const std::string& item) { out += (out.empty() ? "" : ",") + item; };
  if (t.cooperative_matrix != defaults.cooperative_matrix) add(t.cooperative_matrix ? "coopmat=on" : "coopmat=off");
  if (t.attention_coop != defaults.attention_coop) add(t.attention_coop ? "attention_coop=on" : "attention_coop=off");
  if (t.integer_dot != defaults.integer_dot) add(switch_text(kIntDot, t));
  if (t.profile != defaults.profile) add(switch_text(kProfile, t));
  if (t.gemm_precision != defaults.gemm_precision) add(switch_text(kGemmPrecision, t));
  if (t.attention_precision != defaults.attention_precision) add(switch_text(kAttentionPrecision, t));
  if (t.pipeline_statistics != defaults.pipeline_statistics) add("pipeline_stats=on");
  if (t.float64_sums != defaults.float64_sums) add(t.float64_sums ? "f64=on" : "f64=off");
  if (t.coop_form != defaults.coop_form) add(switch_text(kCoopForm, t));
  if (t.scaled_q8_0 != defaults.scaled_q8_0) add(t.scaled_q8_0 ? "scaled_q8=on" : "scaled_q8=off");
  for (const auto& s : kShapeKeys)
    if (t.*s.field != defaults.*s.field) add(std::string(s.key) + "=" + std::to_string(t.*s.field));
  return out;
}

std::string tuning_keys_help() {
  std::string out =
      "KEY=VALUE,...: coopmat=on|off, attention_coop=on|off (prefill attention on cooperative matrices), int_dot=auto|on|off, gemm_precision=precise|promoted|split|fast, attention_precision=precise|fast (prefill attention on cooperative matrices), profile=off|steps|submits, "
      "pipeline_stats=on|off, f64=on|off (sums in double where the device has them), coop_form=auto|nv|khr (the "
      "cooperative matrices in the KHR extension's form where the device has it, or as asked), scaled_q8=on|off (the "
      "dense GEMMs' Q8_0 weights as quants with d on the sums, or as two f16 parts)";
  for (const auto& s : kShapeKeys) out += "; " + std::string(s.key) + "=N (" + s.help + ")";
  return out + "; 0 is the engine's choice";
}

namespace {
// apply_tuning inside a CLI11 callback: its errors become CLI11's, reported as a usage error.
void apply_option(std::string_view text, VulkanTuning& tuning) {
  try {
    apply_tuning(text, tuning);
  } catch (const std::invalid_argument& e) {
    throw CLI::ValidationError(e.what());
  }
}
}  // namespace

void add_vulkan_options(CLI::App& app, VulkanTuning& tuning) {
  const std::string group = "Vulkan engine";
  app.add_option_function<std::string>(
         "--profile",
         [&tuning](const std::string& v) { apply_option("profile=" + v, tuning); },
         "GPU time per kernel, printed at the end: steps (every kernel; the default) or submits (each command "
         "buffer as a whole)")
      ->expected(0, 1)
      ->default_str("steps")
      ->group(group);
  app.add_flag_callback(
         "--pipeline-stats", [&tuning] { tuning.pipeline_statistics = true; },
         "the driver's statistics of every pipeline (registers, spills), printed at the end")
      ->group(group);
  app.add_flag_callback(
         "--no-coopmat", [&tuning] { tuning.cooperative_matrix = false; },
         "the portable f32 GEMMs instead of cooperative matrices")
      ->group(group);
  app.add_flag_callback(
         "--fast",
         [&tuning] {
           tuning.gemm_precision = VulkanTuning::GemmPrecision::Fast;
           tuning.attention_precision = VulkanTuning::AttentionPrecision::Fast;
         },
         "the prefill's GEMMs and attention on f16 operands (gemm_precision=fast, attention_precision=fast): faster "
         "prefill at f16's precision, whose own KL against cpu-f64 can exceed what a converted file's check looks for")
      ->group(group);
  app.add_option_function<std::string>(
         "--int-dot", [&tuning](const std::string& v) { apply_option("int_dot=" + v, tuning); },
         "decode's Q8_0 products through integer dot products: auto (where accelerated), on, off")
      ->group(group);
  app.add_option_function<std::string>(
         "--tuning", [&tuning](const std::string& v) { apply_option(v, tuning); }, tuning_keys_help())
      ->group(group);
}

void add_prefill_chunk_option(CLI::App& app, uint32_t& chunk) {
  app.add_option("--prefill-chunk", chunk,
                 "tokens per prefill submit (llama.cpp's micro-batch, -ub): longer is faster for long prompts and takes "
                 "more memory; a row's logits are the same at any")
      ->check(CLI::Range(1u, 65536u))
      ->capture_default_str()
      ->group("Vulkan engine");
}

void refuse_vulkan_options_unless_vulkan(const CLI::App& app, bool vulkan_runs) {
  if (vulkan_runs) return;
  for (const char* name : {"--profile", "--pipeline-stats", "--no-coopmat", "--fast", "--int-dot", "--tuning", "--prefill-chunk"})
    if (app.count(name) > 0)
      throw std::invalid_argument(std::string(name) + " sets how the Vulkan engine computes, and no engine of this run is the Vulkan one");
}

}  // namespace gptoss
