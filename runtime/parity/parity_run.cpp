#include "runtime/parity/parity_run.h"

#include <algorithm>
#include <stdexcept>

#include "convert/model_io.h"

namespace gptoss::parity {

Trace trace_model(runtime::EngineKind kind, const CanonicalModel& model, std::span<const uint32_t> tokens,
                  std::string label) {
  runtime::EngineOptions options;
  options.max_context = std::max<size_t>(tokens.size(), 1);
  const auto engine = runtime::make_engine(kind, model, options);
  return trace_engine(*engine, tokens, std::move(label));
}

ParityResult run_parity(const ParityRequest& request) {
  if (request.decode_steps > 0 && request.reference)
    throw std::invalid_argument("decode steps continue the first run's greedy choices, and golden activations have no run "
                                "to continue");
  ParityResult result;
  result.prompt_tokens = request.prompt.size();
  std::vector<Trace> traces;
  for (const auto& path : request.models) {
    const auto model = load_model(path);
    const std::string label = model_label(path);
    for (const auto kind : request.engines) {
      runtime::EngineOptions options = request.options;
      options.max_context = std::max<size_t>(request.prompt.size() + request.decode_steps, 1);
      if (kind != runtime::EngineKind::Vulkan) {
        options.device_index.reset();
        options.vulkan = {};
        options.prefill_chunk = runtime::EngineOptions{}.prefill_chunk;
      }
      const auto engine = runtime::make_engine(kind, model, options);
      const std::string run_label = runtime::engine_label(kind, options.kv_cache) + ": " + label;
      traces.push_back(trace_engine(*engine, request.prompt, run_label));
      if (request.decode_steps > 0)
        result.steps.push_back(trace_decode_steps(*engine, traces.back(), request.decode_steps, result.step_tokens, run_label));
      result.diagnostics += engine->diagnostics();
    }
  }
  if (request.reference) {
    result.reference = *request.reference;
  } else if (!traces.empty()) {
    result.reference = std::move(traces.front());
    traces.erase(traces.begin());
  }
  result.runs = std::move(traces);
  return result;
}

std::string parity_report(const ParityResult& result) {
  std::string out = std::to_string(result.prompt_tokens) + " prompt tokens\n" + parity_table(result.reference, result.runs);
  if (result.steps.empty()) return out;
  const Trace& first = result.steps.front();
  const std::vector<Trace> others(result.steps.begin() + 1, result.steps.end());
  return out + "\n" + std::to_string(first.stages.size()) + " decode steps after the prompt, every run fed " + first.label +
         "'s greedy tokens\n" + decode_table(first, result.step_tokens, others);
}

}  // namespace gptoss::parity
