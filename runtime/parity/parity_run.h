#pragma once
// gptoss-run --parity: every model on every engine over one prompt, each as one prefill from an
// empty cache, each run's stages compared with a reference (golden activations, or the first
// run); and optionally decode steps after the prompt, one token per forward as generation runs
// them, every run fed the first run's greedy choices so all see the same context.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "runtime/engine.h"
#include "runtime/parity/activation_trace.h"

namespace gptoss::parity {

// trace_engine (activation_trace.h) on a new engine of `kind` whose KV cache holds just the
// prompt. Throws std::runtime_error when that engine cannot run here (no usable Vulkan device).
Trace trace_model(runtime::EngineKind kind, const CanonicalModel& model, std::span<const uint32_t> tokens,
                  std::string label);

struct ParityRequest {
  std::vector<std::filesystem::path> models;  // loaded one at a time, in this order (runs model-major)
  std::vector<runtime::EngineKind> engines;   // every model runs on each, in this order
  // Every run's engine options: device_index and the Vulkan tuning go to the Vulkan runs only (a CPU
  // engine refuses them); max_context is set to what the prompt and the decode steps need.
  runtime::EngineOptions options;
  std::vector<uint32_t> prompt;
  std::optional<Trace> reference;  // golden activations (trace_from_refs); none: the first run
  size_t decode_steps = 0;         // needs the first run as reference: golden activations have no run to continue
};

struct ParityResult {
  size_t prompt_tokens = 0;
  Trace reference;          // the golden trace, or the first run's prompt
  std::vector<Trace> runs;  // every run's prompt but the reference's, labelled "ENGINE: MODEL"
  // Decode steps (none when not asked): the tokens fed (the first run's greedy choices), and every
  // run's steps, the first run's first.
  std::vector<uint32_t> step_tokens;
  std::vector<Trace> steps;
  std::string diagnostics;  // every run's Engine::diagnostics (the Vulkan tuning's profile), in run order
};

// Throws std::invalid_argument for decode steps against golden activations, and what loading a
// model, making an engine or running it throws.
ParityResult run_parity(const ParityRequest& request);

// What gptoss-run --parity prints: the prompt's length and parity_table, then with decode steps
// the steps' heading and decode_table.
std::string parity_report(const ParityResult& result);

}  // namespace gptoss::parity
