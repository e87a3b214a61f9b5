#include "tools/gptoss-run/run_report.h"

#include "formats/core/string_printf.h"

namespace gptoss::run {

nlohmann::ordered_json devices_json(const std::vector<runtime::DeviceDescription>& devices) {
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  for (const auto& d : devices)
    all.push_back({{"index", d.index}, {"name", d.name}, {"type", d.type}, {"driver", d.driver},
                   {"memory_bytes", d.memory_bytes}, {"subgroup_size", d.subgroup_size},
                   {"max_storage_buffer_range", d.max_storage_buffer_range}, {"usable", d.usable},
                   {"integer_dot_product", d.integer_dot_product}, {"float64", d.float64},
                   {"cooperative_matrix", d.cooperative_matrix}});
  return all;
}

std::string devices_text(const std::vector<runtime::DeviceDescription>& devices) {
  std::string out = devices.empty() ? "no Vulkan device\n" : "";
  for (const auto& d : devices)
    append_printf(out,
                  "%u: %s (%s; %s), %.1f GiB device memory, subgroup %u, storage-buffer range %.1f GiB, integer dot "
                  "products %s, router sums in %s, cooperative matrices %s%s\n",
                  d.index, d.name.c_str(), d.type.c_str(), d.driver.c_str(),
                  static_cast<double>(d.memory_bytes) / (1u << 30), d.subgroup_size,
                  static_cast<double>(d.max_storage_buffer_range) / (1u << 30), d.integer_dot_product.c_str(),
                  d.float64 ? "f64" : "f32", d.cooperative_matrix.c_str(), d.usable ? "" : " (no compute queue: unusable)");
  return out;
}

const char* stop_reason_name(sampling::StopReason reason) {
  switch (reason) {
    case sampling::StopReason::StopToken: return "stop_token";
    case sampling::StopReason::MaxTokens: return "max_tokens";
    case sampling::StopReason::None: break;
  }
  return "none";
}

nlohmann::ordered_json generation_json(const GenerationReport& r) {
  nlohmann::ordered_json j;
  j["engine"] = r.engine;
  j["device"] = r.device;
  j["vocab_size"] = r.vocab_size;
  j["prompt_tokens"] = r.prompt;
  j["tokens"] = r.result.tokens;
  if (r.text) j["text"] = *r.text;
  if (r.harmony) {
    j["final"] = r.harmony->final;
    j["analysis"] = r.harmony->analysis;
    j["harmony_problems"] = r.harmony->problems;
  }
  j["stop_reason"] = stop_reason_name(r.result.stop);
  j["prompt_seconds"] = r.result.prompt_seconds;
  j["generation_seconds"] = r.result.generation_seconds;
  j["prompt_tokens_per_second"] = r.prompt_tokens_per_second();
  j["generation_tokens_per_second"] = r.generation_tokens_per_second();
  if (!r.dump_logits.empty()) j["dump_logits"] = r.dump_logits;
  if (!r.trace.empty()) j["trace"] = r.trace;
  return j;
}

std::string generation_summary(const GenerationReport& r) {
  std::string out;
  if (r.harmony && !r.harmony->problems.empty())
    append_printf(out, "harmony: %zu problems parsing the output (e.g. %s); --raw shows every token\n",
                  r.harmony->problems.size(), r.harmony->problems.front().c_str());
  append_printf(out, "prompt: %zu tokens, %.1f tokens/s; generation: %zu tokens, %.1f tokens/s (stop: %s)\n",
                r.prompt.size(), r.prompt_tokens_per_second(), r.result.tokens.size(), r.generation_tokens_per_second(),
                stop_reason_name(r.result.stop));
  if (!r.dump_logits.empty())
    append_printf(out, "wrote %zu x %u logits to %s\n", r.prompt.size(), r.vocab_size, r.dump_logits.c_str());
  if (!r.trace.empty()) append_printf(out, "wrote the trace of the prompt's forward pass to %s\n", r.trace.c_str());
  return out;
}

}  // namespace gptoss::run
