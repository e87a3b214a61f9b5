#pragma once
// The Vulkan engine's switches on the command line of every tool that runs an engine (gptoss-run,
// gptoss-eval, gptoss-bench, the kernel bench): --profile, --pipeline-stats, --no-coopmat,
// --int-dot, and --tuning KEY=VALUE,... for the kernel shapes (runtime::VulkanTuning, one table of
// keys below). Parsed here, in tools/, and nowhere else.
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "runtime/engine.h"

namespace gptoss {

// Adds the options, writing into `tuning` (which must outlive the parse); --tuning's keys are
// applied after the other options, so "--no-coopmat --tuning attention_splits=8" sets both.
void add_vulkan_options(CLI::App& app, runtime::VulkanTuning& tuning);

// Adds --prefill-chunk (EngineOptions::prefill_chunk, the Vulkan engine's tokens per prefill
// submit), writing into `chunk` (which must outlive the parse; it starts at the default).
void add_prefill_chunk_option(CLI::App& app, uint32_t& chunk);

// Throws std::invalid_argument naming the first Vulkan option given when no engine of the run is
// the Vulkan one.
void refuse_vulkan_options_unless_vulkan(const CLI::App& app, bool vulkan_runs);

// Applies "KEY=VALUE,KEY=VALUE" to `tuning`: the shape keys take a number (0: the engine's
// choice), coopmat on|off, int_dot auto|on|off, profile off|steps|submits, pipeline_stats
// on|off. Throws std::invalid_argument naming the key or value it cannot take.
void apply_tuning(std::string_view text, runtime::VulkanTuning& tuning);

// The fields that differ from the defaults, as apply_tuning reads them ("coopmat=off,
// attention_splits=8"); empty for the defaults. Tables and JSON name a variant by it.
std::string tuning_text(const runtime::VulkanTuning& tuning);

// Every key apply_tuning takes, with what it sets (the options' help).
std::string tuning_keys_help();

}  // namespace gptoss
