#pragma once
// What gptoss-run prints besides the generated text: the Vulkan devices (--list-devices) and a
// generation's outcome, as one JSON object (--json) or as the lines for stderr.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/engine.h"
#include "tools/gptoss-run/generation.h"

namespace gptoss::run {

nlohmann::ordered_json devices_json(const std::vector<runtime::DeviceDescription>& devices);
std::string devices_text(const std::vector<runtime::DeviceDescription>& devices);  // a line per device

const char* stop_reason_name(sampling::StopReason reason);  // "stop_token", "max_tokens", "none"
nlohmann::ordered_json generation_json(const GenerationReport& report);
// Harmony's problems (if any), both phases' speeds and the stop, the files written.
std::string generation_summary(const GenerationReport& report);

}  // namespace gptoss::run
