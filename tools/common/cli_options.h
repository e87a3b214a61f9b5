#pragma once
// What the tools that load a model and run an engine (gptoss-run, gptoss-eval, gptoss-bench) share
// on the command line: refusing options the chosen mode cannot honour, reading --text FILE.
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

// --text FILE's bytes as they are (gptoss-eval's text, gptoss-run's chunk of it); FormatError naming
// the file where it cannot be read.
std::string read_text_file(const std::string& path);

}  // namespace gptoss
