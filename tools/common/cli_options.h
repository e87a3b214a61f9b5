#pragma once
// What the tools that load a model and run an engine (gptoss-run, gptoss-eval, gptoss-bench) share
// on the command line: refusing options the chosen mode cannot honour, and naming a model in
// tables and traces.
#include <initializer_list>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

namespace gptoss {

// Throws std::invalid_argument("NAME why") for the first of `names` (as spelled there) that was
// given on the command line.
void refuse_if_given(const CLI::App& app, std::initializer_list<const char*> names, const std::string& why);

// --device N with an engine that is not the Vulkan one: "--device picks a Vulkan device and the
// cpu engine runs on the CPU: add --engine vulkan".
void refuse_device_unless_vulkan(const std::optional<uint32_t>& device, const std::string& engine_name);

// "vulkan", or "vulkan (f16 KV cache)" where the cache is not the default f32: how tables and JSON
// name an engine.
std::string engine_label(const std::string& engine, const std::string& kv_cache);

// "GGUF model-q8_0.gguf": the format and file name, as tables and traces label a model.
std::string model_label(const std::string& path);

}  // namespace gptoss
